// Package storetest is the conformance suite every store.Store
// implementation must pass.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// Open returns a fresh, empty store; the suite closes it.
type Open func(t *testing.T) store.Store

// Run runs the conformance suite against the stores open returns.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"SessionsOpenOnce", testSessionsOpenOnce},
		{"SessionNotFound", testSessionNotFound},
		{"OpenWithTranscript", testOpenWithTranscript},
		{"ModelOverride", testModelOverride},
		{"SessionOptions", testSessionOptions},
		{"ResetKeepsHistory", testResetKeepsHistory},
		{"Compact", testCompact},
		{"TranscriptOrder", testTranscriptOrder},
		{"TranscriptConcurrentAppends", testTranscriptConcurrentAppends},
		{"InboundLog", testInboundLog},
		{"InboundViews", testInboundViews},
		{"InboundPrune", testInboundPrune},
		{"InboundBuffered", testInboundBuffered},
		{"InboundPending", testInboundPending},
		{"InboundLogBurst", testInboundLogBurst},
		{"DedupClaim", testDedupClaim},
		{"Admit", testAdmit},
		{"Buffers", testBuffers},
		{"AdmitConsumesBuffered", testAdmitConsumes},
		{"SentLog", testSentLog},
		{"JournalResumesAdmittedTurns", testJournal},
		{"OutboxKeepsRepliesUntilSent", testOutbox},
		{"Probe", testProbe},
		{"TokenUsePerDay", testTokenUse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			})
			tt.fn(t, s)
		})
	}
	t.Run("SentPrune", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := open(t)
			defer s.Close()
			testSentPrune(t, s)
		})
	})
	t.Run("DedupExpiry", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := open(t)
			defer s.Close()
			testDedupExpiry(t, s)
		})
	})
}

func testSessionsOpenOnce(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, created, err := s.OpenSession(ctx, "k1", "main")
	if err != nil || !created {
		t.Fatalf("first open: created=%v err=%v", created, err)
	}
	b, created, err := s.OpenSession(ctx, "k1", "other")
	if err != nil || created {
		t.Fatalf("second open: created=%v err=%v", created, err)
	}
	if b.AgentID != "main" || b.Key != "k1" || !b.CreatedAt.Equal(a.CreatedAt) {
		t.Errorf("reopened session changed: %+v vs %+v", b, a)
	}
	if a.CreatedAt.IsZero() || a.Generation != 0 {
		t.Errorf("new session: %+v", a)
	}
}

// testOpenWithTranscript: the combined open creates a new session with no
// turns, and on an existing one returns what OpenSession and Transcript
// would, the current generation only.
func testOpenWithTranscript(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, created, turns, err := s.OpenWithTranscript(ctx, "k1", "main")
	if err != nil || !created || len(turns) != 0 || a.Key != "k1" || a.AgentID != "main" {
		t.Fatalf("first open: %+v created=%v turns=%v err=%v", a, created, turns, err)
	}
	for _, text := range []string{"old", "gone"} {
		if _, err := s.AppendTurn(ctx, "k1", store.Turn{Role: store.RoleUser, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ResetSession(ctx, "k1", "new"); err != nil {
		t.Fatal(err)
	}
	for _, turn := range []store.Turn{{Role: store.RoleUser, Text: "q"}, {Role: store.RoleAssistant, Text: "a", ToolCalls: []store.ToolCall{{ID: "c", Name: "n", Arguments: "{}"}}}} {
		if _, err := s.AppendTurn(ctx, "k1", turn); err != nil {
			t.Fatal(err)
		}
	}
	b, created, turns, err := s.OpenWithTranscript(ctx, "k1", "other")
	if err != nil || created {
		t.Fatalf("second open: created=%v err=%v", created, err)
	}
	want, err := s.Transcript(ctx, "k1")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := s.Session(ctx, "k1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, turns); diff != "" || len(turns) != 2 || turns[0].Text != "q" {
		t.Errorf("turns differ from Transcript's (-want +got):\n%s\n%+v", diff, turns)
	}
	if diff := cmp.Diff(sess, b); diff != "" || b.Generation != 1 || b.AgentID != "main" {
		t.Errorf("session differs from Session's (-want +got):\n%s", diff)
	}
}

func testSessionNotFound(t *testing.T, s store.Store) {
	ctx := context.Background()
	if _, err := s.Session(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Session: want ErrNotFound, got %v", err)
	}
	if err := s.SetModelOverride(ctx, "nope", "x/y"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetModelOverride: want ErrNotFound, got %v", err)
	}
	if _, err := s.ResetSession(ctx, "nope", "r"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ResetSession: want ErrNotFound, got %v", err)
	}
	if _, err := s.AppendTurn(ctx, "nope", store.Turn{Role: store.RoleUser, Text: "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AppendTurn: want ErrNotFound, got %v", err)
	}
}

func testModelOverride(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustOpen(t, s, "k")
	if err := s.SetModelOverride(ctx, "k", "openai/gpt-4o"); err != nil {
		t.Fatal(err)
	}
	got, err := s.Session(ctx, "k")
	if err != nil || got.ModelOverride != "openai/gpt-4o" {
		t.Fatalf("override = %q, %v", got.ModelOverride, err)
	}
	if err := s.SetModelOverride(ctx, "k", ""); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.Session(ctx, "k"); got.ModelOverride != "" {
		t.Errorf("cleared override = %q", got.ModelOverride)
	}
}

func testSessionOptions(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustOpen(t, s, "k")
	got, _ := s.Session(ctx, "k")
	if got.Options == nil || len(got.Options) != 0 {
		t.Fatalf("new session options = %#v, want an empty map", got.Options)
	}
	for _, kv := range [][2]string{{"think", "high"}, {"queue", "collect"}, {"odd.name'\"", "v"}, {"think", "low"}} {
		if err := s.SetSessionOption(ctx, "k", kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetSessionOption(ctx, "k", "queue", ""); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Session(ctx, "k")
	want := map[string]string{"think": "low", "odd.name'\"": "v"}
	if diff := cmp.Diff(want, got.Options); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	if err := s.SetSessionOption(ctx, "nope", "a", "b"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown session: %v", err)
	}
	if _, err := s.ResetSession(ctx, "k", "/new"); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.Session(ctx, "k"); got.Options["think"] != "low" {
		t.Errorf("options must survive a reset: %v", got.Options)
	}
}

func testResetKeepsHistory(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustOpen(t, s, "k")
	mustAppend(t, s, "k", store.Turn{Role: store.RoleUser, Text: "before"})
	sess, err := s.ResetSession(ctx, "k", "/new")
	if err != nil {
		t.Fatal(err)
	}
	if sess.Generation != 1 {
		t.Errorf("generation after reset = %d, want 1", sess.Generation)
	}
	if tr := mustTranscript(t, s, "k"); len(tr) != 0 {
		t.Errorf("transcript after reset has %d turns", len(tr))
	}
	mustAppend(t, s, "k", store.Turn{Role: store.RoleUser, Text: "after"})
	if tr := mustTranscript(t, s, "k"); len(tr) != 1 || tr[0].Text != "after" || tr[0].Seq != 1 {
		t.Errorf("transcript after reset = %+v", tr)
	}
	if _, err := s.ResetSession(ctx, "k", "idle"); err != nil {
		t.Fatal(err)
	}
	resets, err := s.Resets(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Reset{{Generation: 1, Reason: "/new"}, {Generation: 2, Reason: "idle"}}
	if diff := cmp.Diff(want, resets, cmpopts.IgnoreFields(store.Reset{}, "At")); diff != "" {
		t.Errorf("resets (-want +got):\n%s", diff)
	}
}

func testCompact(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustOpen(t, s, "k")
	for _, text := range []string{"a", "b", "c", "d"} {
		mustAppend(t, s, "k", store.Turn{Role: store.RoleUser, Text: text})
	}
	tr := mustTranscript(t, s, "k")
	sess, err := s.CompactSession(ctx, "k", "they said a and b", tr[2:])
	if err != nil {
		t.Fatal(err)
	}
	if sess.Generation != 1 {
		t.Errorf("generation %d", sess.Generation)
	}
	got := mustTranscript(t, s, "k")
	var texts []string
	for i, turn := range got {
		texts = append(texts, string(turn.Role)+":"+turn.Text)
		if turn.Seq != int64(i+1) {
			t.Errorf("turn %d has seq %d", i, turn.Seq)
		}
	}
	if diff := cmp.Diff([]string{"summary:they said a and b", "user:c", "user:d"}, texts); diff != "" {
		t.Errorf("compacted transcript (-want +got):\n%s", diff)
	}
	if !got[1].At.Equal(tr[2].At) {
		t.Error("kept turns keep their time")
	}
	mustAppend(t, s, "k", store.Turn{Role: store.RoleUser, Text: "e"})
	if n := len(mustTranscript(t, s, "k")); n != 4 {
		t.Errorf("append after compaction: %d turns", n)
	}
	resets, _ := s.Resets(ctx, "k")
	if len(resets) != 1 || resets[0].Reason != "compact" {
		t.Errorf("resets %+v", resets)
	}
	if _, err := s.CompactSession(ctx, "nope", "x", nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown session: %v", err)
	}
}

func testTranscriptOrder(t *testing.T, s store.Store) {
	mustOpen(t, s, "k")
	mustOpen(t, s, "other")
	in := []store.Turn{
		{Role: store.RoleUser, Text: "what is the weather?", Images: []string{"/ws/media/inbound/0a1b2c3d4e5f6a7b.png", "/ws/media/inbound/sky.jpg"}},
		{Role: store.RoleAssistant, ToolCalls: []store.ToolCall{{ID: "c1", Name: "weather", Arguments: `{"city":"Hangzhou"}`}}},
		{Role: store.RoleTool, ToolCallID: "c1", Text: "sunny"},
		{Role: store.RoleAssistant, Text: "It is sunny.", Partial: true},
	}
	for i, turn := range in {
		got := mustAppend(t, s, "k", turn)
		if got.Seq != int64(i+1) || got.At.IsZero() {
			t.Errorf("append %d: seq %d at %v", i, got.Seq, got.At)
		}
		mustAppend(t, s, "other", store.Turn{Role: store.RoleUser, Text: fmt.Sprint(i)})
	}
	got := mustTranscript(t, s, "k")
	if diff := cmp.Diff(in, got, cmpopts.IgnoreFields(store.Turn{}, "Seq", "At")); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
	at := time.Date(2026, 3, 25, 14, 30, 0, 0, time.UTC)
	mustAppend(t, s, "k", store.Turn{Role: store.RoleUser, Text: "dated", At: at})
	if tr := mustTranscript(t, s, "k"); !tr[len(tr)-1].At.Equal(at) {
		t.Errorf("a given At must be kept: got %v", tr[len(tr)-1].At)
	}
}

func testTranscriptConcurrentAppends(t *testing.T, s store.Store) {
	mustOpen(t, s, "k")
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := s.AppendTurn(context.Background(), "k", store.Turn{Role: store.RoleUser, Text: fmt.Sprint(i)}); err != nil {
				t.Errorf("append: %v", err)
			}
		})
	}
	wg.Wait()
	tr := mustTranscript(t, s, "k")
	if len(tr) != n {
		t.Fatalf("got %d turns, want %d", len(tr), n)
	}
	for i, turn := range tr {
		if turn.Seq != int64(i+1) {
			t.Fatalf("turn %d has seq %d: sequence numbers must be dense and unique", i, turn.Seq)
		}
	}
}

func inbound(id string, peer msg.Peer, at time.Time, text string) msg.Message {
	return msg.Message{
		ID: msg.MessageID(id), Channel: "onebot", Account: msg.DefaultAccount, Peer: peer,
		Sender: msg.Sender{ID: "10001", Name: "Alice"}, Time: at,
		Segments: []msg.Segment{msg.Text(text)}, Text: text, ReplyTo: "9",
		ForwardIDs: []msg.ForwardID{"fw1"}, Mentions: []msg.UserID{"42"},
	}
}

func testInboundLog(t *testing.T, s store.Store) {
	ctx := context.Background()
	g := msg.Peer{Kind: msg.Group, ID: "123"}
	base := time.Date(2026, 3, 25, 14, 30, 0, 0, time.UTC)
	var last int64
	for i := range 5 {
		seq, err := s.LogInbound(ctx, inbound(fmt.Sprint(i), g, base.Add(time.Duration(i)*time.Second), fmt.Sprint("m", i)), 0)
		if err != nil || seq <= last {
			t.Fatalf("log %d: seq=%d (after %d) err=%v", i, seq, last, err)
		}
		last = seq
	}
	// Delivered again: logged again, read once.
	if _, err := s.LogInbound(ctx, inbound("3", g, base, "again"), 0); err != nil {
		t.Fatal(err)
	}
	other := msg.Peer{Kind: msg.Group, ID: "456"}
	if _, err := s.LogInbound(ctx, inbound("3", other, base, "same id, other peer"), 0); err != nil {
		t.Fatal(err)
	}
	got, err := s.RecentInbound(ctx, "onebot", msg.DefaultAccount, g, 3)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, lm := range got {
		texts = append(texts, lm.Message.Text)
	}
	if diff := cmp.Diff([]string{"m2", "m4", "again"}, texts); diff != "" {
		t.Fatalf("recent messages, oldest first, each id once (-want +got):\n%s", diff)
	}
	want := inbound("4", g, base.Add(4*time.Second), "m4")
	if diff := cmp.Diff(want, got[1].Message, cmpopts.EquateApproxTime(time.Millisecond)); diff != "" {
		t.Errorf("message round trip (-want +got):\n%s", diff)
	}
	if got[1].Seq != last || got[1].LoggedAt.IsZero() {
		t.Errorf("entry %+v: want seq %d and a log time", got[1], last)
	}
	if got, _ := s.RecentInbound(ctx, "onebot", "other account", g, 3); len(got) != 0 {
		t.Errorf("another account's chat: %+v", got)
	}
}

// testInboundLogBurst: thousands of entries logged at once from several
// goroutines are all kept, numbered in the order each goroutine logged
// them, and read back per chat in that order.
func testInboundLogBurst(t *testing.T, s store.Store) {
	ctx := context.Background()
	const chats, each = 4, 700
	var wg sync.WaitGroup
	for c := range chats {
		wg.Go(func() {
			peer := msg.Peer{Kind: msg.Group, ID: fmt.Sprint(c)}
			last := int64(0)
			for i := range each {
				seq, err := s.LogInbound(ctx, inbound(fmt.Sprint(i), peer, time.Now(), fmt.Sprint(i)), store.ViewHistory)
				if err != nil || seq <= last {
					t.Errorf("chat %d entry %d: seq %d after %d, %v", c, i, seq, last, err)
					return
				}
				last = seq
			}
		})
	}
	wg.Wait()
	for c := range chats {
		peer := msg.Peer{Kind: msg.Group, ID: fmt.Sprint(c)}
		got, err := s.RecentInbound(ctx, "onebot", msg.DefaultAccount, peer, 2*each)
		if err != nil || len(got) != each {
			t.Fatalf("chat %d: %d entries, %v", c, len(got), err)
		}
		for i, lm := range got {
			if lm.Message.Text != fmt.Sprint(i) || (i > 0 && lm.Seq <= got[i-1].Seq) {
				t.Fatalf("chat %d entry %d: %q seq %d", c, i, lm.Message.Text, lm.Seq)
			}
		}
	}
	held, err := s.HeldInbound(ctx, "onebot", msg.DefaultAccount, store.ViewHistory, 10)
	if err != nil || len(held) != chats*10 {
		t.Errorf("history views: %d entries, %v", len(held), err)
	}
}

// testInboundViews: a view holds what was logged into it after its mark,
// the newest limit of it, per chat of one account.
func testInboundViews(t *testing.T, s store.Store) {
	ctx := context.Background()
	g1, g2 := msg.Peer{Kind: msg.Group, ID: "1"}, msg.Peer{Kind: msg.Group, ID: "2"}
	seqs := map[string]int64{}
	log := func(acct msg.AccountID, peer msg.Peer, id string, views store.Views) {
		t.Helper()
		m := inbound(id, peer, time.Now(), id)
		m.Account = acct
		seq, err := s.LogInbound(ctx, m, views)
		if err != nil {
			t.Fatal(err)
		}
		seqs[id] = seq
	}
	both := store.ViewHistory | store.ViewDigest
	log("a", g1, "h1", store.ViewHistory)
	log("a", g1, "x", 0)
	log("a", g1, "b2", both)
	log("a", g2, "h3", store.ViewHistory)
	log("a", g1, "d4", store.ViewDigest)
	log("a", g1, "h5", store.ViewHistory)
	log("a2", g1, "other account", both) // "a2" must not be read as "a"
	held := func(acct msg.AccountID, view store.Views, limit int) []string {
		t.Helper()
		got, err := s.HeldInbound(ctx, "onebot", acct, view, limit)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, lm := range got {
			if lm.Seq != seqs[string(lm.Message.ID)] {
				t.Errorf("%s: seq %d, logged as %d", lm.Message.ID, lm.Seq, seqs[string(lm.Message.ID)])
			}
			ids = append(ids, lm.Message.Peer.ID+":"+string(lm.Message.ID))
		}
		return ids
	}
	check := func(what string, got []string, want ...string) {
		t.Helper()
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}
	check("history", held("a", store.ViewHistory, 10), "1:h1", "1:b2", "1:h5", "2:h3")
	check("digest", held("a", store.ViewDigest, 10), "1:b2", "1:d4")
	check("history, the newest 2 a chat", held("a", store.ViewHistory, 2), "1:b2", "1:h5", "2:h3")
	check("another account", held("a2", store.ViewHistory, 10), "1:other account")

	// A mark takes the view past a message; the other view keeps it; a
	// mark never moves back.
	mark := func(peer msg.Peer, view store.Views, seq int64) store.Mark {
		return store.Mark{Channel: "onebot", Account: "a", Peer: peer, View: view, Seq: seq}
	}
	if err := s.Advance(ctx, mark(g1, store.ViewHistory, seqs["b2"])); err != nil {
		t.Fatal(err)
	}
	check("history after the mark", held("a", store.ViewHistory, 10), "1:h5", "2:h3")
	check("digest untouched", held("a", store.ViewDigest, 10), "1:b2", "1:d4")
	if err := s.Advance(ctx, mark(g1, store.ViewHistory, seqs["h1"])); err != nil {
		t.Fatal(err)
	}
	check("an older mark does not move the view back", held("a", store.ViewHistory, 10), "1:h5", "2:h3")

	// AdmitTurn applies marks with the claim, admitted or not.
	c := store.Consumed{Marks: []store.Mark{mark(g1, store.ViewDigest, seqs["d4"]), mark(g2, store.ViewHistory, seqs["h3"])}}
	if ok, err := s.AdmitTurn(ctx, "in:v1", time.Hour, nil, c); !ok || err != nil {
		t.Fatalf("admit: %v %v", ok, err)
	}
	check("history after the turn", held("a", store.ViewHistory, 10), "1:h5")
	check("digest after the turn", held("a", store.ViewDigest, 10))
	log("a", g2, "h6", store.ViewHistory)
	if ok, err := s.AdmitTurn(ctx, "in:v1", time.Hour, nil, store.Consumed{Marks: []store.Mark{mark(g2, store.ViewHistory, seqs["h6"])}}); ok || err != nil {
		t.Fatalf("duplicate admit: %v %v", ok, err)
	}
	check("a duplicate's marks apply too", held("a", store.ViewHistory, 10), "1:h5")
}

func testAdmit(t *testing.T, s store.Store) {
	ctx := context.Background()
	if ok, err := s.AdmitTurn(ctx, "k1", time.Hour, nil, store.Consumed{}); !ok || err != nil {
		t.Fatalf("first admit: %v %v", ok, err)
	}
	if ok, err := s.AdmitTurn(ctx, "k1", time.Hour, nil, store.Consumed{}); ok || err != nil {
		t.Fatalf("second admit: %v %v", ok, err)
	}
	if ok, _ := s.ClaimDedup(ctx, "k1", time.Hour); ok {
		t.Error("AdmitTurn must hold the dedup claim")
	}
}

func testDedupClaim(t *testing.T, s store.Store) {
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 16 {
		wg.Go(func() {
			ok, err := s.ClaimDedup(ctx, "onebot:1:group:9:m1", time.Hour)
			if err != nil {
				t.Errorf("claim: %v", err)
			}
			if ok {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("%d concurrent claims won, want exactly 1", wins)
	}
	if ok, _ := s.ClaimDedup(ctx, "other", time.Hour); !ok {
		t.Error("a different key must be claimable")
	}
	if err := s.ReleaseDedup(ctx, "other"); err != nil {
		t.Fatalf("release: %v", err)
	}
	if ok, _ := s.ClaimDedup(ctx, "other", time.Hour); !ok {
		t.Error("a released key must be claimable again")
	}
	if ok, _ := s.ClaimDedup(ctx, "onebot:1:group:9:m1", time.Hour); ok {
		t.Error("releasing one key must not release another")
	}
	if err := s.ReleaseDedup(ctx, "never-claimed"); err != nil {
		t.Errorf("releasing a key never claimed: %v", err)
	}
}

// testDedupExpiry runs inside a synctest bubble, so time moves only when
// every goroutine of the test is blocked.
func testDedupExpiry(t *testing.T, s store.Store) {
	ctx := context.Background()
	if ok, err := s.ClaimDedup(ctx, "k", 20*time.Minute); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	time.Sleep(19 * time.Minute)
	if ok, _ := s.ClaimDedup(ctx, "k", 20*time.Minute); ok {
		t.Error("claimed again before expiry")
	}
	time.Sleep(2 * time.Minute)
	if n, err := s.PruneDedup(ctx); err != nil || n != 1 {
		t.Errorf("prune: %d, %v; want 1 expired key", n, err)
	}
	if ok, _ := s.ClaimDedup(ctx, "k", 20*time.Minute); !ok {
		t.Error("an expired key must be claimable again")
	}
}

func mustOpen(t *testing.T, s store.Store, key string) {
	t.Helper()
	if _, _, err := s.OpenSession(context.Background(), key, "main"); err != nil {
		t.Fatal(err)
	}
}

func mustAppend(t *testing.T, s store.Store, key string, turn store.Turn) store.Turn {
	t.Helper()
	got, err := s.AppendTurn(context.Background(), key, turn)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func mustTranscript(t *testing.T, s store.Store, key string) []store.Turn {
	t.Helper()
	tr, err := s.Transcript(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func testBuffers(t *testing.T, s store.Store) {
	ctx := context.Background()
	g := msg.Peer{Kind: msg.Group, ID: "1"}
	at := time.Now().Truncate(time.Millisecond)
	entries := []store.Buffered{
		{Scope: "onebot/default", Kind: "realtime", Key: "group:1::v", Message: inbound("a", g, at, "one")},
		{Scope: "onebot/default", Kind: "realtime", Key: "group:1::u", Message: inbound("b", g, at, "two"), Trigger: msg.TriggerMention},
		{Scope: "onebot/other", Kind: "realtime", Key: "group:1::u", Message: inbound("c", g, at, "three")},
	}
	ids, err := s.Buffer(ctx, entries)
	if err != nil || len(ids) != 3 || ids[0] == ids[1] || ids[1] == ids[2] {
		t.Fatalf("ids %v err %v", ids, err)
	}
	got, err := s.BufferedEntries(ctx, "onebot/default")
	if err != nil || len(got) != 2 {
		t.Fatalf("entries %+v err %v", got, err)
	}
	if got[0].ID != ids[0] || got[0].Kind != "realtime" || got[0].Key != "group:1::v" || got[0].Message.Text != "one" || !got[0].Message.Time.Equal(at) {
		t.Errorf("first entry %+v", got[0])
	}
	if got[1].Trigger != msg.TriggerMention || got[1].Message.ID != "b" || got[1].At.IsZero() {
		t.Errorf("second entry %+v", got[1])
	}
	if err := s.Unbuffer(ctx, []int64{ids[0], 999999}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.BufferedEntries(ctx, "onebot/default"); len(got) != 1 || got[0].ID != ids[1] {
		t.Errorf("after unbuffer: %+v", got)
	}
	if err := s.Unbuffer(ctx, nil); err != nil {
		t.Errorf("nothing to unbuffer: %v", err)
	}
}

func testAdmitConsumes(t *testing.T, s store.Store) {
	ctx := context.Background()
	g := msg.Peer{Kind: msg.Group, ID: "1"}
	m := inbound("m1", g, time.Now(), "hello")
	ids, err := s.Buffer(ctx, []store.Buffered{
		{Scope: "x", Kind: "realtime", Key: "k", Message: m},
		{Scope: "x", Kind: "realtime", Key: "k", Message: inbound("m0", g, time.Now(), "before")},
		{Scope: "x", Kind: "realtime", Key: "k2", Message: m},
	})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.AdmitTurn(ctx, "in:m1", time.Hour, nil, store.Consumed{Entries: ids[:2]}); !ok || err != nil {
		t.Fatalf("admit: %v %v", ok, err)
	}
	if got, _ := s.BufferedEntries(ctx, "x"); len(got) != 1 || got[0].ID != ids[2] {
		t.Errorf("the consumed entries must be gone, the other window's kept: %+v", got)
	}
	// A duplicate still consumes what it names: a restored copy of a batch
	// already handed on must not stay buffered.
	more, _ := s.Buffer(ctx, []store.Buffered{{Scope: "x", Kind: "realtime", Key: "k", Message: m}})
	if ok, err := s.AdmitTurn(ctx, "in:m1", time.Hour, nil, store.Consumed{Entries: more}); ok || err != nil {
		t.Fatalf("duplicate admit: %v %v", ok, err)
	}
	if got, _ := s.BufferedEntries(ctx, "x"); len(got) != 1 {
		t.Errorf("a duplicate's entries are consumed too: %+v", got)
	}
}

func testSentLog(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.RecordSent(ctx, "onebot", "default", "101", "-102", "103"); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordSent(ctx, "onebot", "default"); err != nil {
		t.Fatalf("recording nothing: %v", err)
	}
	if err := s.RecordSent(ctx, "onebot", "default", "101"); err != nil {
		t.Fatalf("recording an id again: %v", err)
	}
	if err := s.RecordSent(ctx, "onebot", "work", "201"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ch   msg.ChannelID
		acct msg.AccountID
		id   msg.MessageID
		want bool
	}{
		{"onebot", "default", "101", true},
		{"onebot", "default", "-102", true},
		{"onebot", "default", "103", true},
		{"onebot", "default", "104", false},
		{"onebot", "default", "201", false}, // another account's
		{"onebot", "work", "201", true},
		{"onebot", "work", "101", false},
		{"feishu", "default", "101", false}, // another channel's
	} {
		got, err := s.WasSent(ctx, tt.ch, tt.acct, tt.id)
		if err != nil || got != tt.want {
			t.Errorf("WasSent(%s, %s, %s) = %v, %v; want %v", tt.ch, tt.acct, tt.id, got, err, tt.want)
		}
	}
}

// testSentPrune runs in a synctest bubble: time moves only when the test
// sleeps.
func testSentPrune(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.RecordSent(ctx, "onebot", "default", "1", "2"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Hour)
	cut := time.Now()
	time.Sleep(time.Hour)
	if err := s.RecordSent(ctx, "onebot", "default", "3"); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordSent(ctx, "onebot", "work", "2"); err != nil { // refreshed: same id, other account
		t.Fatal(err)
	}
	n, err := s.PruneSent(ctx, cut)
	if err != nil || n != 2 {
		t.Fatalf("pruned %d, %v; want 2", n, err)
	}
	for id, want := range map[msg.MessageID]bool{"1": false, "2": false, "3": true} {
		if got, err := s.WasSent(ctx, "onebot", "default", id); err != nil || got != want {
			t.Errorf("after pruning, WasSent(%s) = %v, %v; want %v", id, got, err, want)
		}
	}
	if got, _ := s.WasSent(ctx, "onebot", "work", "2"); !got {
		t.Error("an id recorded after the cut is kept")
	}
	// Recording again refreshes the time.
	time.Sleep(time.Hour)
	if err := s.RecordSent(ctx, "onebot", "default", "3"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneSent(ctx, time.Now().Add(-30*time.Minute)); err != nil || n != 1 {
		t.Errorf("pruned %d, %v; want 1", n, err)
	}
	if got, _ := s.WasSent(ctx, "onebot", "default", "3"); !got {
		t.Error("a refreshed id is kept")
	}
	if got, _ := s.WasSent(ctx, "onebot", "work", "2"); got {
		t.Error("an id older than the cut is pruned")
	}
}

func testJournal(t *testing.T, s store.Store) {
	ctx := context.Background()
	if ok, err := s.AdmitTurn(ctx, "in:j1", time.Hour, []byte(`{"turn":1}`), store.Consumed{}); !ok || err != nil {
		t.Fatalf("admit: %v %v", ok, err)
	}
	if ok, err := s.AdmitTurn(ctx, "in:j1", time.Hour, []byte(`{"turn":2}`), store.Consumed{}); ok || err != nil {
		t.Fatalf("a duplicate is not admitted nor journaled: %v %v", ok, err)
	}
	if ok, err := s.AdmitTurn(ctx, "in:j2", time.Hour, nil, store.Consumed{}); !ok || err != nil {
		t.Fatalf("admit without a journal entry: %v %v", ok, err)
	}
	pending, err := s.PendingTurns(ctx)
	if err != nil || len(pending) != 1 || pending[0].Key != "in:j1" || string(pending[0].Turn) != `{"turn":1}` || pending[0].Attempts != 0 {
		t.Fatalf("pending %+v %v", pending, err)
	}
	for want := 1; want <= 2; want++ {
		if n, err := s.ResumeTurn(ctx, "in:j1"); n != want || err != nil {
			t.Errorf("resume %d: %d %v", want, n, err)
		}
	}
	if n, err := s.ResumeTurn(ctx, "unknown"); n != 0 || err != nil {
		t.Errorf("resume unknown: %d %v", n, err)
	}
	if err := s.FinishTurn(ctx, "in:j1", "unknown"); err != nil {
		t.Fatal(err)
	}
	if pending, err := s.PendingTurns(ctx); len(pending) != 0 || err != nil {
		t.Errorf("after finish: %+v %v", pending, err)
	}
}

func testOutbox(t *testing.T, s store.Store) {
	ctx := context.Background()
	out := msg.Outbound{Account: "default", Peer: msg.Peer{Kind: msg.Group, ID: "7"}, Text: "long reply", ReplyTo: "m1",
		Mentionable: []msg.Sender{{ID: "1", Name: "A"}}}
	e := store.OutboxEntry{ID: "in:m1#1", Channel: "onebot", Out: out}
	if added, err := s.AddOutbox(ctx, e); !added || err != nil {
		t.Fatalf("add: %v %v", added, err)
	}
	if added, err := s.AddOutbox(ctx, e); added || err != nil {
		t.Fatalf("the same id is added once: %v %v", added, err)
	}
	other := e
	other.ID, other.Out.Account = "in:x#1", "other"
	if _, err := s.AddOutbox(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateOutbox(ctx, e.ID, 2, 3, store.OutboxPending, "not connected"); err != nil {
		t.Fatal(err)
	}
	got, err := s.PendingOutbox(ctx, "onebot", "default")
	if err != nil || len(got) != 1 {
		t.Fatalf("pending %+v %v", got, err)
	}
	g := got[0]
	if g.ID != e.ID || g.Sent != 2 || g.Attempts != 3 || g.LastError != "not connected" || g.State != store.OutboxPending || g.Created.IsZero() {
		t.Errorf("entry %+v", g)
	}
	if diff := cmp.Diff(out, g.Out); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
	for prefix, want := range map[string]bool{"in:m1#": true, "in:m1": true, "in:m2#": false, "": true} {
		if has, err := s.HasOutbox(ctx, prefix); has != want || err != nil {
			t.Errorf("HasOutbox(%q) = %v %v", prefix, has, err)
		}
	}
	if err := s.UpdateOutbox(ctx, e.ID, 3, 4, store.OutboxSent, ""); err != nil {
		t.Fatal(err)
	}
	second := e
	second.ID, second.Out.Text = "in:m1#2", "more"
	if _, err := s.AddOutbox(ctx, second); err != nil {
		t.Fatal(err)
	}
	entries, err := s.OutboxEntries(ctx, "in:m1#")
	if err != nil || len(entries) != 2 {
		t.Fatalf("entries of in:m1: %+v %v", entries, err)
	}
	if entries[0].ID != e.ID || entries[0].State != store.OutboxSent || entries[0].Sent != 3 || entries[0].Out.Text != "long reply" ||
		entries[1].ID != second.ID || entries[1].State != store.OutboxPending || entries[1].Out.Text != "more" {
		t.Errorf("entries of in:m1, in any state, oldest first: %+v", entries)
	}
	if entries, err := s.OutboxEntries(ctx, "in:m2#"); len(entries) != 0 || err != nil {
		t.Errorf("entries of in:m2: %+v %v", entries, err)
	}
	if err := s.UpdateOutbox(ctx, second.ID, 1, 1, store.OutboxSent, ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.PendingOutbox(ctx, "onebot", "default"); len(got) != 0 {
		t.Errorf("a sent entry is not pending: %+v", got)
	}
	if added, _ := s.AddOutbox(ctx, e); added {
		t.Error("a sent entry still blocks its id")
	}
	if n, err := s.PruneOutbox(ctx, time.Now().Add(time.Hour)); n != 2 || err != nil {
		t.Errorf("prune: %d %v; the pending entry of the other account stays", n, err)
	}
	if has, _ := s.HasOutbox(ctx, "in:x#"); !has {
		t.Error("pending entries are never pruned")
	}
}

func testProbe(t *testing.T, s store.Store) {
	if err := s.Probe(context.Background()); err != nil {
		t.Errorf("a fresh store is writable: %v", err)
	}
}

// testInboundPrune: pruning removes the oldest part of each chat's log
// that no view holds, keeps what a view holds (and all after it) whatever
// its age, and keeps entries logged after the cut-off.
func testInboundPrune(t *testing.T, s store.Store) {
	ctx := context.Background()
	seqs := map[string]int64{}
	log := func(peer msg.Peer, id string, views store.Views) {
		t.Helper()
		seq, err := s.LogInbound(ctx, inbound(id, peer, time.Now(), id), views)
		if err != nil {
			t.Fatal(err)
		}
		seqs[id] = seq
	}
	marked, plain, untaken := msg.Peer{Kind: msg.Group, ID: "m"}, msg.Peer{Kind: msg.Group, ID: "p"}, msg.Peer{Kind: msg.Group, ID: "u"}
	for _, id := range []string{"m1", "m2", "m3", "m4", "m5"} {
		log(marked, id, store.ViewHistory)
	}
	log(marked, "mx", 0) // after the mark: kept with what the view holds
	log(plain, "p1", 0)
	log(plain, "p2", 0)
	log(untaken, "u1", store.ViewDigest)
	log(untaken, "u2", 0)
	if err := s.Advance(ctx, store.Mark{Channel: "onebot", Account: msg.DefaultAccount, Peer: marked, View: store.ViewHistory, Seq: seqs["m3"]}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneInbound(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("nothing is old enough: pruned %d, %v", n, err)
	}
	n, err := s.PruneInbound(ctx, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Errorf("pruned %d entries, want 5 (m1-m3, p1, p2)", n)
	}
	recent := func(peer msg.Peer) []string {
		t.Helper()
		got, err := s.RecentInbound(ctx, "onebot", msg.DefaultAccount, peer, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, lm := range got {
			ids = append(ids, string(lm.Message.ID))
		}
		return ids
	}
	if diff := cmp.Diff([]string{"m4", "m5", "mx"}, recent(marked)); diff != "" {
		t.Errorf("marked chat (-want +got):\n%s", diff)
	}
	if got := recent(plain); len(got) != 0 {
		t.Errorf("a chat no view holds keeps %v", got)
	}
	if diff := cmp.Diff([]string{"u1", "u2"}, recent(untaken)); diff != "" {
		t.Errorf("a view never taken holds everything (-want +got):\n%s", diff)
	}
	held, err := s.HeldInbound(ctx, "onebot", msg.DefaultAccount, store.ViewHistory, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 2 || held[0].Message.ID != "m4" || held[1].Message.ID != "m5" {
		t.Errorf("history view after pruning: %+v", held)
	}
	// The chat goes on after its pruned entries.
	log(plain, "p3", 0)
	if diff := cmp.Diff([]string{"p3"}, recent(plain)); diff != "" {
		t.Errorf("a pruned chat goes on (-want +got):\n%s", diff)
	}
}

// testInboundBuffered: a message logged with its realtime entry is in the
// log and among the buffered entries, with the numbers returned.
func testInboundBuffered(t *testing.T, s store.Store) {
	ctx := context.Background()
	g := msg.Peer{Kind: msg.Group, ID: "b"}
	m := inbound("7", g, time.Now(), "@bot 在吗")
	seq, id, err := s.LogInboundBuffered(ctx, m, store.ViewHistory, store.Buffered{Scope: "onebot/default", Kind: "realtime", Key: "group:b::10001", Message: m, Trigger: msg.TriggerMention})
	if err != nil || seq == 0 || id == 0 {
		t.Fatalf("seq %d id %d err %v", seq, id, err)
	}
	got, err := s.RecentInbound(ctx, "onebot", msg.DefaultAccount, g, 5)
	if err != nil || len(got) != 1 || got[0].Seq != seq || got[0].Message.ID != "7" || got[0].Views != store.ViewHistory {
		t.Errorf("log: %+v %v", got, err)
	}
	entries, err := s.BufferedEntries(ctx, "onebot/default")
	if err != nil || len(entries) != 1 || entries[0].ID != id || entries[0].Key != "group:b::10001" || entries[0].Trigger != msg.TriggerMention || entries[0].Message.Text != "@bot 在吗" {
		t.Errorf("buffered: %+v %v", entries, err)
	}
}

// testInboundPending: an entry logged pending reads as pending, as it
// came, in its chat's place, until CompleteInbound rewrites it; another
// chat's entry of the same number is not rewritten.
func testInboundPending(t *testing.T, s store.Store) {
	ctx := context.Background()
	g, other := msg.Peer{Kind: msg.Group, ID: "123"}, msg.Peer{Kind: msg.Group, ID: "456"}
	base := time.Date(2026, 3, 25, 14, 30, 0, 0, time.UTC)
	if _, err := s.LogInbound(ctx, inbound("1", g, base, "before"), store.ViewHistory); err != nil {
		t.Fatal(err)
	}
	fwd := inbound("2", g, base.Add(time.Second), "Merged and Forwarded Message")
	seq, err := s.LogInboundPending(ctx, fwd, store.ViewHistory)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.LogInbound(ctx, inbound("3", g, base.Add(2*time.Second), "after"), store.ViewHistory); err != nil {
		t.Fatal(err)
	}
	read := func() []string {
		t.Helper()
		got, err := s.HeldInbound(ctx, "onebot", msg.DefaultAccount, store.ViewHistory, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, lm := range got {
			out = append(out, fmt.Sprintf("%s pending=%v", lm.Message.Text, lm.Pending))
		}
		return out
	}
	if diff := cmp.Diff([]string{"before pending=false", "Merged and Forwarded Message pending=true", "after pending=false"}, read()); diff != "" {
		t.Fatalf("held before the entry is completed (-want +got):\n%s", diff)
	}
	done := fwd
	done.Text, done.Segments, done.ForwardIDs = "【合并转发,共 1 条】", []msg.Segment{msg.Text("【合并转发,共 1 条】")}, nil
	wrong := done
	wrong.Peer = other
	if err := s.CompleteInbound(ctx, seq, wrong); err != nil {
		t.Fatal(err)
	}
	if got := read(); got[1] != "Merged and Forwarded Message pending=true" {
		t.Errorf("another chat's completion rewrote the entry: %q", got)
	}
	if err := s.CompleteInbound(ctx, seq, done); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"before pending=false", "【合并转发,共 1 条】 pending=false", "after pending=false"}, read()); diff != "" {
		t.Errorf("held once it is completed (-want +got):\n%s", diff)
	}
	lm, ok, err := s.FindInbound(ctx, "onebot", msg.DefaultAccount, g, "2", 5)
	if err != nil || !ok || lm.Seq != seq || lm.Message.Text != done.Text || lm.Pending {
		t.Errorf("FindInbound of the completed entry: %+v, %v, %v", lm, ok, err)
	}
	if _, ok, err := s.FindInbound(ctx, "onebot", msg.DefaultAccount, g, "1", 1); ok || err != nil {
		t.Errorf("FindInbound looked further back than asked: %v, %v", ok, err)
	}
	if _, ok, _ := s.FindInbound(ctx, "onebot", msg.DefaultAccount, other, "2", 5); ok {
		t.Error("FindInbound found another chat's entry")
	}
	recent, err := s.RecentInbound(ctx, "onebot", msg.DefaultAccount, g, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(recent) != 2 || len(recent[0].Message.ForwardIDs) != 0 || recent[0].Message.Text != done.Text {
		t.Errorf("the completed entry read back: %+v", recent)
	}
}

// testTokenUse: counts add up per day and key, reads see what was just
// added, a day's largest counts list by prefix, and pruning drops the
// days before a day.
func testTokenUse(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, add := range []struct {
		day  string
		n    int64
		keys []string
	}{
		{"2026-01-01", 10, []string{"user:a", "chat:x"}},
		{"2026-01-01", 5, []string{"user:b", "chat:x"}},
		{"2026-01-01", 7, []string{"user:a"}},
		{"2026-01-02", 3, []string{"user:a", "chat:x"}},
		{"2026-01-02", 0, []string{"user:z"}},
	} {
		if err := s.AddTokens(ctx, add.day, add.n, add.keys...); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.TokensUsed(ctx, "2026-01-01", "user:a", "user:b", "chat:x", "user:none")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int64{"user:a": 17, "user:b": 5, "chat:x": 15}, got); diff != "" {
		t.Errorf("tokens of day 1 (-want +got):\n%s", diff)
	}
	got, err = s.TokensUsed(ctx, "2026-01-02", "user:a", "user:z")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int64{"user:a": 3}, got); diff != "" {
		t.Errorf("tokens of day 2 (-want +got):\n%s", diff)
	}
	top, err := s.TopTokenUse(ctx, "2026-01-01", "user:", 10)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]store.TokenCount{{Key: "user:a", Tokens: 17}, {Key: "user:b", Tokens: 5}}, top); diff != "" {
		t.Errorf("top users of day 1 (-want +got):\n%s", diff)
	}
	if top, err = s.TopTokenUse(ctx, "2026-01-01", "", 1); err != nil || len(top) != 1 || top[0] != (store.TokenCount{Key: "user:a", Tokens: 17}) {
		t.Errorf("top key of day 1: %v %v", top, err)
	}
	n, err := s.PruneTokenUse(ctx, "2026-01-02")
	if err != nil || n != 3 {
		t.Errorf("prune: %d rows, %v; want 3", n, err)
	}
	if got, err = s.TokensUsed(ctx, "2026-01-01", "user:a"); err != nil || len(got) != 0 {
		t.Errorf("day 1 after pruning: %v %v", got, err)
	}
	if got, err = s.TokensUsed(ctx, "2026-01-02", "chat:x"); err != nil || got["chat:x"] != 3 {
		t.Errorf("day 2 after pruning: %v %v", got, err)
	}
}
