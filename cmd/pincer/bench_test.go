package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/bench"
)

// TestBenchAccountsForEveryMessageAndReply runs pincer bench, the real
// subcommand, on a tiny burst and a tiny steady rate against the built
// binary, and checks its accounting, not its timing: every message is in
// pincer's log, every @ got exactly one reply, and the counts add up.
func TestBenchAccountsForEveryMessageAndReply(t *testing.T) {
	if testing.Short() {
		t.Skip("starts pincer three times, the baseline reader twice")
	}
	bin := binary(t)
	var out, errs strings.Builder
	code := run([]string{"bench", "--pincer", bin, "--json",
		"-n", "300", "-groups", "20", "-senders", "30",
		"-rate", "100", "-duration", "2s", "-every", "10", "-latency", "1ms", "-timeout", "30s",
	}, &out, &errs)
	if code != 0 {
		t.Fatalf("pincer bench exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errs.String())
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("the report is not JSON: %v\n%s", err, out.String())
	}
	if !rep.OK || len(rep.Problems) > 0 {
		t.Errorf("report not ok: %q", rep.Problems)
	}
	b, s := rep.Burst, rep.Steady
	if b == nil || s == nil {
		t.Fatalf("both scenarios run by default; got burst %v, steady %v", b != nil, s != nil)
	}

	// The burst: 300 messages and the @, all taken in; one reply each
	// from the baseline and from pincer.
	if b.Pincer.Events != 301 || b.Baseline.Events != 301 || b.BaselineDecoded != 301 {
		t.Errorf("burst events: pincer %d, baseline %d (decoded %d), want 301", b.Pincer.Events, b.Baseline.Events, b.BaselineDecoded)
	}
	if want := (bench.Accounting{Sent: 301, Logged: 301, Source: b.Accounted.Source}); b.Accounted != want {
		t.Errorf("burst accounting %+v, want %+v", b.Accounted, want)
	}
	one := bench.Replies{Expected: 1, Delivered: 1}
	if b.Replies != one || b.BaselineReplies != one {
		t.Errorf("burst replies: pincer %+v, baseline %+v, want %+v", b.Replies, b.BaselineReplies, one)
	}
	if b.ModelRequests != 1 || b.TurnsReplied != 1 {
		t.Errorf("burst: %d model requests, %d turns replied; want 1 and 1", b.ModelRequests, b.TurnsReplied)
	}
	if b.Pincer.EventsPerSecond <= 0 || b.Baseline.EventsPerSecond <= 0 || b.Ratio <= 0 || b.Pincer.PeakRSSBytes <= 0 || b.Pincer.GoroutinesPeak <= 0 {
		t.Errorf("burst figures missing: %+v", b)
	}

	// The steady rate: 200 messages, every 10th an @, each answered once,
	// each with both latencies measured.
	if s.Pincer.Events != 200 {
		t.Errorf("steady events %d, want 200", s.Pincer.Events)
	}
	if want := (bench.Accounting{Sent: 200, Logged: 200, Source: s.Accounted.Source}); s.Accounted != want {
		t.Errorf("steady accounting %+v, want %+v", s.Accounted, want)
	}
	if want := (bench.Replies{Expected: 20, Delivered: 20}); s.Replies != want {
		t.Errorf("steady replies %+v, want %+v", s.Replies, want)
	}
	if s.MentionToRequest.N != 20 || s.DoneToSend.N != 20 || s.ModelRequests != 20 || s.TurnsReplied != 20 {
		t.Errorf("steady: %d and %d latency samples, %d model requests, %d turns replied; want 20 of each",
			s.MentionToRequest.N, s.DoneToSend.N, s.ModelRequests, s.TurnsReplied)
	}
	l := s.MentionToRequest
	if !(0 < l.P50Ms && l.P50Ms <= l.P99Ms && l.P99Ms <= l.MaxMs) {
		t.Errorf("@ → model request percentiles out of order: %+v", l)
	}

	// Beside it, the baseline on the same stream, answering each @ once,
	// and a fresh pincer on as much chatter without an @.
	if s.Baseline.Events != 200 || s.BaselineDecoded != 200 || s.BaselineReplies != (bench.Replies{Expected: 20, Delivered: 20}) {
		t.Errorf("steady baseline: %d events (decoded %d), replies %+v", s.Baseline.Events, s.BaselineDecoded, s.BaselineReplies)
	}
	c := s.Chatter
	if c == nil {
		t.Fatal("no chatter-only run")
	}
	if c.Pincer.Events != 200 || c.Mentions != 0 || c.Replies != (bench.Replies{}) || c.ModelRequests != 0 ||
		c.Accounted != (bench.Accounting{Sent: 200, Logged: 200, Source: c.Accounted.Source}) {
		t.Errorf("steady, chatter only: %d events, %d @s, replies %+v, %d model requests, accounting %+v",
			c.Pincer.Events, c.Mentions, c.Replies, c.ModelRequests, c.Accounted)
	}
	if s.Writes != 200 || c.Writes != 200 || s.BaselineWrites != 200 || s.WriteBatchBytes != 0 || s.SendGapMs != 1000 {
		t.Errorf("steady: %d, %d and %d writes for 200 frames each, write batch %d, send gap %d",
			s.BaselineWrites, c.Writes, s.Writes, s.WriteBatchBytes, s.SendGapMs)
	}
	if s.AnsweredTurns != 20 {
		t.Errorf("steady: %d answered turns, want 20", s.AnsweredTurns)
	}
}

// TestBenchTextReport checks the table's rows on a burst alone.
func TestBenchTextReport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts pincer")
	}
	var out, errs strings.Builder
	code := run([]string{"bench", "--pincer", binary(t), "-scenario", "burst", "-n", "50", "-groups", "5", "-latency", "1ms",
		"-write-batch", "65536", "-send-gap", "0"}, &out, &errs)
	if code != 0 {
		t.Fatalf("pincer bench exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errs.String())
	}
	for _, want := range []string{
		"pincer runs as a child process", "burst: 50 messages over 5 groups", "events/s", "pincer ÷ baseline",
		"events per CPU-second", "peak RSS (MiB)", "goroutines peak / end", "1 / 1 / 0", "51 of 51 logged",
		"ok: every message and every reply accounted for",
		"no send gap, frames coalesced into writes of up to 65,536 bytes", "baseline: 51 frames written in", "s, in 1 write;",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "steady:") {
		t.Errorf("-scenario burst ran the steady rate too:\n%s", out.String())
	}
}

func TestBenchRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "-scenario", "sideways"},
		{"bench", "-n", "0"},
		{"bench", "extra"},
		{"bench", "-write-batch", "-1"},
	} {
		var out, errs strings.Builder
		if code := run(args, &out, &errs); code == 0 {
			t.Errorf("%q exited 0", args)
		}
	}
}

// TestBenchClusterKill runs pincer bench --instances 2 -kill, the real
// subcommand, on a small burst and a short steady rate: every run is two
// pincers on one nats-server and a PostgreSQL schema of its own, and the
// one holding the QQ connection is killed halfway. It checks the report's
// accounting, not its timing: the other instance took the connection
// over, every @ the cluster took in was answered exactly once and none it
// did not take in, no message is in the log twice, and each instance's
// share is reported.
func TestBenchClusterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two pincers four times")
	}
	dsn := os.Getenv("PINCER_TEST_PG_DSN")
	if dsn == "" {
		t.Skip("PINCER_TEST_PG_DSN is not set: pincer bench --instances needs a PostgreSQL server, e.g. postgres://pincer@127.0.0.1:5432/pincer_test?sslmode=disable")
	}
	if _, err := exec.LookPath("nats-server"); err != nil {
		t.Skip("nats-server is not on PATH: go install github.com/nats-io/nats-server/v2@" + bench.NATSServerVersion)
	}
	t.Setenv("PINCER_BENCH_PG_DSN", dsn)
	bin := binary(t)
	var out, errs strings.Builder
	code := run([]string{"bench", "--pincer", bin, "--json", "--instances", "2", "-kill", "-lease-ttl", "2s",
		"-n", "3000", "-groups", "50", "-senders", "100",
		"-rate", "300", "-duration", "6s", "-every", "10", "-latency", "1ms", "-timeout", "2m",
	}, &out, &errs)
	var rep bench.Report
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil || (code != 0 && code != 1) {
		t.Fatalf("pincer bench exited %d (%v)\nstdout:\n%s\nstderr:\n%s", code, err, out.String(), errs.String())
	}
	// A reply the killed holder sent just before it died, which it could
	// not confirm, is found in the chat's history by the chat's owner
	// (the simulator keeps the bot's sends) rather than sent again: any
	// problem fails the test.
	if code != 0 || !rep.OK || len(rep.Problems) > 0 {
		t.Errorf("exit %d, report ok %v, problems %q", code, rep.OK, rep.Problems)
	}
	b, s := rep.Burst, rep.Steady
	if b == nil || s == nil || s.Chatter == nil {
		t.Fatalf("both scenarios run by default; got burst %v, steady %v", b != nil, s != nil)
	}
	runs := []struct {
		name      string
		cluster   *bench.ClusterRun
		accounted bench.Accounting
		replies   bench.Replies
		turns     int
	}{
		{"burst", b.Cluster, b.Accounted, b.Replies, b.TurnsReplied},
		{"steady, chatter only", s.Chatter.Cluster, s.Chatter.Accounted, s.Chatter.Replies, s.Chatter.TurnsReplied},
		{"steady, with @s", s.Cluster, s.Accounted, s.Replies, s.TurnsReplied},
	}
	for _, r := range runs {
		c := r.cluster
		if c == nil || c.Kill == nil {
			t.Errorf("%s: no cluster or kill report: %+v", r.name, c)
			continue
		}
		k := c.Kill
		// The connection had one holder at a time, and was taken over.
		if c.Instances != 2 || c.Connections != 2 || c.MaxConnections != 1 || k.TakeoverSeconds <= 0 || k.PartitionsSeconds <= 0 {
			t.Errorf("%s: %d instances, %d connections (%d at once), takeover %v s, partitions taken over %v s",
				r.name, c.Instances, c.Connections, c.MaxConnections, k.TakeoverSeconds, k.PartitionsSeconds)
		}
		// Each instance's share: the partitions shared out at the start,
		// all of them with the survivor at the end; the turns add up.
		if len(c.Shares) != 2 {
			t.Errorf("%s: %d shares, want 2", r.name, len(c.Shares))
			continue
		}
		killed, parts, turns := 0, 0, 0
		for _, sh := range c.Shares {
			parts += sh.PartitionsStart
			turns += sh.TurnsReplied
			// A holder killed a moment into the burst may have used less
			// than the kernel's 10 ms tick of CPU since.
			if sh.PartitionsStart <= 0 || sh.CPUSeconds < 0 || (sh.CPUSeconds == 0 && !sh.Killed) || sh.PeakRSSBytes <= 0 {
				t.Errorf("%s: share %+v", r.name, sh)
			}
			if sh.Killed {
				killed++
				if sh.Instance != k.Instance {
					t.Errorf("%s: %s killed, the report says %s", r.name, sh.Instance, k.Instance)
				}
			} else if sh.PartitionsEnd != bench.DefaultPartitions {
				t.Errorf("%s: the survivor %s owns %d partitions at the end, want %d", r.name, sh.Instance, sh.PartitionsEnd, bench.DefaultPartitions)
			}
		}
		if killed != 1 || parts != bench.DefaultPartitions || turns != r.turns {
			t.Errorf("%s: %d killed, %d partitions at the start, turns %d of the shares and %d in all", r.name, killed, parts, turns, r.turns)
		}
		// Every @ taken in answered once, none other answered; but for
		// replies sent through the holder as it was killed.
		if k.RepliesLost != 0 || k.RepliesDoubled != k.DoubledAtKill || k.AnsweredNotTakenIn != 0 || k.MentionsTakenIn > k.MentionsSent {
			t.Errorf("%s: kill %+v", r.name, k)
		}
		if k.DoubledAtKill > 0 {
			t.Logf("%s: %d replies sent again after the kill", r.name, k.DoubledAtKill)
		}
		if want := (bench.Replies{Expected: k.MentionsTakenIn, Delivered: k.MentionsTakenIn, Duplicated: k.DoubledAtKill}); r.replies != want {
			t.Errorf("%s: replies %+v, want %+v", r.name, r.replies, want)
		}
		a := r.accounted
		if !a.MayLose || a.Doubled != 0 || a.Logged+a.Missing != a.Sent || a.Logged == 0 || a.NotDelivered > a.Missing {
			t.Errorf("%s: accounting %+v", r.name, a)
		}
	}
	// The burst's last frame, its @, goes out after the takeover: it is
	// taken in and answered.
	if b.Cluster != nil && b.Cluster.Kill != nil && (b.Cluster.Kill.MentionsTakenIn != 1 || b.Replies.Delivered != 1) {
		t.Errorf("burst: the final @ taken in %d, answered %d", b.Cluster.Kill.MentionsTakenIn, b.Replies.Delivered)
	}
	if s.Cluster != nil && s.Cluster.Kill != nil && (s.Cluster.Kill.MentionsSent != 180 || s.Cluster.Kill.MentionsTakenIn == 0) {
		t.Errorf("steady: %d @s sent, %d taken in; want 180 sent, some taken in", s.Cluster.Kill.MentionsSent, s.Cluster.Kill.MentionsTakenIn)
	}
}

// TestBenchClusterNeedsItsServers: --instances names what it lacks
// before anything runs.
func TestBenchClusterNeedsItsServers(t *testing.T) {
	t.Setenv("PINCER_BENCH_PG_DSN", "")
	var out, errs strings.Builder
	if code := run([]string{"bench", "--instances", "2"}, &out, &errs); code == 0 || !strings.Contains(errs.String(), "PINCER_BENCH_PG_DSN") {
		t.Errorf("without PINCER_BENCH_PG_DSN: exit %d, %q", code, errs.String())
	}
	t.Setenv("PINCER_BENCH_PG_DSN", "postgres://nobody@127.0.0.1:1/none")
	t.Setenv("PATH", t.TempDir())
	errs.Reset()
	if code := run([]string{"bench", "--instances", "2"}, &out, &errs); code == 0 ||
		!strings.Contains(errs.String(), "-nats") || !strings.Contains(errs.String(), "go install github.com/nats-io/nats-server/v2@") {
		t.Errorf("without nats-server: exit %d, %q", code, errs.String())
	}
	errs.Reset()
	if code := run([]string{"bench", "-kill"}, &out, &errs); code == 0 || !strings.Contains(errs.String(), "--instances") {
		t.Errorf("-kill alone: exit %d, %q", code, errs.String())
	}
}
