package main

import (
	"encoding/json"
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
