package bench

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pincerbot/pincer/internal/config"
)

// Report is the outcome of one invocation; it encodes as the JSON of
// pincer bench --json.
type Report struct {
	Machine Machine `json:"machine"`
	// Pincer is the version measured.
	Pincer string `json:"pincer"`
	// Method says which process is measured and how.
	Method string        `json:"method"`
	Burst  *BurstReport  `json:"burst,omitempty"`
	Steady *SteadyReport `json:"steady,omitempty"`
	// OK is false when a message or reply was lost or doubled, or pincer
	// failed; Problems says what.
	OK       bool     `json:"ok"`
	Problems []string `json:"problems,omitempty"`
}

// Machine describes where the bench ran.
type Machine struct {
	CPUs        int    `json:"cpus"`
	CPU         string `json:"cpu,omitempty"`
	MemoryBytes int64  `json:"memory_bytes,omitempty"`
	Kernel      string `json:"kernel,omitempty"`
	// LoadAverage is the 1-minute load average as the bench started:
	// other work on the machine shares its CPUs with the runs.
	LoadAverage float64 `json:"load_average"`
	OS          string  `json:"os"`
	Arch        string  `json:"arch"`
	Go          string  `json:"go"`
}

// Process is what one process did in a measured window.
type Process struct {
	Events int `json:"events"`
	// Seconds is the window's wall time.
	Seconds            float64 `json:"seconds"`
	EventsPerSecond    float64 `json:"events_per_second"`
	CPUSeconds         float64 `json:"cpu_seconds"`
	EventsPerCPUSecond float64 `json:"events_per_cpu_second"`
	// CPUPerEventUs is CPUSeconds ÷ Events, in microseconds.
	CPUPerEventUs float64 `json:"cpu_per_event_us"`
	// RSSBeforeBytes is the process's resident set (VmRSS) as the window
	// began, before the load: for a Go binary of pincer's size most of it
	// is the binary's own pages (RssFile).
	RSSBeforeBytes int64 `json:"rss_before_bytes"`
	// PeakRSSBytes is the process's VmHWM at the end of the window: the
	// kernel's high-water mark of its resident set, file pages included.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// PeakAnonBytes is the highest RssAnon sampled every 100 ms in the
	// window: the process's own memory (heap, stacks, SQLite's cache),
	// without the binary's pages.
	PeakAnonBytes int64 `json:"peak_anon_bytes"`
	// Goroutines are sampled every second from pincer's /metrics (0 for
	// the baseline, which is not sampled).
	GoroutinesPeak int `json:"goroutines_peak,omitempty"`
	GoroutinesEnd  int `json:"goroutines_end,omitempty"`
	// AllocatedPerEventBytes is what pincer allocated on its heap in the
	// window (go_memstats_alloc_bytes_total from its /metrics), per
	// event: unlike CPU, it does not depend on what else the machine
	// runs, and the garbage collector's work follows it. 0 for the
	// baseline, which is not scraped.
	AllocatedPerEventBytes float64 `json:"allocated_per_event_bytes,omitempty"`
	// SwitchesPerEvent are the process's context switches in the window
	// (its threads' voluntary and involuntary ones, from /proc), per
	// event: how often it slept and woke, which like the allocations does
	// not move with what else the machine runs, where waking is much of
	// what a trickle costs.
	SwitchesPerEvent float64 `json:"context_switches_per_event,omitempty"`
	// ReadCallsPerEvent and WriteCallsPerEvent are the system calls the
	// process made in the window to read and to write (sockets and files
	// alike, from /proc), per event: counts too; each page SQLite writes
	// to its log is two writes.
	ReadCallsPerEvent  float64 `json:"read_calls_per_event,omitempty"`
	WriteCallsPerEvent float64 `json:"write_calls_per_event,omitempty"`
}

// Replies counts the replies to the @s of the bot, by the message they
// quote.
type Replies struct {
	Expected   int `json:"expected"`
	Delivered  int `json:"delivered"`
	Duplicated int `json:"duplicated"`
	// Stray counts sends that quote no @ of the run.
	Stray int `json:"stray"`
}

// Accounting says whether pincer took in every message sent.
type Accounting struct {
	Sent    int    `json:"sent"`
	Logged  int    `json:"logged"`
	Missing int    `json:"missing"`
	Source  string `json:"source"`
	// Doubled counts log entries of a message beyond its first (a
	// cluster's shared log).
	Doubled int `json:"doubled,omitempty"`
	// MayLose is set when an instance was killed (-kill): what it had
	// read and not published is lost, as documented, so Missing is no
	// problem. NotDelivered counts the frames the simulator had no
	// connection to write to, while no instance held it.
	MayLose      bool `json:"may_lose,omitempty"`
	NotDelivered int  `json:"not_delivered,omitempty"`
}

// ClusterRun is what a pincer run in cluster mode (--instances) adds:
// how its instances shared the work, and with -kill, the takeover.
type ClusterRun struct {
	Instances  int `json:"instances"`
	Partitions int `json:"partitions"`
	// PeakRSSSumBytes and RSSBeforeSumBytes add up the instances'; the
	// run's Process has the largest instance's.
	PeakRSSSumBytes   int64   `json:"peak_rss_sum_bytes"`
	RSSBeforeSumBytes int64   `json:"rss_before_sum_bytes"`
	Shares            []Share `json:"shares"`
	// Connections counts the connections the simulator accepted in the
	// run, MaxConnections the most it had up at once (one holder: 1).
	// NATSCPUSeconds is the CPU time of the nats-server the bench
	// started for the run, over the window (0 with -nats).
	NATSCPUSeconds float64     `json:"nats_cpu_seconds,omitempty"`
	Connections    int         `json:"connections"`
	MaxConnections int         `json:"max_connections"`
	Kill           *KillReport `json:"kill,omitempty"`
}

// Share is one instance's part of a run.
type Share struct {
	Instance   string  `json:"instance"`
	CPUSeconds float64 `json:"cpu_seconds"`
	// CPUShare is its part of the run's CPU seconds, 0 to 1.
	CPUShare     float64 `json:"cpu_share"`
	TurnsReplied int     `json:"turns_replied"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	// PartitionsStart is what it owned as the load began, PartitionsEnd
	// as the run ended (not read from a killed instance).
	PartitionsStart int  `json:"partitions_start"`
	PartitionsEnd   int  `json:"partitions_end"`
	Killed          bool `json:"killed,omitempty"`
}

// KillReport is the kill of the instance holding the QQ connection.
type KillReport struct {
	Instance string `json:"instance"`
	// AtFrame is the frames sent before it.
	AtFrame int `json:"at_frame"`
	// TakeoverSeconds is from the kill to the simulator's next
	// connection, -1 when none came.
	TakeoverSeconds float64 `json:"takeover_seconds"`
	// PartitionsSeconds is from the kill until the other instances own
	// every partition between them (the killed one's chats are answered
	// again), -1 when they did not within three lease TTLs and 30 s.
	PartitionsSeconds float64 `json:"partitions_seconds"`
	// The @s of the bot sent, and those the cluster took in (in its
	// log): each of those must be answered once, the others not at all.
	MentionsSent    int `json:"mentions_sent"`
	MentionsTakenIn int `json:"mentions_taken_in"`
	// RepliesLost and RepliesDoubled are among the @s taken in;
	// AnsweredNotTakenIn the replies to @s not taken in.
	RepliesLost        int `json:"replies_lost"`
	RepliesDoubled     int `json:"replies_doubled"`
	AnsweredNotTakenIn int `json:"answered_not_taken_in"`
	// DoubledAtKill counts the doubled replies whose first copy reached
	// the simulator before the kill, through the killed holder, and the
	// next after it: a send whose outcome died with the holder, which
	// the chat's owner sends again (docs/cluster.md, "Limits").
	DoubledAtKill int `json:"doubled_at_kill"`

	at time.Time // when the holder was killed
}

// Latency summarizes a latency's samples, in milliseconds.
type Latency struct {
	N     int     `json:"n"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// BurstReport is the burst: N messages as fast as the connection takes
// them, then one @.
type BurstReport struct {
	Messages       int     `json:"messages"`
	Groups         int     `json:"groups"`
	Senders        int     `json:"senders"`
	Realtime       bool    `json:"realtime"`
	History        bool    `json:"history"`
	ModelLatencyMs float64 `json:"model_latency_ms"`
	FrameBytes     int     `json:"frame_bytes"`
	// WriteBatchBytes is the simulator's write size (0: each frame
	// written by itself), SendGapMs pincer's channels.onebot.sendGapMs.
	WriteBatchBytes int `json:"write_batch_bytes"`
	SendGapMs       int `json:"send_gap_ms"`

	// Baseline is the minimal reader: first frame written to its answer
	// to the @.
	Baseline             Process `json:"baseline"`
	BaselineReplies      Replies `json:"baseline_replies"`
	BaselineWriteSeconds float64 `json:"baseline_write_seconds"`
	// BaselineWrites counts the writes its frames went out in.
	BaselineWrites int `json:"baseline_writes"`
	// BaselineDecoded is the number of events the reader said it decoded
	// (-1 when it did not say).
	BaselineDecoded int `json:"baseline_decoded"`

	// Pincer is first frame written to the later of the @'s reply and
	// the last message in the inbound log.
	Pincer        Process `json:"pincer"`
	WriteSeconds  float64 `json:"write_seconds"`
	ReplySeconds  float64 `json:"reply_seconds"`
	LoggedSeconds float64 `json:"logged_seconds"`
	// Writes counts the writes the frames went out in.
	Writes int `json:"writes"`
	// Ratio is pincer's events/s over the baseline's.
	Ratio            float64    `json:"ratio"`
	Replies          Replies    `json:"replies"`
	Accounted        Accounting `json:"accounted"`
	ModelRequests    int        `json:"model_requests"`
	TurnsReplied     int        `json:"turns_replied"`
	DriverCPUSeconds float64    `json:"driver_cpu_seconds"`
	Problems         []string   `json:"problems,omitempty"`
	// Cluster, with --instances, is how the instances shared the run.
	Cluster *ClusterRun `json:"cluster,omitempty"`
	// Quoted, with -quotes, is a fresh pincer on the same burst in which
	// that share of the messages replies to another.
	Quoted *BurstRun `json:"quoted,omitempty"`
}

// BurstRun is one pincer's run of a burst. A run with quotes says how
// many frames quoted another message (Share of them, asked) and how
// pincer's events/s compare with the run without them (Ratio).
type BurstRun struct {
	Share   float64 `json:"share,omitempty"`
	Quoting int     `json:"quoting,omitempty"`
	// Process is first frame written to the later of the @'s reply and
	// the last message in the inbound log.
	Process          Process     `json:"pincer"`
	Ratio            float64     `json:"ratio,omitempty"`
	WriteSeconds     float64     `json:"write_seconds"`
	Writes           int         `json:"writes"`
	ReplySeconds     float64     `json:"reply_seconds"`
	LoggedSeconds    float64     `json:"logged_seconds"`
	Replies          Replies     `json:"replies"`
	Accounted        Accounting  `json:"accounted"`
	ModelRequests    int         `json:"model_requests"`
	TurnsReplied     int         `json:"turns_replied"`
	DriverCPUSeconds float64     `json:"driver_cpu_seconds"`
	Cluster          *ClusterRun `json:"cluster,omitempty"`
	// GetMsg counts the get_msg calls the simulator answered.
	GetMsg   int      `json:"get_msg"`
	Problems []string `json:"problems,omitempty"`
}

// SteadyReport is the steady rate: the same rate, groups and senders
// three times, each on a fresh process, one after the other: the
// baseline reader on the stream with @s, pincer on chatter only (no @ of
// the bot), and pincer on the stream with @s, whose run the embedded
// SteadyRun is.
type SteadyReport struct {
	Rate           int     `json:"rate"`
	Seconds        float64 `json:"seconds"`
	Every          int     `json:"every"`
	Groups         int     `json:"groups"`
	Senders        int     `json:"senders"`
	Realtime       bool    `json:"realtime"`
	History        bool    `json:"history"`
	ModelLatencyMs float64 `json:"model_latency_ms"`
	// Quotes is the share of messages that reply to another.
	Quotes float64 `json:"quotes,omitempty"`
	// WriteBatchBytes is the simulator's write size (0: each frame
	// written by itself; else the frames due at once coalesced), SendGapMs
	// pincer's channels.onebot.sendGapMs.
	WriteBatchBytes int `json:"write_batch_bytes"`
	SendGapMs       int `json:"send_gap_ms"`

	// SteadyRun is pincer on the stream with @s.
	SteadyRun
	// Chatter is a fresh pincer on a stream of chatter only: the same
	// rate, groups and senders, no @ of the bot, and as many quotes.
	Chatter *SteadyRun `json:"chatter_only,omitempty"`

	// Baseline is the baseline reader on the stream with @s, over its
	// sending window.
	Baseline               Process `json:"baseline"`
	BaselineReplies        Replies `json:"baseline_replies"`
	BaselineDecoded        int     `json:"baseline_decoded"`
	BaselineWriterLagMaxMs float64 `json:"baseline_writer_lag_max_ms"`
	BaselineWrites         int     `json:"baseline_writes"`
	// BaselineMentionToReply is from an @'s frame written to the baseline
	// reader's reply to it at the simulator: the way in and out over the
	// loopback, the decoding and the bench noting it, with nothing
	// between, to read pincer's @ → model request against.
	BaselineMentionToReply Latency `json:"baseline_mention_to_reply"`

	// CPURatio is pincer's CPU seconds on the stream with @s over the
	// baseline's on the same stream.
	CPURatio float64 `json:"cpu_ratio"`
	// CPUPerChatterEventUs is the chatter-only run's CPU ÷ its events.
	CPUPerChatterEventUs float64 `json:"cpu_per_chatter_event_us"`
	// CPUPerAnsweredTurnUs is the run with @s' CPU less the chatter-only
	// run's (scaled to as many events), ÷ AnsweredTurns: pincer's turns
	// that replied, or the @s answered when its metrics did not say.
	AnsweredTurns        int     `json:"answered_turns"`
	CPUPerAnsweredTurnUs float64 `json:"cpu_per_answered_turn_us"`
}

// SteadyRun is one pincer's run of a steady stream.
type SteadyRun struct {
	// Mentions counts the stream's @s of the bot, Quoting its messages
	// that quote another, GetMsg the get_msg calls the simulator answered.
	Mentions int `json:"mentions"`
	Quoting  int `json:"quoting,omitempty"`
	GetMsg   int `json:"get_msg"`

	// Pincer covers the sending window; its peak RSS includes the wait
	// for the last replies.
	Pincer Process `json:"pincer"`
	// WriterLagMaxMs is how far the load fell behind its schedule at
	// worst; Writes counts the writes its frames went out in.
	WriterLagMaxMs float64 `json:"writer_lag_max_ms"`
	Writes         int     `json:"writes"`
	// MentionToRequest is from an @'s frame written to the model request
	// it caused; DoneToSend from the model's answer done to the reply's
	// send_group_msg at the simulator.
	MentionToRequest Latency    `json:"mention_to_request"`
	DoneToSend       Latency    `json:"done_to_send"`
	Replies          Replies    `json:"replies"`
	Accounted        Accounting `json:"accounted"`
	ModelRequests    int        `json:"model_requests"`
	TurnsReplied     int        `json:"turns_replied"`
	DriverCPUSeconds float64    `json:"driver_cpu_seconds"`
	Problems         []string   `json:"problems,omitempty"`
	// Cluster, with --instances, is how the instances shared the run.
	Cluster *ClusterRun `json:"cluster,omitempty"`
}

// derive works out the rows that compare the runs.
func (s *SteadyReport) derive() {
	p := s.Pincer
	s.CPURatio = 0
	if s.Baseline.CPUSeconds > 0 {
		s.CPURatio = p.CPUSeconds / s.Baseline.CPUSeconds
	}
	s.AnsweredTurns = s.TurnsReplied
	if s.AnsweredTurns == 0 {
		s.AnsweredTurns = s.Replies.Delivered
	}
	s.CPUPerChatterEventUs, s.CPUPerAnsweredTurnUs = 0, 0
	c := s.Chatter
	if c == nil || c.Pincer.Events == 0 {
		return
	}
	perEvent := c.Pincer.CPUSeconds / float64(c.Pincer.Events)
	s.CPUPerChatterEventUs = 1e6 * perEvent
	if s.AnsweredTurns > 0 {
		s.CPUPerAnsweredTurnUs = 1e6 * (p.CPUSeconds - perEvent*float64(p.Events)) / float64(s.AnsweredTurns)
	}
}

func (r Replies) problems(what string) []string {
	var out []string
	if lost := r.Expected - r.Delivered; lost > 0 {
		out = append(out, fmt.Sprintf("%s: %d of %d @s got no reply", what, lost, r.Expected))
	}
	if r.Duplicated > 0 {
		out = append(out, fmt.Sprintf("%s: %d replies were sent more than once", what, r.Duplicated))
	}
	if r.Stray > 0 {
		out = append(out, fmt.Sprintf("%s: %d sends quoted no @ of the run", what, r.Stray))
	}
	return out
}

func (a Accounting) problems(what string) []string {
	var out []string
	if a.Missing > 0 && !a.MayLose {
		out = append(out, fmt.Sprintf("%s: %d of %d messages are not in pincer's inbound log", what, a.Missing, a.Sent))
	}
	if a.Doubled > 0 {
		out = append(out, fmt.Sprintf("%s: %d messages are in the inbound log more than once", what, a.Doubled))
	}
	return out
}

func (k *KillReport) problems(what string) []string {
	if k == nil {
		return nil
	}
	var out []string
	if k.TakeoverSeconds < 0 {
		out = append(out, fmt.Sprintf("%s: no instance took the QQ connection over after %s was killed", what, k.Instance))
	}
	if k.DoubledAtKill > 0 {
		out = append(out, fmt.Sprintf("%s: %d of the doubled replies went out first through %s just before it was killed, "+
			"which died before it could tell the chat's owner, who sent them again", what, k.DoubledAtKill, k.Instance))
	}
	if k.PartitionsSeconds < 0 {
		out = append(out, fmt.Sprintf("%s: the other instances did not take %s's partitions over", what, k.Instance))
	}
	if k.AnsweredNotTakenIn > 0 {
		out = append(out, fmt.Sprintf("%s: %d replies to @s the cluster had not taken in", what, k.AnsweredNotTakenIn))
	}
	return out
}

func (b *BurstReport) problems() []string {
	out := append([]string(nil), b.Problems...)
	out = append(out, b.BaselineReplies.problems("burst baseline")...)
	if b.Quoted != nil {
		out = append(out, b.Quoted.Problems...)
	}
	return out
}

func (s *SteadyReport) problems() []string {
	out := append([]string(nil), s.BaselineReplies.problems("steady baseline")...)
	if c := s.Chatter; c != nil {
		out = append(out, c.problems(steadyChatter)...)
	}
	return append(out, s.SteadyRun.problems(steadyWith)...)
}

// Names of the steady runs, in problems.
const (
	steadyChatter = "steady, chatter only"
	steadyWith    = "steady, with @s"
)

func (r *SteadyRun) problems(what string) []string {
	out := append([]string(nil), r.Problems...)
	out = append(out, r.Replies.problems(what)...)
	return append(out, r.Accounted.problems(what)...)
}

// machine describes this machine from /proc (Linux).
func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH, Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				m.MemoryBytes = kb << 10
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			m.LoadAverage, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return m
}

// WriteText prints the report as tables.
func (r *Report) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	m := r.Machine
	ew.printf("pincer bench: pincer %s; %d CPUs", r.Pincer, m.CPUs)
	if m.CPU != "" {
		ew.printf(" (%s)", m.CPU)
	}
	if m.MemoryBytes > 0 {
		ew.printf(", %.0f GiB", float64(m.MemoryBytes)/(1<<30))
	}
	if m.Kernel != "" {
		ew.printf(", Linux %s", m.Kernel)
	}
	ew.printf("; load average %.2f at the start", m.LoadAverage)
	ew.printf("\n%s.\n", r.Method)
	if b := r.Burst; b != nil {
		ew.printf("\nburst: %s messages over %s groups from %s senders, then one @ of the bot\n",
			count(b.Messages), count(b.Groups), count(b.Senders))
		ew.printf("       realtime %s, history %s, model latency %s ms, %.1f MiB of frames\n",
			onOff(b.Realtime), onOff(b.History), num(b.ModelLatencyMs), float64(b.FrameBytes)/(1<<20))
		ew.printf("       %s, %s\n", sendGap(b.SendGapMs), writeMode(b.WriteBatchBytes))
		ew.printf("       first the baseline reader, then a fresh pincer")
		if b.Quoted != nil {
			ew.printf(", then another")
		}
		ew.printf(", each on the same frames\n")
		if q := b.Quoted; q != nil {
			ew.printf("       the last with %.0f%% of the messages quoting another (%s: half an earlier one of their chat, half one from before pincer started, which get_msg tells)\n",
				100*q.Share, count(q.Quoting))
		}
		t := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		q := b.Quoted
		row := func(cells ...string) {
			if q == nil {
				cells = cells[:3]
			}
			fmt.Fprintln(t, strings.Join(cells, "\t")+"\t")
		}
		bl, p := b.Baseline, b.Pincer
		var qp Process
		var qr BurstRun
		quotedHead := ""
		if q != nil {
			qp, qr = q.Process, *q
			quotedHead = fmt.Sprintf("pincer, %.0f%% quotes", 100*q.Share)
		}
		row("", "baseline", "pincer", quotedHead)
		row("events", count(bl.Events), count(p.Events), count(qp.Events))
		row("ingest time (s)", secs(bl.Seconds), secs(p.Seconds), secs(qp.Seconds))
		row("events/s", count(int(bl.EventsPerSecond)), count(int(p.EventsPerSecond)), count(int(qp.EventsPerSecond)))
		quotedRatio := ""
		if bl.EventsPerSecond > 0 {
			quotedRatio = fmt.Sprintf("%.2f", qp.EventsPerSecond/bl.EventsPerSecond)
		}
		row("pincer ÷ baseline", "", fmt.Sprintf("%.2f", b.Ratio), quotedRatio)
		if q != nil {
			row("with quotes ÷ without", "", "", fmt.Sprintf("%.2f", qr.Ratio))
		}
		row("CPU seconds", secs(bl.CPUSeconds), secs(p.CPUSeconds), secs(qp.CPUSeconds))
		row("events per CPU-second", perCPU(bl), perCPU(p), perCPU(qp))
		row("context switches per event", switches(bl), switches(p), switches(qp))
		row("read / write calls per event", callsPerEvent(bl), callsPerEvent(p), callsPerEvent(qp))
		row("RSS before the load (MiB)", mib(bl.RSSBeforeBytes), mib(p.RSSBeforeBytes), mib(qp.RSSBeforeBytes))
		row("peak RSS (MiB)", mib(bl.PeakRSSBytes), mib(p.PeakRSSBytes), mib(qp.PeakRSSBytes))
		row("peak anonymous RSS (MiB)", mib(bl.PeakAnonBytes), mib(p.PeakAnonBytes), mib(qp.PeakAnonBytes))
		row("goroutines peak / end", "–", fmt.Sprintf("%s / %s", count(p.GoroutinesPeak), count(p.GoroutinesEnd)),
			fmt.Sprintf("%s / %s", count(qp.GoroutinesPeak), count(qp.GoroutinesEnd)))
		row("heap allocated per event (B)", "–", allocated(p), allocated(qp))
		if q != nil {
			row("get_msg answered", "–", "–", count(qr.GetMsg))
		}
		row("replies exp / deliv / dup", replies(b.BaselineReplies), replies(b.Replies), replies(qr.Replies))
		decoded := "–"
		if b.BaselineDecoded >= 0 {
			decoded = count(b.BaselineDecoded) + " decoded"
		}
		logged := loggedCell
		row("messages accounted for", decoded, logged(b.Accounted), logged(qr.Accounted))
		clusterRows(func(cells ...string) { row(append([]string{cells[0], "–"}, cells[1:]...)...) }, b.Cluster, qr.Cluster)
		if err := t.Flush(); err != nil {
			return err
		}
		ew.printf("       baseline: %s frames written in %ss, in %s\n", count(bl.Events), secs(b.BaselineWriteSeconds), writes(b.BaselineWrites))
		runLine := func(name string, r BurstRun) {
			ew.printf("       %s: frames written in %ss, in %s; the @ answered at %ss, all messages logged at %ss; "+
				"%d model request(s); the load driver used %ss of CPU\n",
				name, secs(r.WriteSeconds), writes(r.Writes), secs(r.ReplySeconds), secs(r.LoggedSeconds), r.ModelRequests, secs(r.DriverCPUSeconds))
		}
		runLine("pincer", BurstRun{WriteSeconds: b.WriteSeconds, Writes: b.Writes, ReplySeconds: b.ReplySeconds, LoggedSeconds: b.LoggedSeconds,
			ModelRequests: b.ModelRequests, DriverCPUSeconds: b.DriverCPUSeconds})
		if q != nil {
			runLine("with quotes", qr)
		}
	}
	if s := r.Steady; s != nil {
		if err := s.writeText(ew); err != nil {
			return err
		}
	}
	if r.OK {
		ew.printf("\nok: every message and every reply accounted for\n")
	} else {
		ew.printf("\nFAILED:\n")
		for _, p := range r.Problems {
			ew.printf("  %s\n", p)
		}
	}
	return ew.err
}

// writeText prints the steady scenario: its runs side by side.
func (s *SteadyReport) writeText(ew *errWriter) error {
	ew.printf("\nsteady: %s events/s for %ss over %s groups from %s senders, every %d%s an @ of the bot\n",
		count(s.Rate), num(s.Seconds), count(s.Groups), count(s.Senders), s.Every, ordinal(s.Every))
	ew.printf("        realtime %s, history %s, model latency %s ms, %s, %s\n",
		onOff(s.Realtime), onOff(s.History), num(s.ModelLatencyMs), sendGap(s.SendGapMs), writeMode(s.WriteBatchBytes))
	ew.printf("        three runs at this rate, one after the other, each on a fresh process: the baseline reader on the stream\n" +
		"        with @s; pincer on chatter only (the same rate, groups and senders, no @); pincer on the stream with @s\n")
	c := s.Chatter
	if c == nil {
		c = &SteadyRun{}
	}
	if s.Quotes > 0 {
		ew.printf("        %.0f%% of the messages quote another (%s with @s, %s of the chatter only)\n", 100*s.Quotes, count(s.Quoting), count(c.Quoting))
	}
	t := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(cells ...string) { fmt.Fprintln(t, strings.Join(cells, "\t")+"\t") }
	bl, pc, p := s.Baseline, c.Pincer, s.Pincer
	core := func(p Process) string {
		return fmt.Sprintf("%s (%.0f%% of a core)", secs(p.CPUSeconds), 100*p.CPUSeconds/max(p.Seconds, 1e-9))
	}
	us := func(v float64) string {
		switch {
		case v == 0:
			return "–"
		case v >= 1000 || v <= -1000:
			return count(int(math.Round(v)))
		}
		return num(v)
	}
	row("", "baseline", "pincer, chatter only", "pincer, with @s")
	row("events", count(bl.Events), count(pc.Events), count(p.Events))
	row("@s of the bot", count(s.BaselineReplies.Expected), count(c.Mentions), count(s.Mentions))
	row("events/s", count(int(bl.EventsPerSecond)), count(int(pc.EventsPerSecond)), count(int(p.EventsPerSecond)))
	row("CPU seconds", core(bl), core(pc), core(p))
	row("CPU per event (µs)", us(bl.CPUPerEventUs), us(pc.CPUPerEventUs), us(p.CPUPerEventUs))
	ratio := "–"
	if s.CPURatio > 0 {
		ratio = fmt.Sprintf("%.1f", s.CPURatio)
	}
	row("pincer CPU ÷ baseline CPU", "", "", ratio)
	row("CPU per chatter event (µs)", "", us(s.CPUPerChatterEventUs), "")
	turn := "–"
	if s.CPUPerChatterEventUs > 0 && s.AnsweredTurns > 0 {
		turn = fmt.Sprintf("%s (%s turns)", us(s.CPUPerAnsweredTurnUs), count(s.AnsweredTurns))
	}
	row("CPU per answered turn (µs)", "", "", turn)
	row("events per CPU-second", perCPU(bl), perCPU(pc), perCPU(p))
	row("context switches per event", switches(bl), switches(pc), switches(p))
	row("read / write calls per event", callsPerEvent(bl), callsPerEvent(pc), callsPerEvent(p))
	row("RSS before the load (MiB)", mib(bl.RSSBeforeBytes), mib(pc.RSSBeforeBytes), mib(p.RSSBeforeBytes))
	row("peak RSS (MiB)", mib(bl.PeakRSSBytes), mib(pc.PeakRSSBytes), mib(p.PeakRSSBytes))
	row("peak anonymous RSS (MiB)", mib(bl.PeakAnonBytes), mib(pc.PeakAnonBytes), mib(p.PeakAnonBytes))
	goroutines := func(p Process) string { return fmt.Sprintf("%s / %s", count(p.GoroutinesPeak), count(p.GoroutinesEnd)) }
	row("goroutines peak / end", "–", goroutines(pc), goroutines(p))
	row("heap allocated per event (B)", "–", allocated(pc), allocated(p))
	if s.Quotes > 0 {
		row("get_msg answered", "–", count(c.GetMsg), count(s.GetMsg))
	}
	row("replies exp / deliv / dup", replies(s.BaselineReplies), replies(c.Replies), replies(s.Replies))
	decoded := "–"
	if s.BaselineDecoded >= 0 {
		decoded = count(s.BaselineDecoded) + " decoded"
	}
	logged := loggedCell
	row("messages accounted for", decoded, logged(c.Accounted), logged(s.Accounted))
	clusterRows(func(cells ...string) { row(append([]string{cells[0], "–"}, cells[1:]...)...) }, c.Cluster, s.Cluster)
	row("latency (ms)", "p50", "p99", "max")
	lat := func(name string, l Latency) {
		if l.N == 0 {
			row(name, "–", "–", "–")
			return
		}
		row(name, num(l.P50Ms), num(l.P99Ms), num(l.MaxMs))
	}
	lat("@ → model request", s.MentionToRequest)
	lat("model done → send", s.DoneToSend)
	lat("baseline: @ → reply", s.BaselineMentionToReply)
	if err := t.Flush(); err != nil {
		return err
	}
	ew.printf("        baseline: %s frames in %s; the load fell %s ms behind its schedule at worst\n",
		count(bl.Events), writes(s.BaselineWrites), num(s.BaselineWriterLagMaxMs))
	runLine := func(name string, r *SteadyRun) {
		ew.printf("        %s: %s frames in %s; %d model request(s); the load fell %s ms behind its schedule at worst; "+
			"the load driver used %ss of CPU\n",
			name, count(r.Pincer.Events), writes(r.Writes), r.ModelRequests, num(r.WriterLagMaxMs), secs(r.DriverCPUSeconds))
	}
	runLine("pincer, chatter only", c)
	runLine("pincer, with @s", &s.SteadyRun)
	ew.printf("        CPU per answered turn = (CPU with @s − CPU per chatter event × its events) ÷ the turns that replied: " +
		"the difference of two runs, as noisy as both\n")
	return ew.err
}

// loggedCell says how many of the messages sent are in the log: with
// -kill, how many the simulator could not deliver while no instance
// held the connection, and any logged twice.
func loggedCell(a Accounting) string {
	s := fmt.Sprintf("%s of %s logged", count(a.Logged), count(a.Sent))
	if a.MayLose {
		s += fmt.Sprintf(" (%s not delivered)", count(a.NotDelivered))
	}
	if a.Doubled > 0 {
		s += fmt.Sprintf(" (%s twice)", count(a.Doubled))
	}
	return s
}

// clusterRows adds the rows of a cluster's runs (--instances), one
// column a run; row takes the name and a cell for each run.
func clusterRows(row func(cells ...string), runs ...*ClusterRun) {
	var some *ClusterRun
	for _, c := range runs {
		if c != nil {
			some = c
		}
	}
	if some == nil {
		return
	}
	each := func(name string, cell func(c *ClusterRun) string) {
		cells := []string{name}
		for _, c := range runs {
			if c == nil {
				cells = append(cells, "")
				continue
			}
			cells = append(cells, cell(c))
		}
		row(cells...)
	}
	each("instances", func(c *ClusterRun) string {
		s := strconv.Itoa(c.Instances)
		if c.Kill != nil {
			s += " (" + c.Kill.Instance + " killed)"
		}
		return s
	})
	each("QQ connections (most at once)", func(c *ClusterRun) string {
		return fmt.Sprintf("%d (%d)", c.Connections, c.MaxConnections)
	})
	each("nats-server CPU seconds", func(c *ClusterRun) string {
		if c.NATSCPUSeconds == 0 {
			return "–"
		}
		return secs(c.NATSCPUSeconds)
	})
	each("peak RSS, all instances (MiB)", func(c *ClusterRun) string { return mib(c.PeakRSSSumBytes) })
	row(append([]string{"each instance's share"}, make([]string, len(runs))...)...)
	for i := range some.Shares {
		each("  "+some.Shares[i].Instance+": CPU s, turns, partitions", func(c *ClusterRun) string {
			if i >= len(c.Shares) {
				return ""
			}
			sh := c.Shares[i]
			end := "killed"
			if !sh.Killed {
				end = strconv.Itoa(sh.PartitionsEnd)
			}
			return fmt.Sprintf("%s (%.0f%%), %s, %d → %s", secs(sh.CPUSeconds), 100*sh.CPUShare, count(sh.TurnsReplied), sh.PartitionsStart, end)
		})
	}
	if some.Kill == nil {
		return
	}
	kill := func(name string, cell func(k *KillReport) string) {
		each(name, func(c *ClusterRun) string {
			if c.Kill == nil {
				return ""
			}
			return cell(c.Kill)
		})
	}
	kill("killed after frame", func(k *KillReport) string { return count(k.AtFrame) })
	kill("takeover time (s)", func(k *KillReport) string {
		if k.TakeoverSeconds < 0 {
			return "none"
		}
		return secs(k.TakeoverSeconds)
	})
	kill("partitions taken over (s)", func(k *KillReport) string {
		if k.PartitionsSeconds < 0 {
			return "not all"
		}
		return secs(k.PartitionsSeconds)
	})
	kill("@s taken in / sent", func(k *KillReport) string {
		return fmt.Sprintf("%s / %s", count(k.MentionsTakenIn), count(k.MentionsSent))
	})
	kill("replies lost / doubled", func(k *KillReport) string {
		s := fmt.Sprintf("%d / %d", k.RepliesLost, k.RepliesDoubled)
		if k.DoubledAtKill > 0 {
			s += fmt.Sprintf(" (%d across the kill)", k.DoubledAtKill)
		}
		if k.AnsweredNotTakenIn > 0 {
			s += fmt.Sprintf(" (+%d to @s not taken in)", k.AnsweredNotTakenIn)
		}
		return s
	})
}

// writes says how many writes there were.
func writes(n int) string {
	if n == 1 {
		return "1 write"
	}
	return count(n) + " writes"
}

// sendGap describes pincer's send gap.
func sendGap(ms int) string {
	switch ms {
	case 0:
		return "no send gap"
	case config.DefaultSendGapMs:
		return fmt.Sprintf("send gap %s ms (pincer's default)", count(ms))
	}
	return fmt.Sprintf("send gap %s ms", count(ms))
}

// writeMode describes how the simulator wrote the frames.
func writeMode(batch int) string {
	if batch <= 0 {
		return "each frame written by itself"
	}
	return fmt.Sprintf("frames coalesced into writes of up to %s bytes", count(batch))
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// count writes n with thousands separators.
func count(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func secs(s float64) string { return strconv.FormatFloat(s, 'f', 2, 64) }

func mib(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) }

// num prints a small number with up to three significant decimals.
func num(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// perCPU is events per CPU-second, "–" when the CPU time was below the
// kernel's 10 ms tick.
func perCPU(p Process) string {
	if p.CPUSeconds <= 0 {
		return "–"
	}
	return count(int(p.EventsPerCPUSecond))
}

func replies(r Replies) string {
	s := fmt.Sprintf("%s / %s / %s", count(r.Expected), count(r.Delivered), count(r.Duplicated))
	if r.Stray > 0 {
		s += fmt.Sprintf(" (+%s stray)", count(r.Stray))
	}
	return s
}

// switches is p's context switches per event; "–" when not read.
func switches(p Process) string {
	if p.SwitchesPerEvent <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", p.SwitchesPerEvent)
}

// callsPerEvent is p's read and write system calls per event; "–" when not
// read.
func callsPerEvent(p Process) string {
	if p.ReadCallsPerEvent <= 0 && p.WriteCallsPerEvent <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f / %.2f", p.ReadCallsPerEvent, p.WriteCallsPerEvent)
}

// allocated is p's heap allocated per event, in bytes; "–" when pincer's
// /metrics were not read.
func allocated(p Process) string {
	if p.AllocatedPerEventBytes <= 0 {
		return "–"
	}
	return count(int(p.AllocatedPerEventBytes + 0.5))
}
