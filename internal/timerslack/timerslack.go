// Package timerslack gives pincer serve a timer slack of its own on
// Linux: how late the kernel may wake a sleeping thread so that it can
// wake several at once.
//
// Go's runtime wakes often at a steady trickle of messages: its monitor
// thread sleeps 20 µs at a time while any goroutine runs, and every
// timer of the process (a batch's commit, a connection's deadline) is a
// wake-up of its own. Linux lets each wake-up come up to 50 µs late by
// default. At 1 ms, wake-ups that fall within a millisecond of each
// other come as one: at pincer bench's steady rate (1,000 messages a
// second, every tenth an @) pincer then wakes a third less often and
// uses a tenth to a quarter less CPU, and an @ reaches the model no later (a message on a socket wakes its reader at
// once, whatever the slack; only timers may fire up to 1 ms late, which
// no timer of pincer minds).
//
// A thread's slack is its own, and a new thread takes its creator's; the
// runtime's threads are made before any of pincer's code runs. So Serve
// sets the slack of the thread it runs on and executes the same binary
// again from it, with the same arguments and environment: every thread
// of the new image descends from that one. It does so only when the
// slack is the kernel's default, so one set by the operator (systemd's
// TimerSlackNSec=, prctl before exec) is kept, and the second image
// does not start a third.
package timerslack

import "time"

// Serve is the slack pincer serve runs with.
const Serve = time.Millisecond
