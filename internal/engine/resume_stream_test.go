package engine

import (
	"context"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/reply"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/store/sqlite"
)

// stallingProvider streams the next script's deltas for each call (the last
// script repeats) and records the requests. A script with hold > 0 stops
// after that many deltas until the call is cancelled.
type stallingProvider struct {
	mu      sync.Mutex
	scripts []script
	reqs    []llm.Request
}

type script struct {
	deltas []string
	hold   int
}

func (p *stallingProvider) ID() string { return "fake" }

func (p *stallingProvider) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		p.mu.Lock()
		s := p.scripts[min(len(p.reqs), len(p.scripts)-1)]
		p.reqs = append(p.reqs, req)
		p.mu.Unlock()
		for i, d := range s.deltas {
			if s.hold > 0 && i == s.hold {
				<-ctx.Done()
				yield(llm.Event{}, llm.Transport("fake", req.Model, ctx, ctx.Err()))
				return
			}
			if !yield(llm.Event{Kind: llm.EventText, Text: d}, nil) {
				return
			}
		}
		yield(llm.Event{Kind: llm.EventDone}, nil)
	}
}

func (p *stallingProvider) requests() []llm.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]llm.Request(nil), p.reqs...)
}

// outboxReplier stores every payload in the outbox under its id before it
// counts it as delivered, as the gateway's outbox does; a payload whose id
// is stored already is not delivered again.
type outboxReplier struct {
	st        store.Store
	mu        sync.Mutex
	delivered []msg.Outbound
}

func (r *outboxReplier) Partial(string) {}

func (r *outboxReplier) Deliver(ctx context.Context, out msg.Outbound) (msg.MessageID, error) {
	added, err := r.st.AddOutbox(ctx, store.OutboxEntry{ID: out.ID, Channel: "webchat", Out: out})
	if err != nil || !added {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delivered = append(r.delivered, out)
	return "sent", nil
}

func (r *outboxReplier) payloads() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.delivered {
		out = append(out, p.ID+" "+p.Text)
	}
	return out
}

// blocks streams replies one paragraph a block.
var blocks = &reply.ChunkOptions{MinChars: 1, MaxChars: 400, BreakOn: reply.BreakParagraph}

// crashMidReply runs a turn (replies headed by prefix) on a store of its
// own at path whose model streams deltas and then stalls; once the first
// blocks are stored, the process "dies": its store is closed under it, so
// nothing it does afterwards is written. It returns the turn's message and
// what reached the chat.
func crashMidReply(t *testing.T, path, prefix string, deltas []string, hold int) (msg.Message, []string) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	first := engineOn(t, st, &stallingProvider{scripts: []script{{deltas: deltas, hold: hold}}}, Options{Blocks: blocks, ResponsePrefix: prefix})
	m := message("1", "b1", "讲讲三件事", t0)
	mc := NewMsgContext(m)
	mc.Delivery = delivery
	chat := &outboxReplier{st: st}
	go func() { _ = first.DispatchContext(context.Background(), mc, chat) }()
	synctest.Wait() // the model stalls after its first paragraphs
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	first.cancel() // the rest of the dead process
	synctest.Wait()
	return m, chat.payloads()
}

// TestResumeFinishesAReplyCutMidStream: pincer dies while the model is
// streaming a reply in blocks, two of them stored (and sent) already.
// After the restart the turn is not dropped: the model is shown what it
// had sent and asked for the rest, which goes out once, numbered after
// the stored blocks; a rest that starts by repeating blocks the chat has
// seen has those dropped; and the transcript keeps the reply as the chat
// got it, in one assistant turn.
func TestResumeFinishesAReplyCutMidStream(t *testing.T) {
	for _, tt := range []struct {
		name   string
		rest   []string
		want   []string // payloads delivered after the restart
		stored string   // the assistant turn the transcript keeps
		prefix string   // messages.responsePrefix
	}{
		{"continues", []string{"第三，", "收尾。"}, []string{"#3 第三，收尾。"}, "第一，开头。\n\n第二，中间。\n\n第三，收尾。", ""},
		{"with a response prefix", []string{"第三，", "收尾。"}, []string{"#3 [m] 第三，收尾。"}, "第一，开头。\n\n第二，中间。\n\n第三，收尾。", "[{model}] "},
		{"starts over", []string{"第一，开头。\n\n", "第二，中间。\n\n", "第三，收尾。"}, []string{"#3 第三，收尾。"}, "第一，开头。\n\n第二，中间。\n\n第三，收尾。", ""},
		{"repeats the last block", []string{"第二，中间。\n\n第三，", "收尾。"}, []string{"#3 第三，收尾。"}, "第一，开头。\n\n第二，中间。\n\n第三，收尾。", ""},
		{"only repeats", []string{"第一，开头。", "\n\n第二，中间。"}, nil, "第一，开头。\n\n第二，中间。", ""},
		{"shares a beginning only", []string{"第一，还有一点。"}, []string{"#3 第一，还有一点。"}, "第一，开头。\n\n第二，中间。\n\n第一，还有一点。", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "p.db")
				m, before := crashMidReply(t, path, tt.prefix, []string{"第一，开头。\n\n", "第二，中间。\n\n", "第三，没说完", "的话"}, 3)
				key := TurnKey(m)
				shown := strings.ReplaceAll(tt.prefix, "{model}", "m")
				if diff := cmp.Diff([]string{key + "#1 " + shown + "第一，开头。", key + "#2 " + shown + "第二，中间。"}, before); diff != "" {
					t.Fatalf("before the crash (-want +got):\n%s", diff)
				}

				st := openDB(t, path)
				model := &stallingProvider{scripts: []script{{deltas: tt.rest}}}
				second := engineOn(t, st, model, Options{Blocks: blocks, ResponsePrefix: tt.prefix})
				chat := &outboxReplier{st: st}
				n, err := second.Resume(context.Background(), func(MsgContext) (channel.Replier, bool) { return chat, true })
				if err != nil || n != 1 {
					t.Fatalf("resumed %d turns: %v; the turn cut mid-reply must be resumed", n, err)
				}
				if err := second.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, p := range tt.want {
					want = append(want, key+p)
				}
				if diff := cmp.Diff(want, chat.payloads()); diff != "" {
					t.Errorf("delivered after the restart (-want +got):\n%s", diff)
				}

				reqs := model.requests()
				if len(reqs) != 1 {
					t.Fatalf("%d model requests after the restart", len(reqs))
				}
				var got []string
				for _, mm := range reqs[0].Messages {
					got = append(got, string(mm.Role)+": "+mm.Text)
				}
				if diff := cmp.Diff([]string{
					"user: [webchat Ann Mon 2026-11-30 10:00 UTC] 讲讲三件事",
					"assistant: 第一，开头。\n\n第二，中间。",
					"user: " + resumeNote,
				}, got); diff != "" {
					t.Errorf("the resumed model call (-want +got):\n%s", diff)
				}

				tr, err := st.Transcript(context.Background(), second.SessionKey(m))
				if err != nil {
					t.Fatal(err)
				}
				got = nil
				for _, turn := range tr {
					got = append(got, string(turn.Role)+": "+turn.Text)
				}
				if diff := cmp.Diff([]string{"user: [webchat Ann Mon 2026-11-30 10:00 UTC] 讲讲三件事", "assistant: " + tt.stored}, got); diff != "" {
					t.Errorf("transcript (-want +got):\n%s", diff)
				}
				if pending, _ := st.PendingTurns(context.Background()); len(pending) != 0 {
					t.Errorf("still journaled: %+v", pending)
				}
			})
		})
	}
}

// admitted journals m's turn on st as DispatchContext would, with its
// user turn in the transcript and the stored payloads of its reply.
func admitted(t *testing.T, e *Engine, st store.Store, m msg.Message, transcript []store.Turn, payloads ...string) {
	t.Helper()
	ctx := context.Background()
	mc := NewMsgContext(m)
	mc.Delivery = delivery
	if _, err := st.AdmitTurn(ctx, TurnKey(m), time.Hour, mustEncode(t, mc), store.Consumed{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.OpenSession(ctx, e.SessionKey(m), "main"); err != nil {
		t.Fatal(err)
	}
	for _, turn := range transcript {
		if _, err := st.AppendTurn(ctx, e.SessionKey(m), turn); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range payloads {
		id := TurnKey(m) + "#" + string(rune('1'+i))
		if _, err := st.AddOutbox(ctx, store.OutboxEntry{ID: id, Channel: "webchat", Out: msg.Outbound{Account: m.Account, Peer: m.Peer, Text: p}}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestResumeOfAFinishedReply: pincer died after the model had finished
// (the transcript holds the reply) but before the turn was closed. The
// model is not asked again; what of the reply the outbox had not stored
// yet is delivered once, numbered after the stored payloads, and nothing
// when the outbox has it all.
func TestResumeOfAFinishedReply(t *testing.T) {
	for _, tt := range []struct {
		name   string
		stored []string
		want   []string
	}{
		{"last block missing", []string{"第一，开头。", "第二，中间。"}, []string{"#3 第三，收尾。"}},
		{"all stored", []string{"第一，开头。", "第二，中间。", "第三，收尾。"}, nil},
		{"nothing stored", nil, []string{"#1 第一，开头。\n\n第二，中间。\n\n第三，收尾。"}},
		{"stored in another form", []string{"第一：开头"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := openDB(t, filepath.Join(t.TempDir(), "p.db"))
				model := &stallingProvider{scripts: []script{{deltas: []string{"asked again"}}}}
				e := engineOn(t, st, model, Options{Blocks: blocks})
				m := message("1", "b1", "讲讲三件事", t0)
				admitted(t, e, st, m, []store.Turn{
					e.userTurn(NewMsgContext(m), m.Text, nil),
					{Role: store.RoleAssistant, Text: "第一，开头。\n\n第二，中间。\n\n第三，收尾。"},
				}, tt.stored...)
				chat := &outboxReplier{st: st}
				if _, err := e.Resume(context.Background(), func(MsgContext) (channel.Replier, bool) { return chat, true }); err != nil {
					t.Fatal(err)
				}
				if err := e.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, p := range tt.want {
					want = append(want, TurnKey(m)+p)
				}
				if diff := cmp.Diff(want, chat.payloads()); diff != "" {
					t.Errorf("delivered (-want +got):\n%s", diff)
				}
				if n := len(model.requests()); n != 0 {
					t.Errorf("the model was asked again %d times", n)
				}
				if pending, _ := st.PendingTurns(context.Background()); len(pending) != 0 {
					t.Errorf("still journaled: %+v", pending)
				}
			})
		})
	}
}

// TestResumeOfABatchCutMidStream: a reply to two messages asked together
// (collected) was cut after its first block, stored under the newer
// message, whose reply it was. Both turns are journaled; after the
// restart one run finishes the reply for both, which the model sees once
// each, and the rest goes to the newer message, numbered on.
func TestResumeOfABatchCutMidStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openDB(t, filepath.Join(t.TempDir(), "p.db"))
		model := &stallingProvider{scripts: []script{{deltas: []string{"第二，中间。"}}}}
		e := engineOn(t, st, model, Options{Blocks: blocks})
		m1, m2 := message("1", "b1", "讲讲", t0), message("2", "b1", "两件事", t0)
		u1 := e.userTurn(NewMsgContext(m1), m1.Text, nil)
		u2 := e.userTurn(NewMsgContext(m2), m2.Text, nil)
		admitted(t, e, st, m1, []store.Turn{u1})
		admitted(t, e, st, m2, []store.Turn{u2}, "第一，开头。")
		chat := &outboxReplier{st: st}
		n, err := e.Resume(context.Background(), func(MsgContext) (channel.Replier, bool) { return chat, true })
		if err != nil || n != 1 {
			t.Fatalf("resumed %d turns: %v; want one for the batch", n, err)
		}
		if err := e.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{TurnKey(m2) + "#2 第二，中间。"}, chat.payloads()); diff != "" {
			t.Errorf("delivered (-want +got):\n%s", diff)
		}
		reqs := model.requests()
		if len(reqs) != 1 {
			t.Fatalf("%d model requests", len(reqs))
		}
		var got []string
		for _, mm := range reqs[0].Messages {
			got = append(got, string(mm.Role)+": "+mm.Text)
		}
		if diff := cmp.Diff([]string{"user: " + u1.Text, "user: " + u2.Text, "assistant: 第一，开头。", "user: " + resumeNote}, got); diff != "" {
			t.Errorf("the resumed model call (-want +got):\n%s", diff)
		}
		if pending, _ := st.PendingTurns(context.Background()); len(pending) != 0 {
			t.Errorf("still journaled: %+v", pending)
		}
	})
}

// TestRepeatedBlocks: the start of a resumed run's text that repeats
// whole blocks already sent, whitespace aside, is found; text that may
// still turn into a repeat is held.
func TestRepeatedBlocks(t *testing.T) {
	r := &resumption{said: []string{"Alpha one.", "Beta two."}}
	for _, tt := range []struct {
		text string
		rest string
		open bool
	}{
		{"Gamma.", "Gamma.", false},
		{"Al", "", true},
		{"Alpha one.", "", true},
		{"Alpha one.\n\nBeta two.\n\nGamma.", "Gamma.", false},
		{"Alpha  one. Beta\ntwo. Gamma.", "Gamma.", false},
		{"Alpha one.\n\nDelta.", "Delta.", false},
		{"Alpha once more.", "Alpha once more.", false},
		{"Beta two.\nGamma.", "Gamma.", false},
		{"", "", true},
	} {
		cut, open := r.repeated(tt.text)
		if open != tt.open || (!open && strings.TrimSpace(tt.text[cut:]) != tt.rest) {
			t.Errorf("repeated(%q) = %d %v, want rest %q open %v", tt.text, cut, open, tt.rest, tt.open)
		}
	}
}
