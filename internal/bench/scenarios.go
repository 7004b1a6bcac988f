package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// runBurst sends the burst to the baseline, then to pincer; with quotes,
// then to a fresh pincer the same burst in which that share of the
// messages quotes another.
func runBurst(ctx context.Context, cfg *Config, dir string, unix int64) (*BurstReport, error) {
	groups := cfg.groups(DefaultBurstGroups)
	sh := shape{
		self: SelfID, count: cfg.Messages, groups: groups, senders: cfg.Senders, finalAt: true,
		firstID: 1_000_000_000, unixTime: unix, seed: 1,
	}
	load := generate(sh)
	b := &BurstReport{
		Messages: cfg.Messages, Groups: groups, Senders: cfg.Senders, Realtime: cfg.Realtime, History: cfg.History,
		ModelLatencyMs: ms(cfg.Latency), FrameBytes: load.Bytes, WriteBatchBytes: cfg.WriteBatch, SendGapMs: cfg.sendGap(),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	cfg.progress("burst: %d messages over %d groups from %d senders, then one @ of the bot (%.1f MiB of frames)",
		cfg.Messages, groups, cfg.Senders, float64(load.Bytes)/(1<<20))
	cfg.progress("burst: baseline reader…")
	if err := burstBaseline(ctx, cfg, dir, load, b); err != nil {
		return nil, err
	}
	cfg.progress("burst: pincer…")
	run, err := burstPincer(ctx, cfg, filepath.Join(dir, "pincer"), load, "burst", b.Baseline.Seconds)
	if err != nil {
		return nil, err
	}
	b.Pincer, b.WriteSeconds, b.ReplySeconds, b.LoggedSeconds = run.Process, run.WriteSeconds, run.ReplySeconds, run.LoggedSeconds
	b.Writes = run.Writes
	b.Replies, b.Accounted, b.ModelRequests, b.TurnsReplied = run.Replies, run.Accounted, run.ModelRequests, run.TurnsReplied
	b.DriverCPUSeconds, b.Problems = run.DriverCPUSeconds, append(b.Problems, run.Problems...)
	b.Cluster = run.Cluster
	if b.Baseline.EventsPerSecond > 0 {
		b.Ratio = b.Pincer.EventsPerSecond / b.Baseline.EventsPerSecond
	}
	if cfg.Quotes > 0 {
		sh.quotes = cfg.Quotes
		quoted := generate(sh)
		cfg.progress("burst: pincer, %.0f%% of the messages quoting another (%d)…", 100*cfg.Quotes, quoted.Quoting)
		q, err := burstPincer(ctx, cfg, filepath.Join(dir, "pincer-quotes"), quoted, "burst with quotes", b.Baseline.Seconds)
		if err != nil {
			return nil, err
		}
		q.Share, q.Quoting = cfg.Quotes, quoted.Quoting
		if b.Pincer.EventsPerSecond > 0 {
			q.Ratio = q.Process.EventsPerSecond / b.Pincer.EventsPerSecond
		}
		b.Quoted = q
	}
	return b, nil
}

var readerEvents = regexp.MustCompile(`events (\d+)`)

// burstBaseline runs the baseline's reader on the burst.
func burstBaseline(ctx context.Context, cfg *Config, dir string, load Load, b *BurstReport) error {
	q, reader, err := startBaseline(ctx, cfg, dir)
	if err != nil {
		return err
	}
	defer q.close()
	defer func() { _ = reader.stop(5 * time.Second) }() // stopped below unless a step fails
	last := load.Frames[len(load.Frames)-1]
	replied := q.expect(last.ID)
	pid := reader.cmd.Process.Pid
	samples := startSampler(ctx, pid, endpoint{})
	u0, err := procUsage(pid)
	if err != nil {
		return err
	}
	run, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	start := time.Now()
	if err := q.push(run, load.Frames); err != nil {
		return fmt.Errorf("bench: baseline: %w", err)
	}
	written := time.Since(start)
	b.BaselineWrites = q.writes()
	var end time.Time
	select {
	case end = <-replied:
	case <-run.Done():
		return fmt.Errorf("bench: the baseline reader did not answer the @ within %s: %w", cfg.Timeout, run.Err())
	}
	u1, err := procUsage(pid)
	if err != nil {
		return err
	}
	seen := samples.finish(ctx)
	if err := reader.stop(10 * time.Second); err != nil {
		return err
	}
	b.BaselineWriteSeconds = written.Seconds()
	b.Baseline = processReport(len(load.Frames), end.Sub(start), u0, u1, u1.hwm, seen)
	delivered, duplicated, stray := q.tally(map[int64]bool{last.ID: true})
	b.BaselineReplies = Replies{Expected: 1, Delivered: delivered, Duplicated: duplicated, Stray: stray}
	b.BaselineDecoded = decoded(reader)
	return nil
}

// startBaseline starts a simulator and the baseline's reader on it, and
// waits until the reader is connected.
func startBaseline(ctx context.Context, cfg *Config, dir string) (*qq, *child, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("bench: %w", err)
	}
	q, err := startQQ(SelfID, cfg.WriteBatch)
	if err != nil {
		return nil, nil, err
	}
	reader, err := startChild("baseline reader", cfg.Reader(q.url, SelfID), filepath.Join(dir, "baseline.log"))
	if err != nil {
		q.close()
		return nil, nil, err
	}
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := q.connected(wait); err != nil {
		_ = reader.stop(5 * time.Second)
		q.close()
		return nil, nil, fmt.Errorf("bench: the baseline reader did not connect: %w%s", err, reader.logTail())
	}
	return q, reader, nil
}

// decoded is how many events the stopped reader said it decoded, -1
// when it did not say.
func decoded(reader *child) int {
	n := -1
	for line := range reader.lines {
		if m := readerEvents.FindStringSubmatch(line); m != nil {
			n, _ = strconv.Atoi(m[1])
		}
	}
	return n
}

// burstPincer runs a fresh pincer on the burst load; what names the run
// in its problems.
// A profile (-profile) of it lasts the baseline's window (window
// seconds), rounded to whole seconds: pincer's own is not known before.
func burstPincer(ctx context.Context, cfg *Config, dir string, load Load, what string, window float64) (*BurstRun, error) {
	b := &BurstRun{}
	r, err := startPincer(ctx, cfg, dir)
	if err != nil {
		return nil, err
	}
	defer r.close()
	logged, closeLog, err := r.logCounter(ctx)
	if err != nil {
		return nil, err
	}
	defer closeLog()
	before, err := logged.count(ctx)
	if err != nil {
		return nil, err
	}
	last := load.Frames[len(load.Frames)-1]
	replied := r.qq.expect(last.ID)
	w, err := r.watch(ctx)
	if err != nil {
		return nil, err
	}
	self0 := selfCPU()
	writes0 := r.qq.writes()
	profiled := r.profile(ctx, cfg, profileName(dir), time.Duration(window*float64(time.Second)))
	run, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	start := time.Now()
	writeErr := make(chan error, 1)
	var written time.Duration
	var kill *KillReport
	go func() {
		err := func() error {
			if !cfg.Kill {
				return r.qq.push(run, load.Frames)
			}
			// Halfway, the holder is killed; the rest of the burst waits
			// for the next connection, as a burst piled up at the
			// implementation does.
			half := len(load.Frames) / 2
			if err := r.qq.push(run, load.Frames[:half]); err != nil {
				return err
			}
			var err error
			if kill, err = r.killAndWait(run, cfg, half); err != nil {
				return err
			}
			return r.qq.push(run, load.Frames[half:])
		}()
		written = time.Since(start)
		writeErr <- err
	}()
	var repliedAt time.Time
	writing := writeErr
wait:
	for repliedAt.IsZero() {
		select {
		case repliedAt = <-replied:
		case err := <-writing:
			if err != nil {
				return nil, fmt.Errorf("bench: %s: %w%s", what, err, r.logTails())
			}
			writing = nil
		case <-run.Done():
			break wait
		}
	}
	if writing != nil {
		// The @ is the last frame, so the writer is done or failing.
		if err := <-writing; err != nil && run.Err() == nil {
			return nil, fmt.Errorf("bench: %s: %w%s", what, err, r.logTails())
		}
	}
	if repliedAt.IsZero() {
		b.Problems = append(b.Problems, fmt.Sprintf("%s: pincer did not answer the final @ within %s", what, cfg.Timeout))
	}
	// The @'s chat may be done before the others: wait until every
	// message is in the inbound log too. After a kill some never come:
	// then until the others own every partition and the log has not
	// grown for a while (quiet), and its last growth ends the run.
	var loggedAt time.Time
	if cfg.Kill {
		loggedAt = r.settle(run, logged, quiet(cfg))
	}
	poll := 10 * time.Millisecond
	if r.pg != nil {
		poll = 50 * time.Millisecond
	}
	for !cfg.Kill {
		n, err := logged.count(run)
		if err == nil && n-before >= len(load.Frames) {
			loggedAt = time.Now()
			break
		}
		if run.Err() != nil {
			break
		}
		time.Sleep(poll)
	}
	end := repliedAt
	if loggedAt.After(end) {
		end = loggedAt
	}
	if end.IsZero() {
		end = time.Now()
	}
	after, err := w.now()
	if err != nil {
		return nil, err
	}
	self1 := selfCPU()
	seen := w.finish(ctx)
	b.Process, b.Cluster = w.report(len(load.Frames), end.Sub(start), after, after, seen)
	b.GetMsg = r.qq.calls("get_msg")
	b.DriverCPUSeconds = (self1 - self0).Seconds()
	b.WriteSeconds = written.Seconds()
	b.Writes = r.qq.writes() - writes0
	if !repliedAt.IsZero() {
		b.ReplySeconds = repliedAt.Sub(start).Seconds()
	}
	if !loggedAt.IsZero() {
		b.LoggedSeconds = loggedAt.Sub(start).Seconds()
	}
	b.ModelRequests = r.model.count()
	b.TurnsReplied = r.turns(ctx, seen, b.Cluster, 1)
	if err := profiled(); err != nil {
		b.Problems = append(b.Problems, err.Error())
	}
	closeLog()
	if err := r.stop(); err != nil {
		b.Problems = append(b.Problems, fmt.Sprintf("%s: pincer did not stop cleanly: %v", what, err))
	}
	if b.Replies, b.Accounted, err = r.account(ctx, load, map[int64]bool{last.ID: true}, b.Cluster, kill); err != nil {
		return nil, err
	}
	b.Problems = append(b.Problems, b.Replies.problems(what)...)
	b.Problems = append(b.Problems, b.Accounted.problems(what)...)
	if b.Cluster != nil {
		b.Problems = append(b.Problems, b.Cluster.Kill.problems(what)...)
	}
	return b, nil
}

// runSteady sends the steady rate to the baseline, to a fresh pincer as
// chatter only, and to another fresh pincer with the @s.
func runSteady(ctx context.Context, cfg *Config, dir string, unix int64) (*SteadyReport, error) {
	groups := cfg.groups(DefaultSteadyGroups)
	count := int(int64(cfg.Rate) * int64(cfg.Duration) / int64(time.Second))
	if count < 1 {
		count = 1
	}
	sh := shape{
		self: SelfID, count: count, groups: groups, senders: cfg.Senders, every: cfg.Every, quotes: cfg.Quotes,
		firstID: 2_000_000_000, unixTime: unix, seed: 2,
	}
	load := generate(sh)
	// The chatter has no @s, and quotes as many messages in all: the
	// share asked is of the messages that do not @ the bot.
	sh.every, sh.quotes, sh.seed = 0, cfg.Quotes*(1-1/float64(cfg.Every)), 3
	chatter := generate(sh)
	s := &SteadyReport{
		Rate: cfg.Rate, Seconds: cfg.Duration.Seconds(), Every: cfg.Every, Groups: groups, Senders: cfg.Senders,
		Realtime: cfg.Realtime, History: cfg.History, ModelLatencyMs: ms(cfg.Latency),
		Quotes: cfg.Quotes, WriteBatchBytes: cfg.WriteBatch, SendGapMs: cfg.sendGap(),
	}
	cfg.progress("steady: %d events/s for %s over %d groups, every %d%s an @ of the bot; three runs of %s each",
		cfg.Rate, cfg.Duration, groups, cfg.Every, ordinal(cfg.Every), cfg.Duration)
	// The @s go round the groups: one group hears one every spacing.
	spacing := time.Duration(int64(groups) * int64(cfg.Every) * int64(time.Second) / int64(cfg.Rate))
	if gap := time.Duration(cfg.sendGap()) * time.Millisecond; spacing < 2*gap && len(load.Frames) > groups*cfg.Every {
		cfg.progress("steady: warning: each group gets an @ every %s; pincer sends to one chat at most about once every %s "+
			"and merges an @ that comes while the previous reply in its chat is still on its way (messages.queue.mode steer), "+
			"so some @s will get no reply of their own; use more -groups", spacing, gap)
	}
	if perSecond := float64(cfg.Rate) / float64(cfg.Every); perSecond*cfg.Latency.Seconds() > 8 {
		cfg.progress("steady: warning: %.0f @s a second at %s each need more model calls at once than pincer's default "+
			"agents.defaults.maxConcurrent (8); the @s will queue", perSecond, cfg.Latency)
	}
	cfg.progress("steady: baseline reader, with @s…")
	if err := steadyBaseline(ctx, cfg, filepath.Join(dir, "baseline"), load, s); err != nil {
		return nil, err
	}
	cfg.progress("steady: pincer, chatter only…")
	c, err := steadyPincer(ctx, cfg, filepath.Join(dir, "chatter"), chatter, steadyChatter)
	if err != nil {
		return nil, err
	}
	s.Chatter = c
	cfg.progress("steady: pincer, with @s…")
	w, err := steadyPincer(ctx, cfg, filepath.Join(dir, "pincer"), load, steadyWith)
	if err != nil {
		return nil, err
	}
	s.SteadyRun = *w
	s.derive()
	return s, nil
}

// mentionIDs are the load's @s of the bot.
func mentionIDs(load Load) map[int64]bool {
	m := map[int64]bool{}
	for _, f := range load.Frames {
		if f.Mention {
			m[f.ID] = true
		}
	}
	return m
}

// driven is how a steady stream went out.
type driven struct {
	writtenAt map[int64]time.Time // when each @ was written
	lag       time.Duration       // the furthest behind its schedule
	elapsed   time.Duration       // first frame due to the last written
	writes    int
}

// drive sends the load at rate frames a second, each frame when it is
// due. With a write batch, the frames due at once (when the writer is
// behind) go out together. halfway, when set, is started on a goroutine
// of its own once half the frames are written, with their number.
func drive(ctx context.Context, q *qq, load Load, rate, batch int, halfway func(int)) (driven, error) {
	d := driven{writtenAt: map[int64]time.Time{}}
	writes0 := q.writes()
	start := time.Now()
	due := func(i int) time.Time { return start.Add(time.Duration(int64(i) * int64(time.Second) / int64(rate))) }
	for i := 0; i < len(load.Frames); {
		at := due(i)
		if w := time.Until(at); w > 0 {
			time.Sleep(w)
		}
		now := time.Now()
		d.lag = max(d.lag, now.Sub(at))
		j := i + 1
		if batch > 0 {
			for j < len(load.Frames) && !due(j).After(now) {
				j++
			}
		}
		if err := q.push(ctx, load.Frames[i:j]); err != nil {
			return d, err
		}
		written := time.Now()
		for _, f := range load.Frames[i:j] {
			if f.Mention {
				d.writtenAt[f.ID] = written
			}
		}
		if halfway != nil && j >= len(load.Frames)/2 {
			go halfway(j)
			halfway = nil
		}
		i = j
	}
	d.elapsed = time.Since(start)
	d.writes = q.writes() - writes0
	return d, nil
}

// awaitReplies waits until every @ has its reply or ctx ends, then a
// moment more for doubled replies to show.
func awaitReplies(ctx context.Context, q *qq, mentions map[int64]bool) {
	for ctx.Err() == nil {
		if delivered, _, _ := q.tally(mentions); delivered >= len(mentions) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
}

// steadyBaseline runs the baseline's reader on the steady stream.
func steadyBaseline(ctx context.Context, cfg *Config, dir string, load Load, s *SteadyReport) error {
	q, reader, err := startBaseline(ctx, cfg, dir)
	if err != nil {
		return err
	}
	defer q.close()
	defer func() { _ = reader.stop(5 * time.Second) }() // stopped below unless a step fails
	mentions := mentionIDs(load)
	pid := reader.cmd.Process.Pid
	samples := startSampler(ctx, pid, endpoint{})
	u0, err := procUsage(pid)
	if err != nil {
		return err
	}
	d, err := drive(ctx, q, load, cfg.Rate, cfg.WriteBatch, nil)
	if err != nil {
		return fmt.Errorf("bench: steady baseline: %w%s", err, reader.logTail())
	}
	u1, err := procUsage(pid)
	if err != nil {
		return err
	}
	drain, cancel := context.WithTimeout(ctx, 10*time.Second)
	awaitReplies(drain, q, mentions)
	cancel()
	u2, err := procUsage(pid)
	if err != nil {
		return err
	}
	seen := samples.finish(ctx)
	if err := reader.stop(10 * time.Second); err != nil {
		return err
	}
	s.Baseline = processReport(len(load.Frames), d.elapsed, u0, u1, u2.hwm, seen)
	s.BaselineWriterLagMaxMs, s.BaselineWrites = ms(d.lag), d.writes
	delivered, duplicated, stray := q.tally(mentions)
	s.BaselineReplies = Replies{Expected: len(mentions), Delivered: delivered, Duplicated: duplicated, Stray: stray}
	s.BaselineDecoded = decoded(reader)
	var toReply []time.Duration
	for id, w := range d.writtenAt {
		if sent := q.sent(id); len(sent) > 0 {
			toReply = append(toReply, sent[0].Sub(w))
		}
	}
	s.BaselineMentionToReply = latency(toReply)
	return nil
}

// steadyPincer runs a fresh pincer on a steady stream; what names the
// run in its problems.
func steadyPincer(ctx context.Context, cfg *Config, dir string, load Load, what string) (*SteadyRun, error) {
	r, err := startPincer(ctx, cfg, dir)
	if err != nil {
		return nil, err
	}
	defer r.close()
	s := &SteadyRun{Mentions: load.Mentions, Quoting: load.Quoting}
	mentions := mentionIDs(load)
	w, err := r.watch(ctx)
	if err != nil {
		return nil, err
	}
	self0 := selfCPU()
	profiled := r.profile(ctx, cfg, profileName(dir), cfg.Duration)
	// With -kill, the holder is killed halfway, beside the stream, which
	// goes on at its pace: what falls due while no instance holds the
	// connection is not delivered.
	var halfway func(int)
	killed := make(chan error, 1)
	var kill *KillReport
	if cfg.Kill {
		halfway = func(i int) {
			var err error
			kill, err = r.killAndWait(ctx, cfg, i)
			killed <- err
		}
	}
	d, err := drive(ctx, r.qq, load, cfg.Rate, cfg.WriteBatch, halfway)
	if err != nil {
		return nil, fmt.Errorf("bench: %s: %w%s", what, err, r.logTails())
	}
	after, err := w.now()
	if err != nil {
		return nil, err
	}
	self1 := selfCPU()
	if cfg.Kill {
		if err := <-killed; err != nil {
			return nil, fmt.Errorf("bench: %s: %w", what, err)
		}
	}
	// The last @s get their answers.
	wait := min(cfg.Timeout, 30*time.Second+2*cfg.Latency)
	if cfg.Kill {
		// The killed instance's partitions are owned again within about
		// two TTLs, and the log must then stay quiet for one.
		wait += 3 * cfg.LeaseTTL
	}
	drain, cancel := context.WithTimeout(ctx, wait)
	if err := r.awaitReplies(drain, cfg, mentions); err != nil {
		cancel()
		return nil, err
	}
	cancel()
	peak, err := w.now()
	if err != nil {
		return nil, err
	}
	seen := w.finish(ctx)
	s.Pincer, s.Cluster = w.report(len(load.Frames), d.elapsed, after, peak, seen)
	s.WriterLagMaxMs, s.Writes = ms(d.lag), d.writes
	s.DriverCPUSeconds = (self1 - self0).Seconds()
	s.ModelRequests = r.model.count()
	s.GetMsg = r.qq.calls("get_msg")
	want := len(mentions)
	if cfg.Kill {
		want, _, _ = r.qq.tally(mentions)
	}
	s.TurnsReplied = r.turns(ctx, seen, s.Cluster, want)
	if err := profiled(); err != nil {
		s.Problems = append(s.Problems, err.Error())
	}
	if err := r.stop(); err != nil {
		s.Problems = append(s.Problems, fmt.Sprintf("%s: pincer did not stop cleanly: %v", what, err))
	}
	var toRequest, toSend []time.Duration
	for id, w := range d.writtenAt {
		req, done := r.model.times(id)
		if !req.IsZero() {
			toRequest = append(toRequest, req.Sub(w))
		}
		if sent := r.qq.sent(id); !done.IsZero() && len(sent) > 0 {
			toSend = append(toSend, sent[0].Sub(done))
		}
	}
	s.MentionToRequest, s.DoneToSend = latency(toRequest), latency(toSend)
	if s.Replies, s.Accounted, err = r.account(ctx, load, mentions, s.Cluster, kill); err != nil {
		return nil, err
	}
	if s.Cluster != nil {
		s.Problems = append(s.Problems, s.Cluster.Kill.problems(what)...)
	}
	return s, nil
}

// profileName names the profile of the run in dir: its scenario and run,
// as burst-pincer or steady-chatter.
func profileName(dir string) string {
	return filepath.Base(filepath.Dir(dir)) + "-" + filepath.Base(dir)
}

// turnsReplied is pincer's count of turns that replied
// (pincer_turns_total{outcome="replied"}). A turn is counted once its
// reply is confirmed, a moment after the simulator saw the send, so it
// is read again for up to 2 s until it reaches want.
func turnsReplied(ctx context.Context, at endpoint, last metrics, want int) int {
	n := int(last.sum("pincer_turns_total", `outcome="replied"`))
	deadline := time.Now().Add(2 * time.Second)
	for n < want && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		if m, err := scrape(ctx, at); err == nil {
			n = int(m.sum("pincer_turns_total", `outcome="replied"`))
		}
	}
	return n
}

func (m *model) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests
}

func (m *model) times(id int64) (req, done time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.firstReq[id], m.firstDone[id]
}

// latency summarizes durations: nearest-rank percentiles.
func latency(d []time.Duration) Latency {
	if len(d) == 0 {
		return Latency{}
	}
	slices.Sort(d)
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(d))+0.999999) - 1
		return d[min(max(i, 0), len(d)-1)]
	}
	return Latency{N: len(d), P50Ms: ms(rank(0.50)), P99Ms: ms(rank(0.99)), MaxMs: ms(d[len(d)-1])}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// processReport is what a process did between two readings of its usage
// and a sampler's view of the same window; hwm is its peak RSS.
func processReport(events int, wall time.Duration, before, after usage, hwm int64, seen sampled) Process {
	cpu := after.cpu - before.cpu
	p := Process{
		Events: events, Seconds: wall.Seconds(), CPUSeconds: cpu.Seconds(),
		RSSBeforeBytes: before.rss, PeakRSSBytes: hwm, PeakAnonBytes: seen.peakAnon,
		GoroutinesPeak: seen.goroutinesPeak, GoroutinesEnd: seen.goroutinesEnd,
	}
	if wall > 0 {
		p.EventsPerSecond = float64(events) / wall.Seconds()
	}
	if cpu > 0 {
		p.EventsPerCPUSecond = float64(events) / cpu.Seconds()
	}
	if events > 0 {
		p.CPUPerEventUs = 1e6 * cpu.Seconds() / float64(events)
		p.AllocatedPerEventBytes = seen.allocated / float64(events)
		if after.switches > before.switches {
			p.SwitchesPerEvent = float64(after.switches-before.switches) / float64(events)
		}
		if after.reads > before.reads || after.writes > before.writes {
			p.ReadCallsPerEvent = float64(after.reads-before.reads) / float64(events)
			p.WriteCallsPerEvent = float64(after.writes-before.writes) / float64(events)
		}
	}
	return p
}

func ordinal(n int) string {
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return "th"
	case n%10 == 1:
		return "st"
	case n%10 == 2:
		return "nd"
	case n%10 == 3:
		return "rd"
	}
	return "th"
}
