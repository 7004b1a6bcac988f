package outbox

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

var other = msg.Peer{Kind: msg.Group, ID: "800"}

// only accepts the replies of peer's chat.
func only(peer msg.Peer) func(msg.ChannelID, msg.AccountID, msg.Peer) bool {
	return func(_ msg.ChannelID, _ msg.AccountID, p msg.Peer) bool { return p == peer }
}

// stored returns the stored entry id.
func stored(t *testing.T, st store.Store, id string) store.OutboxEntry {
	t.Helper()
	es, err := st.OutboxEntries(context.Background(), id)
	if err != nil || len(es) != 1 {
		t.Fatalf("entry %s: %+v %v", id, es, err)
	}
	return es[0]
}

// TestChatsAreHandedOver: two chats have replies pending in the store.
// StartWhere for one sends only its replies; MaySend turning false while
// a part is on the wire stops the reply before its next part, leaving it
// pending; Release keeps a queued reply from being tried again. A second
// outbox over the same store (the chats' next owner) sends the rest, so
// that every part goes out exactly once overall.
func TestChatsAreHandedOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := openStore(t, filepath.Join(t.TempDir(), "p.db"))
		for _, e := range []store.OutboxEntry{
			{ID: "in:a#1", Channel: "onebot", Out: reply("A1|A2|A3"), State: store.OutboxPending, Created: time.Now()},
			{ID: "in:b#1", Channel: "onebot", Out: msg.Outbound{Account: "default", Peer: other, Text: "B1|B2"}, State: store.OutboxPending, Created: time.Now()},
		} {
			if _, err := st.AddOutbox(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		var ownsA atomic.Bool
		ownsA.Store(true)
		c1 := &chat{down: true}
		o1 := New(Options{Store: st, MaySend: func(_ msg.ChannelID, _ msg.AccountID, p msg.Peer) bool {
			return p != group || ownsA.Load()
		}})
		o1.Register("onebot", "default", c1)
		t.Cleanup(o1.Close)

		// A's reply is queued once, however often it is asked for.
		for range 2 {
			if err := o1.StartWhere(ctx, only(group)); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if n := o1.Pending(); n != 1 {
			t.Fatalf("%d replies pending here, want A's one", n)
		}
		// The lease on A is lost while its first part is on the wire.
		c1.set(func(c *chat) {
			c.down = false
			c.beforeSend = func(int) { ownsA.Store(false) }
		})
		o1.Wake("onebot", "default")
		synctest.Wait()
		if diff := cmp.Diff([]string{"A1"}, c1.sent()); diff != "" {
			t.Fatalf("the part on the wire goes, no other (-want +got):\n%s", diff)
		}
		if e := stored(t, st, "in:a#1"); e.State != store.OutboxPending || e.Sent != 1 {
			t.Errorf("A's reply is stored %s with %d parts sent, want pending with 1", e.State, e.Sent)
		}
		if n := o1.Pending(); n != 0 {
			t.Errorf("%d replies still pending here after MaySend said no", n)
		}

		// B's reply is queued, waiting out a failure, when B is released.
		c1.set(func(c *chat) { c.beforeSend, c.failNext = nil, 1 })
		if err := o1.StartWhere(ctx, only(other)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		o1.Release(only(other))
		o1.Wake("onebot", "default")
		time.Sleep(time.Minute) // every backoff is over
		synctest.Wait()
		if diff := cmp.Diff([]string{"A1"}, c1.sent()); diff != "" {
			t.Errorf("nothing is tried after Release (-want +got):\n%s", diff)
		}
		if e := stored(t, st, "in:b#1"); e.State != store.OutboxPending || e.Sent != 0 {
			t.Errorf("B's reply is stored %s with %d parts sent, want pending with none", e.State, e.Sent)
		}

		// The next owner of both chats.
		c2 := &chat{}
		o2 := New(Options{Store: st})
		o2.Register("onebot", "default", c2)
		t.Cleanup(o2.Close)
		if err := o2.StartWhere(ctx, nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		all := append(c1.sent(), c2.sent()...)
		slices.Sort(all)
		if diff := cmp.Diff([]string{"A1", "A2", "A3", "B1", "B2"}, all); diff != "" {
			t.Errorf("every part goes out once overall (-want +got):\n%s", diff)
		}
		for _, id := range []string{"in:a#1", "in:b#1"} {
			if e := stored(t, st, id); e.State != store.OutboxSent {
				t.Errorf("%s is %s", id, e.State)
			}
		}
	})
}

// TestMaySendFencesTheFirstAttempt: a Deliver whose chat is not this
// process's to send any more sends nothing, on its own goroutine too, and
// leaves the reply pending.
func TestMaySendFencesTheFirstAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t, filepath.Join(t.TempDir(), "p.db"))
		c := &chat{}
		o := New(Options{Store: st, MaySend: func(msg.ChannelID, msg.AccountID, msg.Peer) bool { return false }})
		o.Register("onebot", "default", c)
		t.Cleanup(o.Close)
		if _, err := o.Deliver(context.Background(), "onebot", "in:1#1", reply("one|two")); !errors.Is(err, ErrReleased) {
			t.Errorf("deliver: %v, want ErrReleased", err)
		}
		synctest.Wait()
		if got := c.sent(); len(got) != 0 {
			t.Errorf("sent %q", got)
		}
		if e := stored(t, st, "in:1#1"); e.State != store.OutboxPending || e.Sent != 0 {
			t.Errorf("the reply is stored %s with %d parts sent, want pending with none", e.State, e.Sent)
		}
	})
}
