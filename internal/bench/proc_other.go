//go:build !linux

package bench

import (
	"errors"
	"os/exec"
	"time"
)

// The bench reads what it measures from Linux's /proc; elsewhere it does
// not run.

func dieWithParent(*exec.Cmd) {}

func procUsage(int) (usage, error) {
	return usage{}, errors.New("bench: pincer bench measures processes through /proc and runs on Linux only")
}

func procMemory(pid int) (usage, error) { return procUsage(pid) }

func selfCPU() time.Duration { return 0 }
