package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
)

// steadyResult is a steady scenario as the runs might leave it: the
// baseline at 0.5 CPU-seconds, pincer at 8 on chatter only and at 10
// with 2,000 turns answered, 20,000 events each.
func steadyResult() *SteadyReport {
	proc := func(cpu float64) Process {
		return Process{Events: 20_000, Seconds: 20, EventsPerSecond: 1000, CPUSeconds: cpu, CPUPerEventUs: cpu / 20_000 * 1e6, SwitchesPerEvent: cpu / 4,
			ReadCallsPerEvent: 1, WriteCallsPerEvent: cpu / 10}
	}
	s := &SteadyReport{
		Rate: 1000, Seconds: 20, Every: 10, Groups: 2000, Senders: 1000, History: true, ModelLatencyMs: 20,
		WriteBatchBytes: 65536, SendGapMs: 0,
		SteadyRun: SteadyRun{
			Mentions: 2000, Pincer: proc(10), TurnsReplied: 2000,
			Replies:   Replies{Expected: 2000, Delivered: 2000},
			Accounted: Accounting{Sent: 20_000, Logged: 20_000},
		},
		Chatter:  &SteadyRun{Pincer: proc(8), Accounted: Accounting{Sent: 20_000, Logged: 20_000}},
		Baseline: proc(0.5), BaselineReplies: Replies{Expected: 2000, Delivered: 2000}, BaselineDecoded: 20_000,
		BaselineMentionToReply: Latency{N: 2000, P50Ms: 0.31, P99Ms: 1.2, MaxMs: 4},
	}
	s.derive()
	return s
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(b)) }

func TestSteadyDerivesCPUPerEventAndTurn(t *testing.T) {
	s := steadyResult()
	if !near(s.CPURatio, 20) || !near(s.CPUPerChatterEventUs, 400) || s.AnsweredTurns != 2000 || !near(s.CPUPerAnsweredTurnUs, 1000) {
		t.Errorf("ratio %v, per chatter event %v µs, per turn %v µs over %d turns; want 20, 400, 1000 over 2000",
			s.CPURatio, s.CPUPerChatterEventUs, s.CPUPerAnsweredTurnUs, s.AnsweredTurns)
	}
	// The chatter-only run's CPU is scaled to the events of the run with
	// @s; without pincer's count of turns, the @s answered stand in.
	s.Chatter.Pincer = Process{Events: 10_000, CPUSeconds: 4.5}
	s.TurnsReplied, s.Replies.Delivered = 0, 1000
	s.derive()
	if !near(s.CPUPerChatterEventUs, 450) || s.AnsweredTurns != 1000 || !near(s.CPUPerAnsweredTurnUs, 1000) {
		t.Errorf("per chatter event %v µs, per turn %v µs over %d turns; want 450, 1000 over 1000",
			s.CPUPerChatterEventUs, s.CPUPerAnsweredTurnUs, s.AnsweredTurns)
	}
}

// TestSteadyReportShowsItsRuns: the text names the three runs and has the
// rows that compare them; the JSON has their fields.
func TestSteadyReportShowsItsRuns(t *testing.T) {
	r := &Report{Steady: steadyResult(), OK: true}
	var out bytes.Buffer
	if err := r.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		`baseline\s+pincer, chatter only\s+pincer, with @s`,
		`CPU seconds\s+0\.50 \(2% of a core\)\s+8\.00 \(40% of a core\)\s+10\.00 \(50% of a core\)`,
		`CPU per event \(µs\)\s+25\.0\s+400\s+500`,
		`pincer CPU ÷ baseline CPU\s+20\.0\s*\n`,
		`CPU per chatter event \(µs\)\s+400\s*\n`,
		`CPU per answered turn \(µs\)\s+1,000 \(2,000 turns\)\s*\n`,
		`context switches per event\s+0\.12\s+2\.00\s+2\.50\s*\n`,
		`read / write calls per event\s+1\.00 / 0\.05\s+1\.00 / 0\.80\s+1\.00 / 1\.00\s*\n`,
		`replies exp / deliv / dup\s+2,000 / 2,000 / 0\s+0 / 0 / 0\s+2,000 / 2,000 / 0`,
		`no send gap, frames coalesced into writes of up to 65,536 bytes`,
		`baseline: @ → reply\s+0\.31\s+1\.20\s+4\.00\s*\n`,
	} {
		if !regexp.MustCompile(want).MatchString(text) {
			t.Errorf("no %q in\n%s", want, text)
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Steady map[string]json.RawMessage `json:"steady"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{
		"pincer", "replies", "chatter_only", "baseline", "baseline_replies", "cpu_ratio", "cpu_per_chatter_event_us",
		"answered_turns", "cpu_per_answered_turn_us", "write_batch_bytes", "send_gap_ms", "writes",
		"baseline_mention_to_reply",
	} {
		if _, ok := got.Steady[key]; !ok {
			t.Errorf("no %q in the steady JSON: %s", key, b)
		}
	}
	if !strings.Contains(string(got.Steady["chatter_only"]), `"cpu_per_event_us":400`) {
		t.Errorf("chatter_only %s", got.Steady["chatter_only"])
	}
}

// TestContextSwitchesPerEvent: a window's context switches and read and
// write calls, the difference of two readings, are counted per event.
func TestContextSwitchesPerEvent(t *testing.T) {
	p := processReport(400, time.Second, usage{switches: 1000, reads: 100, writes: 50}, usage{switches: 1900, reads: 500, writes: 850}, 0, sampled{})
	if !near(p.SwitchesPerEvent, 2.25) {
		t.Errorf("switches per event %v, want 2.25", p.SwitchesPerEvent)
	}
	if !near(p.ReadCallsPerEvent, 1) || !near(p.WriteCallsPerEvent, 2) {
		t.Errorf("read / write calls per event %v / %v, want 1 / 2", p.ReadCallsPerEvent, p.WriteCallsPerEvent)
	}
}
