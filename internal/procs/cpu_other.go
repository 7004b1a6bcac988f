//go:build !unix

package procs

import "time"

// processCPU is nil where the process's CPU time is not read: Run then
// changes nothing.
var processCPU func() time.Duration
