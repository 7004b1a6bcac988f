package feishusim

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lark "github.com/larksuite/oapi-sdk-go/v3"
	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
)

// fakeClock is the simulator's clock in tests: it moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 10, 8, 9, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var appSeq atomic.Int64

// env is a simulator served over HTTP with an SDK client pointed at it.
type env struct {
	sim    *Sim
	srv    *httptest.Server
	client *lark.Client
	clock  *fakeClock
}

// newEnv starts a simulator and an SDK client. Every env has its own
// app id, because the SDK caches tenant tokens process-wide by app id.
func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	if opts.AppID == "" {
		opts.AppID = fmt.Sprintf("cli_test%012d", appSeq.Add(1))
	}
	if opts.AppSecret == "" {
		opts.AppSecret = "secret-" + opts.AppID
	}
	clock := newClock()
	if opts.Now == nil {
		opts.Now = clock.Now
	}
	sim := New(opts)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	client := lark.NewClient(opts.AppID, opts.AppSecret, lark.WithOpenBaseUrl(srv.URL), lark.WithLogLevel(larkcore.LogLevelError))
	return &env{sim: sim, srv: srv, client: client, clock: clock}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustAdd(t *testing.T, s *Sim, m Message) string {
	t.Helper()
	id, err := s.AddMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// rawEnvelope is the {code, msg, data} body of a raw SDK call.
type rawEnvelope struct {
	Code int             `json:"code"`
	Msg  string          `json:"msg"`
	Data json.RawMessage `json:"data"`
}

// decodeRaw returns a decoder for the results of a raw SDK call:
// decodeRaw(t)(client.Get(…)).
func decodeRaw(t *testing.T) func(*larkcore.ApiResp, error) rawEnvelope {
	return func(resp *larkcore.ApiResp, err error) rawEnvelope {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var e rawEnvelope
		if err := json.Unmarshal(resp.RawBody, &e); err != nil {
			t.Fatalf("decoding %s: %v", resp.RawBody, err)
		}
		return e
	}
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}
