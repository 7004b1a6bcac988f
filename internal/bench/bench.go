// Package bench measures a whole pincer under load, end to end: it runs
// pincer serve as a child process against a OneBot v11 simulator and a
// fake OpenAI-compatible model that live in the calling process, drives a
// burst of messages and a steady rate of them with @s of the bot, and
// reports throughput, CPU, memory, goroutines, reply latencies and
// whether every message and reply is accounted for. A baseline, a reader
// that only decodes the same frames, runs beside it as a yardstick.
// pincer bench is its command line. It does not import testing.
package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	_ "modernc.org/sqlite" // reads pincer's store after a run

	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/llm/llmsim"
)

// Defaults: the reference run.
const (
	DefaultMessages     = 100_000
	DefaultBurstGroups  = 100
	DefaultSteadyGroups = 2_000
	DefaultSenders      = 1_000
	DefaultRate         = 1_000
	DefaultDuration     = 20 * time.Second
	DefaultEvery        = 10
	DefaultLatency      = 20 * time.Millisecond
	DefaultTimeout      = 10 * time.Minute
)

// SelfID is the bot's QQ number in every run.
const SelfID = 3300000001

// Scenarios.
const (
	Burst  = "burst"
	Steady = "steady"
	Both   = "both"
)

// Config describes one invocation.
type Config struct {
	// Scenario is Burst, Steady or Both.
	Scenario string
	// Messages is the burst's size, before its final @.
	Messages int
	// Groups spreads the messages over this many groups; 0 means the
	// scenario's default (DefaultBurstGroups, DefaultSteadyGroups).
	Groups int
	// Senders is how many people speak.
	Senders int
	// Rate is the steady scenario's events per second, for Duration in
	// each of its runs (the baseline, pincer on chatter only, pincer with
	// the @s); every Every-th of them @s the bot.
	Rate     int
	Duration time.Duration
	Every    int
	// Latency is the fake model's time to its first token.
	Latency time.Duration
	// Realtime and History switch pincer's receive modes.
	Realtime, History bool
	// Quotes is the share of messages (0 to 1) that reply to another
	// one, with a reply segment only, as the QQ client sends when the
	// automatic @ is removed: half of them an earlier message of the
	// chat, half one from before pincer started, whose author only
	// get_msg tells (the simulator answers it at once). The burst then
	// runs on a second fresh pincer with the quotes, beside the run
	// without; the steady rate carries them.
	Quotes float64
	// Timeout bounds a burst, and the wait for the steady scenario's last
	// replies (which is at most 30 s longer than the model's latency).
	Timeout time.Duration
	// WriteBatch is the size, in bytes, of the simulator's writes to the
	// WebSocket: whole frames are coalesced into writes of up to that
	// size, as an implementation or a proxy under load coalesces them in
	// one TCP write (the frames due at once, in the steady scenario). 0
	// writes each frame by itself. It applies to the baseline too.
	WriteBatch int
	// SendGapMs, when 0 or more, is pincer's channels.onebot.sendGapMs,
	// the least time between two sends to one chat (0: none, which
	// measures the pipeline without the chat's pacing); negative leaves
	// pincer's default (config.DefaultSendGapMs).
	SendGapMs int

	// Serve returns the command that runs pincer serve with a
	// configuration file; Reader the one that runs the baseline's reader
	// (Read) against url. Both are needed.
	Serve  func(configPath string) *exec.Cmd
	Reader func(url string, self int64) *exec.Cmd
	// Version names the pincer measured.
	Version string
	// Dir holds the runs' files (os.TempDir when empty); they are removed
	// afterwards unless Keep.
	Dir  string
	Keep bool
	// Profile, when set, is a directory that receives pincer's CPU
	// profile of each run's window (burst-pincer.pprof,
	// burst-pincer-quotes.pprof, steady-chatter.pprof,
	// steady-pincer.pprof), and its heap profile as the window ends
	// (name-heap.pprof), taken through gateway.pprof behind a gateway
	// token the runs are given.
	Profile string
	// Progress, when set, receives a line as each phase starts.
	Progress io.Writer

	// Instances, when more than 0, runs every pincer of a scenario as
	// that many processes in cluster mode, on one NATS server and a
	// PostgreSQL schema of the run's own (PostgresDSN names the server).
	Instances   int
	PostgresDSN string
	// NATS is a running NATS server with JetStream; when empty each run
	// starts NATSServer (nats-server on PATH) with a store of its own.
	NATS, NATSServer string
	// LeaseTTL is the cluster's cluster.leaseTtlMs (DefaultLeaseTTL).
	LeaseTTL time.Duration
	// Kill kills (SIGKILL) the instance holding the QQ connection
	// halfway through each pincer run's frames.
	Kill bool
}

func (c *Config) fill() error {
	if c.Scenario == "" {
		c.Scenario = Both
	}
	if c.Scenario != Burst && c.Scenario != Steady && c.Scenario != Both {
		return fmt.Errorf("bench: scenario %q: want burst, steady or both", c.Scenario)
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Serve == nil || c.Reader == nil {
		return errors.New("bench: Config.Serve and Config.Reader are required")
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"messages", c.Messages}, {"senders", c.Senders}, {"rate", c.Rate}, {"every", c.Every}} {
		if v.n < 1 {
			return fmt.Errorf("bench: %s must be at least 1, got %d", v.name, v.n)
		}
	}
	if c.Groups < 0 {
		return fmt.Errorf("bench: groups must not be negative, got %d", c.Groups)
	}
	if c.Duration <= 0 && c.Scenario != Burst {
		return fmt.Errorf("bench: duration must be positive, got %s", c.Duration)
	}
	if c.Latency < 0 {
		return fmt.Errorf("bench: latency must not be negative, got %s", c.Latency)
	}
	if c.WriteBatch < 0 {
		return fmt.Errorf("bench: write batch must not be negative, got %d", c.WriteBatch)
	}
	if !(c.Quotes >= 0 && c.Quotes <= 1) {
		return fmt.Errorf("bench: quotes is a share of the messages, from 0 to 1, got %v", c.Quotes)
	}
	return c.clusterFill()
}

func (c *Config) groups(def int) int {
	if c.Groups > 0 {
		return c.Groups
	}
	return def
}

// sendGap is pincer's send gap in the runs, in milliseconds.
func (c *Config) sendGap() int {
	if c.SendGapMs < 0 {
		return config.DefaultSendGapMs
	}
	return c.SendGapMs
}

func (c *Config) progress(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, format+"\n", args...)
	}
}

// Run runs the configured scenarios and reports them. An error means a
// run could not be made (a process would not start, the context ended);
// a run that lost or doubled messages or replies is reported with OK
// false and its problems.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(cfg.Dir, "pincer-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if cfg.Keep {
		cfg.progress("bench: files kept in %s", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	rep := &Report{Machine: machine(), Pincer: cfg.Version, Method: method}
	if cfg.Instances > 0 {
		rep.Method = clusterMethod(&cfg)
	}
	unix := time.Now().Unix()
	if cfg.Scenario != Steady {
		b, err := runBurst(ctx, &cfg, filepath.Join(dir, "burst"), unix)
		if err != nil {
			return nil, err
		}
		rep.Burst = b
		rep.Problems = append(rep.Problems, b.problems()...)
	}
	if cfg.Scenario != Burst {
		s, err := runSteady(ctx, &cfg, filepath.Join(dir, "steady"), unix)
		if err != nil {
			return nil, err
		}
		rep.Steady = s
		rep.Problems = append(rep.Problems, s.problems()...)
	}
	rep.OK = len(rep.Problems) == 0
	return rep, nil
}

const method = "pincer runs as a child process (pincer serve), so its CPU time (/proc/<pid>/stat), " +
	"peak RSS (VmHWM) and goroutines (its /metrics) are its own; the OneBot simulator, the fake model " +
	"and the load generator run in the bench process"

// model counts the fake model's requests and answers per @.
type model struct {
	mu        sync.Mutex
	requests  int
	firstReq  map[int64]time.Time
	firstDone map[int64]time.Time
}

func newModel() *model {
	return &model{firstReq: map[int64]time.Time{}, firstDone: map[int64]time.Time{}}
}

func (m *model) options(latency time.Duration) llmsim.Options {
	return llmsim.Options{
		Latency: latency,
		Reply: func(r llmsim.Request) string {
			if id, ok := tokenID(r.LastUser()); ok {
				return "收到，这就回答你 " + Token(id)
			}
			return "ok"
		},
		OnRequest: func(r llmsim.Request) {
			id, ok := tokenID(r.LastUser())
			m.mu.Lock()
			defer m.mu.Unlock()
			m.requests++
			if _, seen := m.firstReq[id]; ok && !seen {
				m.firstReq[id] = r.At
			}
		},
		OnDone: func(r llmsim.Request, at time.Time) {
			id, ok := tokenID(r.LastUser())
			m.mu.Lock()
			defer m.mu.Unlock()
			if _, seen := m.firstDone[id]; ok && !seen {
				m.firstDone[id] = at
			}
		},
	}
}

// rig is one pincer under test, or a cluster of them, with its
// simulated QQ and model.
type rig struct {
	dir    string
	db     string // the SQLite store, of a single pincer
	qq     *qq
	llm    *llmsim.Server
	model  *model
	pincer *child
	at     endpoint // pincer's HTTP root (the first instance's)
	// insts are the pincer processes: one, unnamed, for a single pincer.
	insts []*instance
	// A cluster's NATS server and PostgreSQL schema.
	nats *natsRun
	pg   *pgSchema
	keep bool
	// With -kill: partsTaken gets the seconds from the kill until the
	// others owned every partition (-1: not within three TTLs and 30 s),
	// which partsSeconds keeps once read.
	partsTaken   chan float64
	partsSeconds float64
}

var readyURL = regexp.MustCompile(`open (http://[^\s/]+)`)

// startPincer starts the simulators and pincer serve on them, and waits
// until pincer is connected and healthy.
func startPincer(ctx context.Context, cfg *Config, dir string) (_ *rig, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	r := &rig{dir: dir, db: filepath.Join(dir, "pincer.db"), model: newModel(), keep: cfg.Keep}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if r.qq, err = startQQ(SelfID, cfg.WriteBatch); err != nil {
		return nil, err
	}
	r.qq.lossy = cfg.Instances > 0
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: fake model: %w", err)
	}
	r.llm = llmsim.Serve(ln, r.model.options(cfg.Latency))
	var token string
	if cfg.Profile != "" {
		token = "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	if cfg.Instances > 0 {
		return r, r.startCluster(ctx, cfg, pincerConf(cfg, dir, r.qq.url, r.llm.URL+"/v1", r.db, token))
	}
	text, err := pincerConfig(cfg, dir, r.qq.url, r.llm.URL+"/v1", r.db, token)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "pincer.json5")
	if err := os.WriteFile(path, text, 0o600); err != nil {
		return nil, fmt.Errorf("bench: config: %w", err)
	}
	if r.pincer, err = startChild("pincer", cfg.Serve(path), filepath.Join(dir, "pincer.log")); err != nil {
		return nil, err
	}
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	line, err := r.pincer.line(wait, "pincer is ready")
	if err != nil {
		return nil, err
	}
	m := readyURL.FindStringSubmatch(line)
	if m == nil {
		return nil, fmt.Errorf("bench: no URL in pincer's ready line %q", line)
	}
	r.at = endpoint{base: m[1], token: token}
	r.insts = []*instance{{pincer: r.pincer, at: r.at}}
	if err := r.qq.connected(wait); err != nil {
		return nil, fmt.Errorf("bench: pincer did not connect to the simulator: %w%s", err, r.pincer.logTail())
	}
	if err := r.qq.pushRaw(wait, r.qq.lifecycle()); err != nil {
		return nil, err
	}
	if err := healthy(wait, r.at.base); err != nil {
		return nil, fmt.Errorf("%w%s", err, r.pincer.logTail())
	}
	return r, nil
}

// pincerConfig is the configuration file of a pincer under test: the
// simulator at wsURL, the fake model at modelURL, its store at db and its
// workspace in dir.
// With a token (-profile), the gateway serves Go's profiles behind it.
func pincerConfig(cfg *Config, dir, wsURL, modelURL, db, token string) ([]byte, error) {
	text, err := json.MarshalIndent(pincerConf(cfg, dir, wsURL, modelURL, db, token), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("bench: config: %w", err)
	}
	return text, nil
}

// pincerConf is pincerConfig's content, which a cluster's instances
// start from.
func pincerConf(cfg *Config, dir, wsURL, modelURL, db, token string) map[string]any {
	onebot := map[string]any{
		"wsUrl": wsURL, "selfId": strconv.FormatInt(SelfID, 10), "accessToken": "",
		"receive": map[string]any{
			"realtime": map[string]any{"enabled": cfg.Realtime},
			"history":  map[string]any{"enabled": cfg.History},
		},
	}
	if cfg.SendGapMs >= 0 {
		onebot["sendGapMs"] = cfg.SendGapMs
	}
	gateway := map[string]any{"listen": "127.0.0.1:0", "shutdownTimeoutMs": 10000}
	if token != "" {
		gateway["token"], gateway["pprof"] = token, true
	}
	conf := map[string]any{
		"gateway": gateway,
		"log":     map[string]any{"level": "warn"},
		"store":   map[string]any{"path": db},
		"models": map[string]any{
			"providers": map[string]any{"sim": map[string]any{"api": "openai", "baseUrl": modelURL, "apiKey": "bench"}},
			"aliases":   map[string]any{},
		},
		"agents": map[string]any{"defaults": map[string]any{
			"model":     map[string]any{"primary": "sim/bench"},
			"workspace": filepath.Join(dir, "workspace"),
		}},
		"channels": map[string]any{
			"webchat": map[string]any{"enabled": false},
			"onebot":  onebot,
		},
	}
	return conf
}

// endpoint is pincer's HTTP root, with the gateway token its requests
// carry when it has one.
type endpoint struct{ base, token string }

// get requests path of pincer.
func (e endpoint) get(ctx context.Context, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base+path, nil)
	if err != nil {
		return nil, err
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	return http.DefaultClient.Do(req)
}

// profile records pincer's CPU profile for d into name under
// cfg.Profile, when that is set; the returned function waits for it and
// gives what went wrong. The profile covers the run's window, so its
// samples are the CPU the report counts.
func (r *rig) profile(ctx context.Context, cfg *Config, name string, d time.Duration) func() error {
	if cfg.Profile == "" {
		return func() error { return nil }
	}
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			secs := max(1, int((d+time.Second/2)/time.Second))
			res, err := r.at.get(ctx, "/debug/pprof/profile?seconds="+strconv.Itoa(secs))
			if err != nil {
				return fmt.Errorf("bench: profile %s: %w", name, err)
			}
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return fmt.Errorf("bench: profile %s: HTTP %d", name, res.StatusCode)
			}
			if err := os.MkdirAll(cfg.Profile, 0o755); err != nil {
				return fmt.Errorf("bench: profile %s: %w", name, err)
			}
			f, err := os.Create(filepath.Join(cfg.Profile, name+".pprof"))
			if err != nil {
				return fmt.Errorf("bench: profile %s: %w", name, err)
			}
			if _, err := io.Copy(f, res.Body); err != nil {
				f.Close()
				return fmt.Errorf("bench: profile %s: %w", name, err)
			}
			if err := f.Close(); err != nil {
				return fmt.Errorf("bench: profile %s: %w", name, err)
			}
			return r.heapProfile(ctx, cfg, name)
		}()
	}()
	return func() error { return <-done }
}

// heapProfile records pincer's heap profile, as of its latest garbage
// collection, into name-heap.pprof under cfg.Profile: what the run left
// in memory, and (its alloc_space) what the run allocated.
func (r *rig) heapProfile(ctx context.Context, cfg *Config, name string) error {
	res, err := r.at.get(ctx, "/debug/pprof/heap")
	if err != nil {
		return fmt.Errorf("bench: heap profile %s: %w", name, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("bench: heap profile %s: HTTP %d", name, res.StatusCode)
	}
	f, err := os.Create(filepath.Join(cfg.Profile, name+"-heap.pprof"))
	if err != nil {
		return fmt.Errorf("bench: heap profile %s: %w", name, err)
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		f.Close()
		return fmt.Errorf("bench: heap profile %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bench: heap profile %s: %w", name, err)
	}
	return nil
}

// healthy waits for pincer's /healthz to answer ok.
func healthy(ctx context.Context, base string) error {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		if err != nil {
			return fmt.Errorf("bench: healthz: %w", err)
		}
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			var h struct {
				Status string `json:"status"`
			}
			if res.StatusCode == http.StatusOK && json.Unmarshal(body, &h) == nil && h.Status == "ok" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: pincer never reported healthy: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop ends pincer, every instance of it that was not killed (SIGTERM,
// as an operator would, all at once), and waits for them.
func (r *rig) stop() error {
	errs := make([]error, len(r.insts))
	var wg sync.WaitGroup
	for i, inst := range r.insts {
		if inst.killed {
			continue
		}
		wg.Go(func() { errs[i] = inst.pincer.stop(30 * time.Second) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// close stops whatever still runs, and removes a cluster's schema
// unless the files are kept.
func (r *rig) close() {
	for _, inst := range r.insts {
		if !inst.killed {
			_ = inst.pincer.stop(30 * time.Second)
		}
	}
	if len(r.insts) == 0 && r.pincer != nil {
		_ = r.pincer.stop(30 * time.Second)
	}
	r.nats.stop()
	if r.pg != nil && !r.keep {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = r.pg.drop(ctx)
		cancel()
	}
	if r.qq != nil {
		r.qq.close()
	}
	if r.llm != nil {
		r.llm.Close()
	}
}

// openStore opens pincer's database for reading.
func openStore(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("bench: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// logTable names the table of pincer's inbound log: messages since the
// log holds the history and digest views, inbound before.
func logTable(ctx context.Context, db *sql.DB) (string, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('messages', 'inbound')`)
	if err != nil {
		return "", fmt.Errorf("bench: find the inbound log: %w", err)
	}
	defer rows.Close()
	found := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return "", fmt.Errorf("bench: find the inbound log: %w", err)
		}
		found[name] = true
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("bench: find the inbound log: %w", err)
	}
	for _, name := range []string{"messages", "inbound"} {
		if found[name] {
			return name, nil
		}
	}
	return "", errors.New("bench: pincer's database has no inbound log (table messages or inbound)")
}

// logCounter counts the rows of pincer's inbound log as they are added,
// reading only the new ones each time (the log is never trimmed).
type logCounter struct {
	db    *sql.DB
	table string
	rows  int
	upto  int64 // the highest rowid counted
}

func newLogCounter(ctx context.Context, db *sql.DB) (*logCounter, error) {
	table, err := logTable(ctx, db)
	if err != nil {
		return nil, err
	}
	c := &logCounter{db: db, table: table}
	_, err = c.count(ctx)
	return c, err
}

// count returns the rows logged so far.
func (c *logCounter) count(ctx context.Context) (int, error) {
	var n int
	var upto sql.NullInt64
	q := `SELECT COUNT(*), MAX(rowid) FROM ` + c.table + ` WHERE rowid > ?`
	if err := c.db.QueryRowContext(ctx, q, c.upto).Scan(&n, &upto); err != nil {
		return c.rows, fmt.Errorf("bench: count the inbound log: %w", err)
	}
	c.rows += n
	if upto.Valid {
		c.upto = upto.Int64
	}
	return c.rows, nil
}

// account checks which of the load's messages pincer's inbound log holds.
func account(ctx context.Context, path string, load Load) (Accounting, error) {
	a := Accounting{Sent: len(load.Frames)}
	db, err := openStore(path)
	if err != nil {
		return a, err
	}
	defer db.Close()
	table, err := logTable(ctx, db)
	if err != nil {
		return a, err
	}
	a.Source = "pincer's inbound log (SQLite table " + table + "), read after pincer stopped"
	rows, err := db.QueryContext(ctx, `SELECT message_id FROM `+table)
	if err != nil {
		return a, fmt.Errorf("bench: read the inbound log: %w", err)
	}
	defer rows.Close()
	logged := make(map[int64]bool, len(load.Frames))
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return a, fmt.Errorf("bench: read the inbound log: %w", err)
		}
		if id, err := strconv.ParseInt(s, 10, 64); err == nil {
			logged[id] = true
		}
	}
	if err := rows.Err(); err != nil {
		return a, fmt.Errorf("bench: read the inbound log: %w", err)
	}
	for _, f := range load.Frames {
		if logged[f.ID] {
			a.Logged++
		}
	}
	a.Missing = a.Sent - a.Logged
	return a, nil
}
