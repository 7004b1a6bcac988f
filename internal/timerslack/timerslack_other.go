//go:build !linux

package timerslack

import (
	"errors"
	"time"
)

// Current is the slack of the calling thread; only Linux has one to set.
func Current() (time.Duration, error) { return 0, errors.ErrUnsupported }

// Reexec does nothing where there is no timer slack to set.
func Reexec(want time.Duration, args, env []string) error { return nil }
