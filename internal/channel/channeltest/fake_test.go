package channeltest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

// flawEnv names the flaw a re-executed test binary builds into the fake
// adapter.
const flawEnv = "CHANNELTEST_FLAW"

// TestFake runs the suite against an in-memory adapter that does
// everything right, or, in a run TestSuiteCatchesFlaws starts, one thing
// wrong.
func TestFake(t *testing.T) {
	flaw := os.Getenv(flawEnv)
	if flaw != "" {
		timeout = 5 * time.Second // the flaw may be a message that never comes
	}
	Run(t, fakeHarness{flaw: flaw})
}

// TestSuiteCatchesFlaws: for each way an adapter can get its job wrong,
// the subtest that guards it fails.
func TestSuiteCatchesFlaws(t *testing.T) {
	if os.Getenv(flawEnv) != "" {
		t.Skip("a run with a flaw")
	}
	for _, tc := range []struct{ flaw, subtest string }{
		{"account", "Normalize"},
		{"peer", "Normalize"},
		{"sender", "Normalize"},
		{"seconds-as-ms", "Normalize"},
		{"text", "Normalize"},
		{"no-mention", "Normalize"},
		{"mention-always", "Normalize"},
		{"no-dedup", "Dedup"},
		{"reorder", "OrderPerChat/AsTaken"},
		{"reply-twice", "Deliver"},
		{"reply-elsewhere", "Deliver"},
		{"send-twice", "Deliver"},
		{"no-chunks", "Chunk"},
		{"chunk-over", "Chunk"},
		{"chunk-lost", "Chunk"},
		{"send-anywhere", "CapabilityErrors/Unreachable"},
		{"history-error", "CapabilityErrors/History"},
		{"history-empty", "CapabilityErrors/History"},
	} {
		t.Run(tc.flaw, func(t *testing.T) {
			pattern := "^TestFake$"
			for _, part := range strings.Split(tc.subtest, "/") {
				pattern += "/^" + part + "$"
			}
			cmd := exec.Command(os.Args[0], "-test.run="+pattern, "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), flawEnv+"="+tc.flaw)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the suite passed an adapter with the flaw (err %v):\n%s", err, out)
			}
			if want := "--- FAIL: TestFake/" + tc.subtest + " "; !strings.Contains(string(out), want) {
				t.Errorf("want %q in the output:\n%s", want, out)
			}
		})
	}
}

// TestKnownDefectsSkipped: a subtest a harness names as a known defect is
// skipped with its reason; the others still run, and fail.
func TestKnownDefectsSkipped(t *testing.T) {
	if os.Getenv(flawEnv) != "" {
		t.Skip("a run with a flaw")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFake$/^CapabilityErrors$/^Unreachable$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), flawEnv+"=send-anywhere-known")
	out, _ := cmd.CombinedOutput()
	for _, want := range []string{
		"known defect: sends anywhere",
		"--- SKIP: TestFake/CapabilityErrors/Unreachable/group:nowhere ",
		"--- FAIL: TestFake/CapabilityErrors/Unreachable/bogus:1 ",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("want %q in the output:\n%s", want, out)
		}
	}
}

func TestReassemble(t *testing.T) {
	const text = "one two\nthree four five"
	for _, tc := range []struct {
		chunks []string
		ok     bool
	}{
		{[]string{"one two\n", "three four five"}, true},
		{[]string{"one two", "three four five"}, true},
		{[]string{"one t", "wo\nthree fo", "ur five"}, true},
		{[]string{text}, true},
		{[]string{"one two", "four five"}, false},           // a piece lost
		{[]string{"three four five", "one two"}, false},     // out of order
		{[]string{"one two", "three four"}, false},          // the end lost
		{[]string{"one two", "", "three four five"}, false}, // a blank message
		{[]string{"onetwo", "three four five"}, false},      // a space lost inside
		{[]string{"one two", "three four five!"}, false},    // something added
		{[]string{"one two", "one two", "three four five"}, false},
	} {
		if err := reassemble(text, tc.chunks); (err == nil) != tc.ok {
			t.Errorf("reassemble(%q): %v, want ok=%v", tc.chunks, err, tc.ok)
		}
	}
}

func TestLongText(t *testing.T) {
	s := longText(500)
	if n := utf8.RuneCountInString(s); n < 500 || n > 600 {
		t.Errorf("longText(500) has %d characters", n)
	}
	if !strings.Contains(s, "\n") || !strings.Contains(s, " ") {
		t.Error("the text must have lines and spaces to cut at")
	}
}

// fakeHarness starts the fake adapter with flaw.
type fakeHarness struct{ flaw string }

// KnownDefects marks one unreachable peer in the run that needs it.
func (h fakeHarness) KnownDefects() map[string]string {
	if h.flaw == "send-anywhere-known" {
		return map[string]string{"CapabilityErrors/Unreachable/group:nowhere": "sends anywhere"}
	}
	return nil
}

const (
	fakeBot   = msg.UserID("bot")
	fakeLimit = 20
)

// fake is an in-memory platform and the adapter for it, in one.
type fake struct {
	flaw   string
	events chan fakeEvent

	mu      sync.Mutex
	n       int
	chats   map[msg.Peer]bool
	sent    map[msg.Peer][]string
	more    chan struct{}
	seen    map[msg.MessageID]bool
	held    map[msg.Peer]*msg.Message // the reorder flaw's message kept back
	history map[msg.Peer][]msg.Message
	last    msg.Peer
}

// fakeEvent is one delivery of a message; handled is closed once the
// adapter has dealt with it.
type fakeEvent struct {
	m          msg.Message
	mentionBot bool
	handled    chan struct{}
}

func (h fakeHarness) Start(t *testing.T, sink channel.Taker) Platform {
	f := &fake{
		flaw: h.flaw, events: make(chan fakeEvent), chats: map[msg.Peer]bool{}, sent: map[msg.Peer][]string{},
		more: make(chan struct{}), seen: map[msg.MessageID]bool{}, held: map[msg.Peer]*msg.Message{},
		history: map[msg.Peer][]msg.Message{},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx, sink) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return f
}

// The adapter's side.

func (f *fake) Name() msg.ChannelID { return "fake" }

func (f *fake) Run(ctx context.Context, sink channel.Sink) error {
	taker := sink.(channel.Taker)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-f.events:
			for _, m := range f.take(ev) {
				taker.Take(ctx, m, fakeReplier{f: f, trigger: m}, nil)
			}
			close(ev.handled)
		}
	}
}

// take normalizes an event into what goes to the sink, flaws and all.
func (f *fake) take(ev fakeEvent) []msg.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := ev.m
	if f.seen[m.ID] && f.flaw != "no-dedup" {
		return nil
	}
	f.seen[m.ID] = true
	f.history[m.Peer] = append(f.history[m.Peer], m)
	f.last = m.Peer
	if ev.mentionBot && f.flaw != "no-mention" || f.flaw == "mention-always" {
		m.Mentions = []msg.UserID{fakeBot}
		if ev.mentionBot {
			m.Text = "@bot " + m.Text
		}
	}
	switch f.flaw {
	case "account":
		m.Account = "other"
	case "peer":
		m.Peer.ID += "x"
	case "sender":
		m.Sender.ID = "someone"
	case "seconds-as-ms":
		m.Time = time.UnixMilli(m.Time.Unix())
	case "text":
		m.Text = strings.ToUpper(m.Text)
	case "reorder":
		if held := f.held[m.Peer]; held != nil {
			f.held[m.Peer] = nil
			return []msg.Message{m, *held}
		}
		if _, once := f.held[m.Peer]; !once {
			f.held[m.Peer] = &m
			return nil
		}
	}
	return []msg.Message{m}
}

func (f *fake) Send(_ context.Context, out msg.Outbound) (msg.MessageID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.chats[out.Peer] && !strings.HasPrefix(f.flaw, "send-anywhere") {
		return "", fmt.Errorf("fake: no chat %s", out.Peer)
	}
	chunks := []string{out.Text}
	if f.flaw != "no-chunks" {
		chunks = nil
		limit := fakeLimit
		if f.flaw == "chunk-over" {
			limit++
		}
		for rs := []rune(out.Text); len(rs) > 0; {
			n := min(limit, len(rs))
			chunks = append(chunks, string(rs[:n]))
			rs = rs[n:]
		}
		if f.flaw == "chunk-lost" && len(chunks) > 2 {
			chunks = append(chunks[:1], chunks[2:]...)
		}
	}
	copies := 1
	if f.flaw == "send-twice" {
		copies = 2
	}
	for range copies {
		f.sent[out.Peer] = append(f.sent[out.Peer], chunks...)
	}
	close(f.more)
	f.more = make(chan struct{})
	return "sent", nil
}

func (f *fake) History(_ context.Context, peer msg.Peer, q channel.HistoryQuery) ([]msg.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if peer.Kind != msg.Group {
		if f.flaw == "history-error" {
			return nil, errors.New("fake: no history here")
		}
		return nil, fmt.Errorf("fake: %s: %w", peer, channel.ErrHistoryUnsupported)
	}
	if f.flaw == "history-empty" {
		return nil, nil
	}
	h := f.history[peer]
	return h[max(0, len(h)-q.Count):], nil
}

type fakeReplier struct {
	f       *fake
	trigger msg.Message
}

func (fakeReplier) Partial(string) {}

func (r fakeReplier) Deliver(ctx context.Context, out msg.Outbound) (msg.MessageID, error) {
	switch r.f.flaw {
	case "reply-twice":
		if _, err := r.f.Send(ctx, out); err != nil {
			return "", err
		}
	case "reply-elsewhere":
		r.f.mu.Lock()
		out.Peer = r.f.last
		r.f.mu.Unlock()
	}
	return r.f.Send(ctx, out)
}

// The platform's side.

func (f *fake) Adapter() channel.Adapter { return f }
func (f *fake) Account() msg.AccountID   { return "acct" }
func (f *fake) Bot() msg.UserID          { return fakeBot }
func (f *fake) ChunkLimit() int          { return fakeLimit }

func (f *fake) Chats(_ context.Context, kind msg.PeerKind, n int) ([]Chat, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Chat
	for range n {
		f.n++
		c := Chat{Peer: msg.Peer{Kind: kind, ID: fmt.Sprint(f.n)}, User: msg.UserID(fmt.Sprint("u", f.n)), History: kind == msg.Group}
		f.chats[c.Peer] = true
		out = append(out, c)
	}
	return out, nil
}

func (f *fake) Inject(ctx context.Context, in Inbound) (Posted, error) {
	f.mu.Lock()
	f.n++
	id := msg.MessageID(fmt.Sprint("m", f.n))
	f.mu.Unlock()
	m := msg.Message{
		ID: id, Channel: "fake", Account: "acct", Peer: in.Chat.Peer,
		Sender: msg.Sender{ID: in.Chat.User}, Time: time.Now(), Text: in.Text,
	}
	p := Posted{Inbound: in, ID: id, Ref: m}
	return p, f.Redeliver(ctx, p)
}

func (f *fake) Redeliver(ctx context.Context, p Posted) error {
	ev := fakeEvent{m: p.Ref.(msg.Message), mentionBot: p.MentionBot, handled: make(chan struct{})}
	select {
	case f.events <- ev:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ev.handled:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fake) Sent(chat Chat) ([]string, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sent[chat.Peer]...), f.more
}

func (f *fake) Unreachable() []msg.Peer { return []msg.Peer{{Kind: msg.Group, ID: "nowhere"}} }
