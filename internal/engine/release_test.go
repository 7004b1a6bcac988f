package engine

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// TestReleaseHandsTurnsOver: chats A and B each have a turn in flight,
// their model blocked halfway through the reply. Releasing A stops its
// turn before Release returns: nothing of it is sent, then or later, and
// the journal still holds it as admitted, never resumed. B goes on as if
// nothing happened. A second engine over the same store (A's next owner)
// resumes A's turn and answers it exactly once, leaving the turns of
// chats it was not given alone.
func TestReleaseHandsTurnsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := openDB(t, filepath.Join(t.TempDir(), "p.db"))
		hold := make(chan struct{})
		e1 := engineOn(t, st, &echoProvider{hold: hold}, Options{})
		a, b := message("1", "a", "question of A", t0), message("2", "b", "question of B", t0)
		isA := func(m msg.Message) bool { return m.Peer.ID == "a" }
		rA, rB := &recorder{}, &recorder{}
		outcome := map[string]chan error{"a": make(chan error, 1), "b": make(chan error, 1)}
		for _, c := range []struct {
			m msg.Message
			r *recorder
		}{{a, rA}, {b, rB}} {
			mc := NewMsgContext(c.m)
			mc.Delivery = delivery
			go func() { outcome[c.m.Peer.ID] <- e1.DispatchContext(ctx, mc, c.r) }()
		}
		synctest.Wait() // both models have said "echo: " and wait

		if err := e1.Release(ctx, isA); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-outcome["a"]:
			if !errors.Is(err, ErrReleased) {
				t.Errorf("A's dispatcher returned %v, want ErrReleased", err)
			}
		default:
			t.Fatal("A's turn still runs after Release returned")
		}
		close(hold)
		synctest.Wait()
		if err := <-outcome["b"]; err != nil {
			t.Errorf("B's turn: %v", err)
		}
		if err := e1.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if got := outTexts(rA.delivered); len(got) != 0 {
			t.Errorf("A got %q from the engine that released it", got)
		}
		if got := outTexts(rB.delivered); len(got) != 1 || got[0] != "echo: question of B" {
			t.Errorf("B got %q", got)
		}
		pending, err := st.PendingTurns(ctx)
		if err != nil || len(pending) != 1 || pending[0].Key != TurnKey(a) || pending[0].Attempts != 0 {
			t.Fatalf("journal after the release: %+v %v; want A's turn, never resumed", pending, err)
		}
		tr, _ := st.Transcript(ctx, e1.SessionKey(a))
		for _, turn := range tr {
			if turn.Role == store.RoleAssistant {
				t.Errorf("A's cut reply was kept in its transcript: %q", turn.Text)
			}
		}

		// A turn of a chat the next owner is not given.
		c := message("3", "c", "question of C", t0)
		mcC := NewMsgContext(c)
		mcC.Delivery = delivery
		if _, err := st.AdmitTurn(ctx, TurnKey(c), time.Hour, mustEncode(t, mcC), store.Consumed{}); err != nil {
			t.Fatal(err)
		}

		// A's next owner.
		rA2 := &recorder{}
		replier := func(MsgContext) (channel.Replier, bool) { return rA2, true }
		e2 := engineOn(t, st, &echoProvider{}, Options{})
		if n, err := e2.ResumeWhere(ctx, replier, isA); err != nil || n != 1 {
			t.Fatalf("resumed %d: %v", n, err)
		}
		if err := e2.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if len(rA2.delivered) != 1 || rA2.delivered[0].ID != TurnKey(a)+"#1" || rA2.delivered[0].Text != "echo: question of A" {
			t.Errorf("A's next owner delivered %+v", rA2.delivered)
		}
		if n, _ := engineOn(t, st, &echoProvider{}, Options{}).ResumeWhere(ctx, replier, isA); n != 0 {
			t.Errorf("A's turn was resumed again: %d", n)
		}
		pending, _ = st.PendingTurns(ctx)
		if len(pending) != 1 || pending[0].Key != TurnKey(c) {
			t.Errorf("journal at the end: %+v; want C's turn only", pending)
		}
	})
}

// TestReleaseTakesQueuedMessages: a message waiting behind its chat's
// running turn is released with it: neither runs, both stay journaled.
func TestReleaseTakesQueuedMessages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := openDB(t, filepath.Join(t.TempDir(), "p.db"))
		e := engineOn(t, st, &echoProvider{hold: make(chan struct{})}, Options{Queue: QueueSettings{Mode: QueueFollowup, Cap: 20}})
		first, second := message("1", "a", "first", t0), message("2", "a", "second", t0.Add(time.Second))
		r := &recorder{}
		outcome := make(chan error, 2)
		for _, m := range []msg.Message{first, second} {
			mc := NewMsgContext(m)
			mc.Delivery = delivery
			go func() { outcome <- e.DispatchContext(ctx, mc, r) }()
			synctest.Wait()
		}
		if err := e.Release(ctx, func(msg.Message) bool { return true }); err != nil {
			t.Fatal(err)
		}
		// Release returns once the turns stopped; their dispatchers then
		// return, each in its own goroutine: wait until every goroutine
		// has moved on or is stuck for good.
		synctest.Wait()
		for range 2 {
			select {
			case err := <-outcome:
				if !errors.Is(err, ErrReleased) {
					t.Errorf("dispatcher returned %v, want ErrReleased", err)
				}
			default:
				t.Fatal("a dispatcher still waits after Release returned")
			}
		}
		synctest.Wait()
		if len(r.delivered) != 0 {
			t.Errorf("delivered %q", outTexts(r.delivered))
		}
		if pending, _ := st.PendingTurns(ctx); len(pending) != 2 {
			t.Errorf("journal after the release: %+v; want both turns", pending)
		}
		if err := e.Close(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
