package main

import (
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestAQuietServeRunsOnOneThread: a pincer serve with nothing to do fits
// its Go threads to the load (package procs) and says so on /metrics.
func TestAQuietServeRunsOnOneThread(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a pincer")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: the runtime's default is one thread already")
	}
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		t.Skip("GOMAXPROCS is set in the environment, which turns the fitting off")
	}
	p, _ := startServe(t, t.TempDir(), freePortConfig(""))
	base := strings.TrimSuffix(p.url, "/dashboard")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitMetric(t, ctx, base, "go_sched_gomaxprocs_threads 1")
}
