package onebot

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/msg"
)

// rig runs an account against a fake implementation on an in-memory
// network, inside a synctest bubble: pincer's HTTP server (reverse
// WebSocket and event POST) at pincer.test, the implementation at
// onebot.test.
type rig struct {
	t      *testing.T
	net    *onebottest.PipeNet
	peer   *onebottest.Peer
	acct   *Account
	sink   *recordSink
	srv    *http.Server
	cancel context.CancelFunc
	done   chan error
}

const (
	rigReverse = "ws://pincer.test/onebot/v11/ws"
	rigPost    = "http://pincer.test/onebot/v11/post"
)

// recordSink records messages and, when text is set, answers each.
type recordSink struct {
	mu   sync.Mutex
	got  []msg.Message
	text string
	errs []error
}

func (s *recordSink) Dispatch(ctx context.Context, m msg.Message, r channel.Replier) error {
	var err error
	if s.text != "" {
		_, err = r.Deliver(ctx, msg.Outbound{Account: m.Account, Peer: m.Peer, Text: s.text})
	}
	s.mu.Lock()
	s.got = append(s.got, m)
	if err != nil {
		s.errs = append(s.errs, err)
	}
	s.mu.Unlock()
	return err
}

func (s *recordSink) ids() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.got {
		out = append(out, string(m.ID))
	}
	return out
}

func answerSends(action string, _ json.RawMessage) (any, int, string) {
	switch action {
	case "get_login_info":
		return map[string]any{"user_id": 3300000001, "nickname": "bot"}, 0, ""
	case "send_group_msg", "send_private_msg":
		return map[string]any{"message_id": 9001}, 0, ""
	}
	return nil, 0, ""
}

// newRig must be called inside a bubble; o.httpClient and the URLs are
// filled in when empty. Call close before the bubble ends.
func newRig(t *testing.T, o AccountOptions, h onebottest.Handler) *rig {
	t.Helper()
	return newRigTo(t, o, h, nil)
}

// newRigTo is newRig whose account hands its messages to sink instead of
// the rig's recordSink, when sink is not nil.
func newRigTo(t *testing.T, o AccountOptions, h onebottest.Handler, sink channel.Sink) *rig {
	t.Helper()
	n := onebottest.NewPipeNet()
	if h == nil {
		h = answerSends
	}
	r := &rig{t: t, net: n, peer: onebottest.NewOnPipe(n, "onebot.test", h), sink: &recordSink{}, done: make(chan error, 1)}
	if o.httpClient == nil {
		o.httpClient = n.Client()
	}
	if o.Reconnect == (Reconnect{}) {
		o.Reconnect = Reconnect{Enabled: true, Retries: -1, MinDelay: time.Second, MaxDelay: time.Second}
	}
	r.acct = NewAccount(o)
	mux := http.NewServeMux()
	mux.HandleFunc("/onebot/v11/ws", r.acct.ServeReverse)
	mux.HandleFunc("/onebot/v11/post", r.acct.ServePost)
	r.srv = &http.Server{Handler: mux}
	ln := n.Listen("pincer.test")
	go func() { _ = r.srv.Serve(ln) }()
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	var to channel.Sink = r.sink
	if sink != nil {
		to = sink
	}
	go func() { r.done <- r.acct.Run(ctx, to) }()
	synctest.Wait() // Run is up before the test dials in
	return r
}

func (r *rig) close() {
	r.cancel()
	if err := <-r.done; err != nil {
		r.t.Errorf("Run: %v", err)
	}
	r.peer.Close()
	_ = r.srv.Close()
}

// stateOf is a's connection state.
func stateOf(a *Account) State {
	state, _, _ := a.Health()
	return state
}

func (r *rig) calls(action string) []onebottest.Call {
	var out []onebottest.Call
	for _, c := range r.peer.Calls() {
		if c.Action == action {
			out = append(out, c)
		}
	}
	return out
}

func privateEvent(id, user int64, text string) map[string]any {
	return map[string]any{
		"time": 1774420200, "self_id": 3300000001, "post_type": "message", "message_type": "private",
		"message_id": id, "user_id": user,
		"sender":  map[string]any{"user_id": user, "nickname": "Bo"},
		"message": []any{map[string]any{"type": "text", "data": map[string]any{"text": text}}},
	}
}
