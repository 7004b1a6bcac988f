package engine

import (
	"context"
	"iter"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/reply"
	"github.com/pincerbot/pincer/internal/store/sqlite"
)

// thinkingProvider thinks for ten seconds, a piece a second, before it
// answers "think hard"; anything else is answered at once. inline writes
// the thoughts into the content as a <think> block, else they come as the
// provider's reasoning.
type thinkingProvider struct{ inline bool }

func (p *thinkingProvider) ID() string { return "fake" }

func (p *thinkingProvider) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if !strings.HasSuffix(req.Messages[len(req.Messages)-1].Text, "think hard") {
			if yield(llm.Event{Kind: llm.EventText, Text: "quick answer"}, nil) {
				yield(llm.Event{Kind: llm.EventDone}, nil)
			}
			return
		}
		kind := llm.EventReasoning
		if p.inline {
			kind = llm.EventText
			if !yield(llm.Event{Kind: kind, Text: "<think>"}, nil) {
				return
			}
		}
		for range 10 {
			time.Sleep(time.Second)
			if !yield(llm.Event{Kind: kind, Text: "hmm "}, nil) {
				return
			}
		}
		if p.inline && !yield(llm.Event{Kind: kind, Text: "</think>"}, nil) {
			return
		}
		if yield(llm.Event{Kind: llm.EventText, Text: "the answer"}, nil) {
			yield(llm.Event{Kind: llm.EventDone}, nil)
		}
	}
}

// TestThinkingModelKeepsItsSlot: a model that thinks before it writes is
// at work: it keeps its slot of the global limit past SlotPatience,
// whether its reasoning comes as the provider's own or as a <think> block
// in the content, and its reasoning is never delivered.
func TestThinkingModelKeepsItsSlot(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(map[bool]string{false: "provider reasoning", true: "think block"}[inline], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"), sqlite.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				runner := agent.NewRunner(agent.Options{Providers: map[string]llm.Provider{"fake": &thinkingProvider{inline: inline}}, MaxTokens: 100, ContextTokens: 10000})
				e := New(Options{Store: st, Runner: runner, Models: []llm.Ref{{Provider: "fake", Model: "m"}}, Location: time.UTC, MaxConcurrent: 1})
				defer e.cancel()
				thinker := &recorder{}
				done := make(chan error, 1)
				go func() { done <- e.Dispatch(context.Background(), message("1", "g1", "think hard", t0), thinker) }()
				synctest.Wait()
				start := time.Now()
				other := &recorder{}
				if err := e.Dispatch(context.Background(), message("2", "g2", "quick one", t0), other); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took != 10*time.Second {
					t.Errorf("the other chat was answered after %v; want it to wait the 10s the thinking model worked", took)
				}
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				if got := outTexts(thinker.delivered); len(got) != 1 || got[0] != "the answer" {
					t.Errorf("the thinking model delivered %q", got)
				}
			})
		})
	}
}

// TestReasoningThePromptOpenedIsNotDelivered: a model served with <think>
// already in its prompt (Qwen3, DeepSeek-R1 on vLLM without a reasoning
// parser) writes its reasoning, </think>, then the answer. Only the answer
// reaches the chat and the transcript, sent whole, in blocks that had not
// started, and written live into a card (which the delivery writes over).
func TestReasoningThePromptOpenedIsNotDelivered(t *testing.T) {
	deltas := []string{"用户想知道天气，我应该", "简短回答。</th", "ink>\n\n今天晴。"}
	for _, c := range []struct {
		name string
		opts Options
		live bool
	}{
		{"whole", Options{}, false},
		{"blocks", Options{Blocks: &reply.ChunkOptions{MinChars: 200, MaxChars: 400, BreakOn: reply.BreakParagraph}}, false},
		{"live", Options{}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newScripted(t, c.opts, deltas...)
				rec := &recorder{}
				var r channel.Replier = rec
				if c.live {
					lr := &liveRecorder{}
					rec, r = &lr.recorder, lr
				}
				if err := e.Dispatch(context.Background(), message("1", "g", "天气？", t0), r); err != nil {
					t.Fatal(err)
				}
				delivered := rec.delivered
				if diff := cmp.Diff([]string{"今天晴。"}, outTexts(delivered)); diff != "" {
					t.Errorf("delivered (-want +got):\n%s", diff)
				}
				tr, err := e.opts.Store.Transcript(context.Background(), e.SessionKey(message("1", "g", "", t0)))
				if err != nil {
					t.Fatal(err)
				}
				if last := tr[len(tr)-1]; last.Text != "今天晴。" {
					t.Errorf("the transcript keeps %q as the reply", last.Text)
				}
			})
		})
	}
}
