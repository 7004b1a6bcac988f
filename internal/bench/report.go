package bench

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
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

	// Baseline is the minimal reader: first frame written to its answer
	// to the @.
	Baseline             Process `json:"baseline"`
	BaselineReplies      Replies `json:"baseline_replies"`
	BaselineWriteSeconds float64 `json:"baseline_write_seconds"`
	// BaselineDecoded is the number of events the reader said it decoded
	// (-1 when it did not say).
	BaselineDecoded int `json:"baseline_decoded"`

	// Pincer is first frame written to the later of the @'s reply and
	// the last message in the inbound log.
	Pincer        Process `json:"pincer"`
	WriteSeconds  float64 `json:"write_seconds"`
	ReplySeconds  float64 `json:"reply_seconds"`
	LoggedSeconds float64 `json:"logged_seconds"`
	// Ratio is pincer's events/s over the baseline's.
	Ratio            float64    `json:"ratio"`
	Replies          Replies    `json:"replies"`
	Accounted        Accounting `json:"accounted"`
	ModelRequests    int        `json:"model_requests"`
	TurnsReplied     int        `json:"turns_replied"`
	DriverCPUSeconds float64    `json:"driver_cpu_seconds"`
	Problems         []string   `json:"problems,omitempty"`
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
	Process          Process    `json:"pincer"`
	Ratio            float64    `json:"ratio,omitempty"`
	WriteSeconds     float64    `json:"write_seconds"`
	ReplySeconds     float64    `json:"reply_seconds"`
	LoggedSeconds    float64    `json:"logged_seconds"`
	Replies          Replies    `json:"replies"`
	Accounted        Accounting `json:"accounted"`
	ModelRequests    int        `json:"model_requests"`
	TurnsReplied     int        `json:"turns_replied"`
	DriverCPUSeconds float64    `json:"driver_cpu_seconds"`
	// GetMsg counts the get_msg calls the simulator answered.
	GetMsg   int      `json:"get_msg"`
	Problems []string `json:"problems,omitempty"`
}

// SteadyReport is the steady rate.
type SteadyReport struct {
	Rate           int     `json:"rate"`
	Seconds        float64 `json:"seconds"`
	Every          int     `json:"every"`
	Groups         int     `json:"groups"`
	Senders        int     `json:"senders"`
	Realtime       bool    `json:"realtime"`
	History        bool    `json:"history"`
	ModelLatencyMs float64 `json:"model_latency_ms"`
	// Quotes is the share of messages that reply to another, Quoting how
	// many did, GetMsg how many get_msg calls the simulator answered.
	Quotes  float64 `json:"quotes,omitempty"`
	Quoting int     `json:"quoting,omitempty"`
	GetMsg  int     `json:"get_msg"`

	// Pincer covers the sending window; its peak RSS includes the wait
	// for the last replies.
	Pincer Process `json:"pincer"`
	// WriterLagMaxMs is how far the load fell behind its schedule at
	// worst.
	WriterLagMaxMs float64 `json:"writer_lag_max_ms"`
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
	if a.Missing > 0 {
		return []string{fmt.Sprintf("%s: %d of %d messages are not in pincer's inbound log", what, a.Missing, a.Sent)}
	}
	return nil
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
	out := append([]string(nil), s.Problems...)
	out = append(out, s.Replies.problems("steady")...)
	return append(out, s.Accounted.problems("steady")...)
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
		if q := b.Quoted; q != nil {
			ew.printf("       then a fresh pincer on the same burst with %.0f%% of the messages quoting another (%s: half an earlier one of their chat, half one from before pincer started, which get_msg tells)\n",
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
		row("with quotes ÷ without", "", "", fmt.Sprintf("%.2f", qr.Ratio))
		row("CPU seconds", secs(bl.CPUSeconds), secs(p.CPUSeconds), secs(qp.CPUSeconds))
		row("events per CPU-second", perCPU(bl), perCPU(p), perCPU(qp))
		row("RSS before the load (MiB)", mib(bl.RSSBeforeBytes), mib(p.RSSBeforeBytes), mib(qp.RSSBeforeBytes))
		row("peak RSS (MiB)", mib(bl.PeakRSSBytes), mib(p.PeakRSSBytes), mib(qp.PeakRSSBytes))
		row("peak anonymous RSS (MiB)", mib(bl.PeakAnonBytes), mib(p.PeakAnonBytes), mib(qp.PeakAnonBytes))
		row("goroutines peak / end", "–", fmt.Sprintf("%s / %s", count(p.GoroutinesPeak), count(p.GoroutinesEnd)),
			fmt.Sprintf("%s / %s", count(qp.GoroutinesPeak), count(qp.GoroutinesEnd)))
		row("get_msg answered", "–", "–", count(qr.GetMsg))
		row("replies exp / deliv / dup", replies(b.BaselineReplies), replies(b.Replies), replies(qr.Replies))
		decoded := "–"
		if b.BaselineDecoded >= 0 {
			decoded = count(b.BaselineDecoded) + " decoded"
		}
		logged := func(a Accounting) string { return fmt.Sprintf("%s of %s logged", count(a.Logged), count(a.Sent)) }
		row("messages accounted for", decoded, logged(b.Accounted), logged(qr.Accounted))
		if err := t.Flush(); err != nil {
			return err
		}
		runLine := func(name string, r BurstRun) {
			ew.printf("       %s: frames written in %ss, the @ answered at %ss, all messages logged at %ss; "+
				"%d model request(s); the load driver used %ss of CPU\n",
				name, secs(r.WriteSeconds), secs(r.ReplySeconds), secs(r.LoggedSeconds), r.ModelRequests, secs(r.DriverCPUSeconds))
		}
		runLine("pincer", BurstRun{WriteSeconds: b.WriteSeconds, ReplySeconds: b.ReplySeconds, LoggedSeconds: b.LoggedSeconds,
			ModelRequests: b.ModelRequests, DriverCPUSeconds: b.DriverCPUSeconds})
		if q != nil {
			runLine("with quotes", qr)
		}
	}
	if s := r.Steady; s != nil {
		ew.printf("\nsteady: %s events/s for %ss over %s groups from %s senders, every %d%s an @ of the bot\n",
			count(s.Rate), num(s.Seconds), count(s.Groups), count(s.Senders), s.Every, ordinal(s.Every))
		ew.printf("        realtime %s, history %s, model latency %s ms\n", onOff(s.Realtime), onOff(s.History), num(s.ModelLatencyMs))
		if s.Quotes > 0 {
			ew.printf("        %.0f%% of the messages quote another (%s); get_msg answered %s times\n", 100*s.Quotes, count(s.Quoting), count(s.GetMsg))
		}
		t := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		row := func(cells ...string) { fmt.Fprintln(t, strings.Join(cells, "\t")+"\t") }
		p := s.Pincer
		row("", "pincer", "", "")
		row("events", count(p.Events), "", "")
		row("events/s", count(int(p.EventsPerSecond)), "", "")
		row("CPU seconds", fmt.Sprintf("%s (%.0f%% of a core)", secs(p.CPUSeconds), 100*p.CPUSeconds/max(p.Seconds, 1e-9)), "", "")
		row("events per CPU-second", perCPU(p), "", "")
		row("RSS before the load (MiB)", mib(p.RSSBeforeBytes), "", "")
		row("peak RSS (MiB)", mib(p.PeakRSSBytes), "", "")
		row("peak anonymous RSS (MiB)", mib(p.PeakAnonBytes), "", "")
		row("goroutines peak / end", fmt.Sprintf("%s / %s", count(p.GoroutinesPeak), count(p.GoroutinesEnd)), "", "")
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
		row("replies exp / deliv / dup", replies(s.Replies), "", "")
		row("messages accounted for", fmt.Sprintf("%s of %s logged", count(s.Accounted.Logged), count(s.Accounted.Sent)), "", "")
		if err := t.Flush(); err != nil {
			return err
		}
		ew.printf("        %d model request(s); the load fell %s ms behind its schedule at worst; the load driver used %ss of CPU\n",
			s.ModelRequests, num(s.WriterLagMaxMs), secs(s.DriverCPUSeconds))
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
