package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The cluster mode (--instances N): every pincer run of a scenario is N
// pincer processes meeting on one NATS server and one PostgreSQL schema
// of the run's own, against the same simulator, model and load.

// Defaults of the cluster mode.
const (
	DefaultPartitions = 32
	DefaultLeaseTTL   = 6 * time.Second
	// NATSServerVersion is the nats-server the bench suggests installing.
	NATSServerVersion = "v2.15.2"
)

// What pincer creates on the NATS server, which a run given a server
// (-nats) deletes before it starts.
const natsStream = "pincer_inbound"

var natsBuckets = []string{"pincer_leases", "pincer_progress"}

// clusterFill checks the cluster's settings, before anything runs.
func (c *Config) clusterFill() error {
	if c.Instances < 0 {
		return fmt.Errorf("bench: instances must not be negative, got %d", c.Instances)
	}
	if c.Instances == 0 {
		if c.Kill {
			return errors.New("bench: -kill needs --instances 2 or more")
		}
		return nil
	}
	if c.Kill && c.Instances < 2 {
		return fmt.Errorf("bench: -kill needs --instances 2 or more (another instance takes over), got %d", c.Instances)
	}
	if c.Profile != "" {
		return errors.New("bench: -profile measures one pincer; it is not available with --instances")
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.LeaseTTL < time.Second {
		return fmt.Errorf("bench: the lease TTL must be at least 1s, got %s", c.LeaseTTL)
	}
	if strings.TrimSpace(c.PostgresDSN) == "" {
		return errors.New("bench: --instances needs a PostgreSQL server: set PINCER_BENCH_PG_DSN " +
			"(e.g. postgres://pincer@127.0.0.1:5432/pincer_bench?sslmode=disable); each run gets a schema of its own there")
	}
	if c.NATS == "" {
		if c.NATSServer == "" {
			c.NATSServer = "nats-server"
		}
		path, err := exec.LookPath(c.NATSServer)
		if err != nil {
			return fmt.Errorf("bench: --instances needs a NATS server with JetStream: pass -nats nats://host:4222, "+
				"or put nats-server on PATH (go install github.com/nats-io/nats-server/v2@%s): %w", NATSServerVersion, err)
		}
		c.NATSServer = path
	}
	return nil
}

// natsRun is the NATS server of one run: started by the bench (its own
// process and store, stopped after), or the one -nats names, emptied of
// what an earlier run left.
type natsRun struct {
	url    string
	server *child // nil for -nats
	dir    string
}

// startNATS gives a run its NATS server, with JetStream.
func startNATS(ctx context.Context, cfg *Config, dir string) (*natsRun, error) {
	if cfg.NATS != "" {
		n := &natsRun{url: cfg.NATS}
		if err := n.check(ctx, true); err != nil {
			return nil, err
		}
		return n, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: nats-server: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	n := &natsRun{url: "nats://127.0.0.1:" + strconv.Itoa(port), dir: filepath.Join(dir, "nats")}
	if err := os.MkdirAll(n.dir, 0o700); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	cmd := exec.Command(cfg.NATSServer, "-js", "-sd", n.dir, "-a", "127.0.0.1", "-p", strconv.Itoa(port))
	if n.server, err = startChild("nats-server", cmd, filepath.Join(dir, "nats-server.log")); err != nil {
		return nil, err
	}
	wait, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		err := n.check(wait, false)
		if err == nil {
			return n, nil
		}
		if done, _ := n.server.exited(); done || wait.Err() != nil {
			n.stop()
			return nil, fmt.Errorf("%w%s", err, n.server.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// check connects and asks JetStream for the account's limits; with
// reset, it deletes the stream and buckets pincer made there before.
func (n *natsRun) check(ctx context.Context, reset bool) error {
	where := n.url
	if u, err := url.Parse(where); err == nil {
		u.User = nil
		where = u.String()
	}
	nc, err := nats.Connect(n.url, nats.Name("pincer bench"), nats.NoReconnect(), nats.Timeout(2*time.Second))
	if err != nil {
		return fmt.Errorf("bench: NATS at %s: %w", where, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err == nil {
		_, err = js.AccountInfo(ctx)
	}
	if err != nil {
		return fmt.Errorf("bench: NATS at %s has no JetStream (start it with -js): %w", where, err)
	}
	if !reset {
		return nil
	}
	if err := js.DeleteStream(ctx, natsStream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("bench: NATS at %s: delete stream %s: %w", where, natsStream, err)
	}
	for _, b := range natsBuckets {
		if err := js.DeleteKeyValue(ctx, b); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("bench: NATS at %s: delete bucket %s: %w", where, b, err)
		}
	}
	return nil
}

func (n *natsRun) stop() {
	if n != nil && n.server != nil {
		_ = n.server.stop(10 * time.Second)
	}
}

// pgSchema is a run's schema on the PostgreSQL server.
type pgSchema struct {
	server string // the server's DSN, as given
	name   string
	dsn    string // the server's DSN with search_path=name
}

// createSchema creates a schema of the run's own.
func createSchema(ctx context.Context, server string) (*pgSchema, error) {
	s := &pgSchema{server: server, name: "pincer_bench_" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return nil, fmt.Errorf("bench: PostgreSQL (PINCER_BENCH_PG_DSN): %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{s.name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("bench: PostgreSQL: create schema %s: %w", s.name, err)
	}
	if strings.Contains(server, "://") {
		u, err := url.Parse(server)
		if err != nil {
			return nil, fmt.Errorf("bench: PINCER_BENCH_PG_DSN: %w", err)
		}
		q := u.Query()
		q.Set("search_path", s.name)
		u.RawQuery = q.Encode()
		s.dsn = u.String()
	} else {
		s.dsn = strings.TrimSpace(server) + " search_path=" + s.name
	}
	return s, nil
}

// drop removes the schema and what it holds.
func (s *pgSchema) drop(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.server)
	if err != nil {
		return fmt.Errorf("bench: drop schema %s: %w", s.name, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{s.name}.Sanitize()+` CASCADE`); err != nil {
		return fmt.Errorf("bench: drop schema %s: %w", s.name, err)
	}
	return nil
}

// pgLog reads the shared messages table of a run's schema.
type pgLog struct{ conn *pgx.Conn }

func openPGLog(ctx context.Context, dsn string) (*pgLog, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("bench: PostgreSQL: %w", err)
	}
	return &pgLog{conn: conn}, nil
}

func (l *pgLog) close() { _ = l.conn.Close(context.Background()) }

// count is the rows of the messages table.
func (l *pgLog) count(ctx context.Context) (int, error) {
	var n int
	if err := l.conn.QueryRow(ctx, `SELECT count(*) FROM messages`).Scan(&n); err != nil {
		return 0, fmt.Errorf("bench: count the inbound log: %w", err)
	}
	return n, nil
}

// ids is how many times each message id is in the messages table.
func (l *pgLog) ids(ctx context.Context) (map[int64]int, error) {
	rows, err := l.conn.Query(ctx, `SELECT message_id FROM messages`)
	if err != nil {
		return nil, fmt.Errorf("bench: read the inbound log: %w", err)
	}
	defer rows.Close()
	seen := map[int64]int{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("bench: read the inbound log: %w", err)
		}
		if id, err := strconv.ParseInt(s, 10, 64); err == nil {
			seen[id]++
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("bench: read the inbound log: %w", err)
	}
	return seen, nil
}

// accountPG checks which of the load's messages the cluster's shared log
// holds; seen is what ids read. With the kill, messages may be lost.
func accountPG(load Load, seen map[int64]int, killed bool, undelivered int) Accounting {
	a := Accounting{Sent: len(load.Frames), Source: "the cluster's shared inbound log (PostgreSQL table messages), read after the instances stopped",
		MayLose: killed, NotDelivered: undelivered}
	for _, f := range load.Frames {
		if n := seen[f.ID]; n > 0 {
			a.Logged++
			a.Doubled += n - 1
		}
	}
	a.Missing = a.Sent - a.Logged
	return a
}

// instance is one pincer process of a cluster run (the only one of a
// single run).
type instance struct {
	name   string
	pincer *child
	at     endpoint
	// parts0 is the partitions it owned as the load began.
	parts0 int
	// With the kill: whether it was killed, and its usage and metrics
	// read just before.
	killed       bool
	final        usage
	finalMetrics metrics
}

// clusterConfig is instance i's configuration: the single run's, on the
// shared PostgreSQL schema and NATS server, without the web chat.
func clusterConfig(cfg *Config, base map[string]any, i int, dsn, natsURL string) map[string]any {
	conf := map[string]any{}
	for k, v := range base {
		conf[k] = v
	}
	conf["store"] = map[string]any{"driver": "postgres", "dsn": dsn}
	conf["cluster"] = map[string]any{
		"instance":   instanceName(i),
		"nats":       map[string]any{"url": natsURL},
		"partitions": DefaultPartitions,
		"leaseTtlMs": cfg.LeaseTTL.Milliseconds(),
	}
	// info, so the run's logs tell who held what and when.
	conf["log"] = map[string]any{"level": "info"}
	return conf
}

func instanceName(i int) string { return "bench-" + strconv.Itoa(i) }

// startCluster starts cfg.Instances pincers on the rig's simulators, a
// NATS server and a schema of their own, and waits until one holds the
// QQ connection and the partitions are shared out.
func (r *rig) startCluster(ctx context.Context, cfg *Config, base map[string]any) error {
	var err error
	if r.nats, err = startNATS(ctx, cfg, r.dir); err != nil {
		return err
	}
	if r.pg, err = createSchema(ctx, cfg.PostgresDSN); err != nil {
		return err
	}
	wait, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for i := range cfg.Instances {
		conf := clusterConfig(cfg, base, i, r.pg.dsn, r.nats.url)
		conf["agents"] = map[string]any{"defaults": map[string]any{
			"model":     map[string]any{"primary": "sim/bench"},
			"workspace": filepath.Join(r.dir, instanceName(i), "workspace"),
		}}
		text, err := json.MarshalIndent(conf, "", "  ")
		if err != nil {
			return fmt.Errorf("bench: config: %w", err)
		}
		path := filepath.Join(r.dir, instanceName(i)+".json5")
		if err := os.WriteFile(path, text, 0o600); err != nil {
			return fmt.Errorf("bench: config: %w", err)
		}
		c, err := startChild(instanceName(i), cfg.Serve(path), filepath.Join(r.dir, instanceName(i)+".log"))
		if err != nil {
			return err
		}
		inst := &instance{name: instanceName(i), pincer: c}
		r.insts = append(r.insts, inst)
		line, err := c.line(wait, "pincer is ready")
		if err != nil {
			return err
		}
		m := readyURL.FindStringSubmatch(line)
		if m == nil {
			return fmt.Errorf("bench: no URL in %s's ready line %q", inst.name, line)
		}
		inst.at = endpoint{base: m[1]}
	}
	r.pincer, r.at = r.insts[0].pincer, r.insts[0].at
	if err := r.qq.connected(wait); err != nil {
		return fmt.Errorf("bench: no instance connected to the simulator: %w%s", err, r.logTails())
	}
	if err := r.qq.pushRaw(wait, r.qq.lifecycle()); err != nil {
		return err
	}
	for _, inst := range r.insts {
		if err := healthy(wait, inst.at.base); err != nil {
			return fmt.Errorf("%s: %w%s", inst.name, err, inst.pincer.logTail())
		}
	}
	return r.waitShared(wait)
}

// logTails is the end of every instance's log.
func (r *rig) logTails() string {
	var b strings.Builder
	for _, inst := range r.insts {
		b.WriteString(inst.pincer.logTail())
	}
	return b.String()
}

// health is an instance's /healthz components, by name.
func health(ctx context.Context, at endpoint) (map[string]component, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := at.get(ctx, "/healthz")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	var h struct {
		Components []component `json:"components"`
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return nil, fmt.Errorf("bench: healthz: %w", err)
	}
	out := map[string]component{}
	for _, c := range h.Components {
		out[c.Name] = c
	}
	return out, nil
}

type component struct{ Name, Status, Reason string }

// partitions is how many partitions an instance says it owns
// (/healthz: "instance <name> of <members>, owns <n> of <total>
// partitions"); -1 when it does not say.
func partitions(ctx context.Context, at endpoint) int {
	h, err := health(ctx, at)
	if err != nil {
		return -1
	}
	var name string
	var members, n, total int
	if _, err := fmt.Sscanf(h["cluster"].Reason, "instance %s of %d, owns %d of %d partitions", &name, &members, &n, &total); err != nil {
		return -1
	}
	return n
}

// waitShared waits until the instances own every partition between
// them, each some, and notes each one's share.
func (r *rig) waitShared(ctx context.Context) error {
	for {
		sum, each := 0, true
		for _, inst := range r.insts {
			inst.parts0 = partitions(ctx, inst.at)
			sum += max(inst.parts0, 0)
			each = each && inst.parts0 > 0
		}
		if sum == DefaultPartitions && each {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: the instances never shared the %d partitions out (%d owned): %w%s", DefaultPartitions, sum, ctx.Err(), r.logTails())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// holder is the instance holding the QQ connection: its QQ account on
// /healthz is up, where the others say "held elsewhere".
func (r *rig) holder(ctx context.Context) (*instance, error) {
	for _, inst := range r.insts {
		if inst.killed {
			continue
		}
		h, err := health(ctx, inst.at)
		if err != nil {
			continue
		}
		if c, ok := h["onebot/default"]; ok && c.Status == "ok" && c.Reason != "held elsewhere" {
			return inst, nil
		}
	}
	return nil, errors.New("bench: no instance says it holds the QQ connection")
}

// killHolder kills (SIGKILL) the instance holding the QQ connection,
// after reading its usage and metrics, and returns it and when it was
// killed.
func (r *rig) killHolder(ctx context.Context) (*instance, time.Time, error) {
	h, err := r.holder(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	m, _ := scrape(ctx, h.at)
	u, err := procUsage(h.pincer.cmd.Process.Pid)
	if err != nil {
		return nil, time.Time{}, err
	}
	h.final, h.finalMetrics = u, m
	at := time.Now()
	if err := h.pincer.cmd.Process.Kill(); err != nil {
		return nil, time.Time{}, fmt.Errorf("bench: kill %s: %w", h.name, err)
	}
	h.killed = true
	return h, at, nil
}

// watch measures a run's instances: a sampler and the usage as the
// window begins, for each.
type watch struct {
	insts    []*instance
	samplers []*sampler
	before   []usage
	// The nats-server the bench started for the run, and its CPU time as
	// the window began.
	nats    *child
	nats0   time.Duration
	natsCPU time.Duration // over the window, once now was called
}

func (r *rig) watch(ctx context.Context) (*watch, error) {
	w := &watch{insts: r.insts}
	if r.nats != nil && r.nats.server != nil {
		if u, err := procUsage(r.nats.server.cmd.Process.Pid); err == nil {
			w.nats, w.nats0 = r.nats.server, u.cpu
		}
	}
	for _, inst := range r.insts {
		pid := inst.pincer.cmd.Process.Pid
		w.samplers = append(w.samplers, startSampler(ctx, pid, inst.at))
		u, err := procUsage(pid)
		if err != nil {
			return nil, err
		}
		w.before = append(w.before, u)
	}
	return w, nil
}

// now reads each instance's usage; a killed one's is what was read just
// before the kill.
func (w *watch) now() ([]usage, error) {
	var out []usage
	if w.nats != nil && w.natsCPU == 0 {
		if u, err := procUsage(w.nats.cmd.Process.Pid); err == nil {
			w.natsCPU = u.cpu - w.nats0
		}
	}
	for _, inst := range w.insts {
		if inst.killed {
			out = append(out, inst.final)
			continue
		}
		u, err := procUsage(inst.pincer.cmd.Process.Pid)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

func (w *watch) finish(ctx context.Context) []sampled {
	var out []sampled
	for _, s := range w.samplers {
		out = append(out, s.finish(ctx))
	}
	return out
}

// report is the window's Process, over every instance: CPU and
// goroutines summed, the memory figures the largest instance's; and,
// in a cluster, each instance's share.
func (w *watch) report(events int, wall time.Duration, after, peak []usage, seen []sampled) (Process, *ClusterRun) {
	var sum usage
	var before usage
	var s sampled
	for i := range w.insts {
		sum.cpu += after[i].cpu - w.before[i].cpu
		sum.switches += after[i].switches - w.before[i].switches
		sum.reads += after[i].reads - w.before[i].reads
		sum.writes += after[i].writes - w.before[i].writes
		sum.hwm = max(sum.hwm, peak[i].hwm)
		before.rss = max(before.rss, w.before[i].rss)
		s.peakAnon = max(s.peakAnon, seen[i].peakAnon)
		s.goroutinesPeak += seen[i].goroutinesPeak
		s.allocated += seen[i].allocated
		if !w.insts[i].killed {
			s.goroutinesEnd += seen[i].goroutinesEnd
		}
	}
	p := processReport(events, wall, usage{}, sum, sum.hwm, s)
	p.RSSBeforeBytes = before.rss
	if len(w.insts) == 1 && w.insts[0].name == "" {
		return p, nil
	}
	c := &ClusterRun{Instances: len(w.insts), Partitions: DefaultPartitions, NATSCPUSeconds: w.natsCPU.Seconds()}
	for i, inst := range w.insts {
		cpu := (after[i].cpu - w.before[i].cpu).Seconds()
		sh := Share{Instance: inst.name, CPUSeconds: cpu, PeakRSSBytes: peak[i].hwm, PartitionsStart: inst.parts0, Killed: inst.killed}
		if p.CPUSeconds > 0 {
			sh.CPUShare = cpu / p.CPUSeconds
		}
		c.PeakRSSSumBytes += peak[i].hwm
		c.RSSBeforeSumBytes += w.before[i].rss
		c.Shares = append(c.Shares, sh)
	}
	return p, c
}

// finishCluster fills in what the instances say at the end of a run:
// the partitions each owns, and the turns each replied (a killed one's
// as it said before the kill), read again for up to 2 s until they add
// up to want. It returns the sum.
func (r *rig) finishCluster(ctx context.Context, c *ClusterRun, want int) int {
	if c == nil {
		return 0
	}
	read := func() int {
		total := 0
		for i, inst := range r.insts {
			m := inst.finalMetrics
			if !inst.killed {
				if got, err := scrape(ctx, inst.at); err == nil {
					m = got
				}
			}
			c.Shares[i].TurnsReplied = int(m.sum("pincer_turns_total", `outcome="replied"`))
			total += c.Shares[i].TurnsReplied
		}
		return total
	}
	total := read()
	deadline := time.Now().Add(2 * time.Second)
	for total < want && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		total = read()
	}
	r.waitPartitions()
	for i, inst := range r.insts {
		if !inst.killed {
			c.Shares[i].PartitionsEnd = partitions(ctx, inst.at)
		}
	}
	c.Connections, c.MaxConnections = r.qq.ws.counts()
	return total
}

// clusterMethod says how a cluster run is measured.
func clusterMethod(cfg *Config) string {
	nats := "a nats-server the bench starts for each run, with a store of its own"
	if cfg.NATS != "" {
		nats = "the NATS server -nats names, its stream " + natsStream + " and buckets " + strings.Join(natsBuckets, " and ") + " deleted before each run"
	}
	kill := ""
	if cfg.Kill {
		kill = "; halfway through each pincer run's frames the instance holding the QQ connection is killed (SIGKILL)"
	}
	return fmt.Sprintf("each pincer run is %d pincer serve processes in cluster mode (%d partitions, leases of %s), "+
		"on %s, and on a PostgreSQL schema of the run's own; CPU seconds and goroutines are their sum, the memory figures "+
		"the largest instance's; the OneBot simulator, the fake model and the load generator run in the bench process%s",
		cfg.Instances, DefaultPartitions, cfg.LeaseTTL, nats, kill)
}

// rowCounter counts the rows of pincer's inbound log.
type rowCounter interface {
	count(ctx context.Context) (int, error)
}

// logCounter opens the run's inbound log for counting: the SQLite file
// of a single pincer, the cluster's shared table.
func (r *rig) logCounter(ctx context.Context) (rowCounter, func(), error) {
	if r.pg != nil {
		l, err := openPGLog(ctx, r.pg.dsn)
		if err != nil {
			return nil, nil, err
		}
		return l, onlyOnce(l.close), nil
	}
	db, err := openStore(r.db)
	if err != nil {
		return nil, nil, err
	}
	c, err := newLogCounter(ctx, db)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return c, onlyOnce(func() { db.Close() }), nil
}

func onlyOnce(f func()) func() {
	var once sync.Once
	return func() { once.Do(f) }
}

// killAndWait kills the instance holding the QQ connection, atFrame
// frames into the run, and waits for the simulator's next connection (at
// most three lease TTLs and 30 s).
func (r *rig) killAndWait(ctx context.Context, cfg *Config, atFrame int) (*KillReport, error) {
	inst, at, err := r.killHolder(ctx)
	if err != nil {
		return nil, err
	}
	k := &KillReport{Instance: inst.name, AtFrame: atFrame, TakeoverSeconds: -1, PartitionsSeconds: -1, at: at}
	// Beside the connection, the partitions: from the kill until the
	// others own them all.
	r.partsTaken = make(chan float64, 1)
	go func() {
		wait, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*cfg.LeaseTTL+30*time.Second)
		defer cancel()
		for wait.Err() == nil {
			sum := 0
			for _, other := range r.insts {
				if !other.killed {
					sum += max(partitions(wait, other.at), 0)
				}
			}
			if sum == DefaultPartitions {
				r.partsTaken <- time.Since(at).Seconds()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		r.partsTaken <- -1
	}()
	wait, cancel := context.WithTimeout(ctx, 3*cfg.LeaseTTL+30*time.Second)
	defer cancel()
	if next, err := r.qq.ws.acceptedAfter(wait, at); err == nil {
		k.TakeoverSeconds = next.Sub(at).Seconds()
	}
	return k, nil
}

// turns is the turns that replied in the run: from a single pincer's
// metrics, or every instance's (see finishCluster).
func (r *rig) turns(ctx context.Context, seen []sampled, c *ClusterRun, want int) int {
	if c == nil {
		return turnsReplied(ctx, r.at, seen[0].metrics, want)
	}
	return r.finishCluster(ctx, c, want)
}

// account reads, after the run, which of the load's messages pincer took
// in and tallies the replies to its @s (mentions). After a kill, the @s
// expected to be answered are those taken in, and the kill's report
// says what became of them.
func (r *rig) account(ctx context.Context, load Load, mentions map[int64]bool, c *ClusterRun, kill *KillReport) (Replies, Accounting, error) {
	if r.pg == nil {
		delivered, duplicated, stray := r.qq.tally(mentions)
		a, err := account(ctx, r.db, load)
		return Replies{Expected: len(mentions), Delivered: delivered, Duplicated: duplicated, Stray: stray}, a, err
	}
	l, err := openPGLog(ctx, r.pg.dsn)
	if err != nil {
		return Replies{}, Accounting{}, err
	}
	defer l.close()
	seen, err := l.ids(ctx)
	if err != nil {
		return Replies{}, Accounting{}, err
	}
	a := accountPG(load, seen, kill != nil, r.qq.notDelivered())
	expected := mentions
	if kill != nil {
		expected = map[int64]bool{}
		for id := range mentions {
			if seen[id] > 0 {
				expected[id] = true
			} else {
				kill.AnsweredNotTakenIn += len(r.qq.sent(id))
			}
		}
	}
	delivered, duplicated, stray := r.qq.tally(expected)
	if kill != nil {
		kill.MentionsSent, kill.MentionsTakenIn = len(mentions), len(expected)
		kill.RepliesLost, kill.RepliesDoubled = len(expected)-delivered, duplicated
		kill.PartitionsSeconds = r.partsSeconds
		for id := range expected {
			if sent := r.qq.sent(id); len(sent) > 1 && sent[0].Before(kill.at) && sent[1].After(kill.at) {
				kill.DoubledAtKill++
			}
		}
		stray -= kill.AnsweredNotTakenIn // the kill's report says it
		c.Kill = kill
	}
	return Replies{Expected: len(expected), Delivered: delivered, Duplicated: duplicated, Stray: stray}, a, nil
}

// awaitReplies waits until every @ has its reply or ctx ends; after a
// kill, every @ the cluster took in (the log holds it), until that has
// held for half a second; then a moment more for doubled replies to
// show.
func (r *rig) awaitReplies(ctx context.Context, cfg *Config, mentions map[int64]bool) error {
	if !cfg.Kill || r.pg == nil {
		awaitReplies(ctx, r.qq, mentions)
		return nil
	}
	l, err := openPGLog(ctx, r.pg.dsn)
	if err != nil {
		return err
	}
	defer l.close()
	r.settle(ctx, l, quiet(cfg))
	answered := 0
	for ctx.Err() == nil {
		seen, err := l.ids(ctx)
		if err != nil {
			break
		}
		takenIn := map[int64]bool{}
		for id := range mentions {
			if seen[id] > 0 {
				takenIn[id] = true
			}
		}
		if delivered, _, _ := r.qq.tally(takenIn); delivered >= len(takenIn) {
			answered++
			if answered > 1 {
				break
			}
		} else {
			answered = 0
		}
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	return nil
}

// waitPartitions waits, after a kill, until the other instances own
// every partition (or gave up on it, see killAndWait), and keeps how long
// it took for the kill's report, which is filled in after the instances
// stop.
func (r *rig) waitPartitions() {
	if r.partsTaken != nil {
		r.partsSeconds = <-r.partsTaken
		r.partsTaken = nil
	}
}

// settle waits, after a kill, until the other instances own every
// partition and then until the shared log has not grown for quiet: what
// the stream holds for the killed instance's partitions is taken in by
// their new owners only once they own them, which may be seconds after
// the connection is back, and once they restored the partitions' chats
// from the database, which takes seconds more under load. It returns
// when the log last grew.
func (r *rig) settle(ctx context.Context, l rowCounter, quiet time.Duration) time.Time {
	r.waitPartitions()
	seen, grewAt := -1, time.Now()
	for ctx.Err() == nil {
		n, err := l.count(ctx)
		if err == nil {
			if n != seen {
				seen, grewAt = n, time.Now()
			} else if time.Since(grewAt) > quiet {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return grewAt
}

// quiet is how long the log must not grow, after a kill, for the run to
// be over: a lease's TTL, at least 5 s.
func quiet(cfg *Config) time.Duration { return max(5*time.Second, cfg.LeaseTTL) }
