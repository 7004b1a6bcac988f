package outbox

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/store/sqlite"
)

var errDown = errors.New("not connected")

// chat is a fake platform: a payload's parts are its text split at "|";
// while down, every send fails; failAfter fails the next attempt after
// that many parts.
type chat struct {
	mu        sync.Mutex
	down      bool
	failAfter int
	// failNext fails that many attempts, each before its first part.
	failNext int
	refuse   bool
	got      []string
	n        int
	// beforeSend, when set, is called as each part goes out.
	beforeSend func(part int)
	// afterConfirm, when set, is called once a part's confirmation
	// returned, where a real sender records the message as the bot's.
	afterConfirm func(part int)
}

func (c *chat) SendParts(ctx context.Context, out msg.Outbound, from int, confirmed Confirmed) error {
	parts := strings.Split(out.Text, "|")
	for i := from; i < len(parts); i++ {
		if err := ctx.Err(); err != nil {
			return err // as the real senders do, waiting for their pace
		}
		c.mu.Lock()
		switch {
		case c.refuse:
			c.mu.Unlock()
			return Permanent(errors.New("no such group"))
		case c.down:
			c.mu.Unlock()
			return errDown
		case c.failNext > 0:
			c.failNext--
			c.mu.Unlock()
			return errDown
		case c.failAfter > 0 && i-from == c.failAfter:
			c.failAfter = 0
			c.mu.Unlock()
			return errDown
		}
		if c.beforeSend != nil {
			c.beforeSend(i)
		}
		c.got = append(c.got, parts[i])
		c.n++
		id := msg.MessageID(string(rune('a' + c.n - 1)))
		c.mu.Unlock()
		confirmed(i, id, i+1 < len(parts))
		if c.afterConfirm != nil {
			c.afterConfirm(i)
		}
	}
	return nil
}

func (c *chat) set(f func(*chat)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c)
}

func (c *chat) sent() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

func openStore(t *testing.T, path string) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newOutbox(t *testing.T, st store.Store, c *chat) *Outbox {
	t.Helper()
	o := New(Options{Store: st})
	o.Register("onebot", "default", c)
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	return o
}

var group = msg.Peer{Kind: msg.Group, ID: "700"}

func reply(text string) msg.Outbound {
	return msg.Outbound{Account: "default", Peer: group, Text: text}
}

func TestDeliverSendsAndRemembers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t, filepath.Join(t.TempDir(), "p.db"))
		c := &chat{}
		o := newOutbox(t, st, c)
		id, err := o.Deliver(context.Background(), "onebot", "in:1#1", reply("one|two"))
		if err != nil || id != "a" {
			t.Fatalf("deliver: %q %v", id, err)
		}
		if id, err := o.Deliver(context.Background(), "onebot", "in:1#1", reply("one|two")); id != "" || err != nil {
			t.Errorf("again: %q %v", id, err)
		}
		if diff := cmp.Diff([]string{"one", "two"}, c.sent()); diff != "" {
			t.Errorf("a payload id is sent once (-want +got):\n%s", diff)
		}
		if n := o.Pending(); n != 0 {
			t.Errorf("%d pending", n)
		}
	})
}

// TestOutageIsRiddenOut: while the platform is down, Deliver returns at
// once with the reply queued; later replies of the chat queue behind it;
// the reply goes out when the platform is back (a Wake retries at once),
// resuming at the first part not confirmed.
func TestOutageIsRiddenOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t, filepath.Join(t.TempDir(), "p.db"))
		c := &chat{failAfter: 1}
		o := newOutbox(t, st, c)
		start := time.Now()
		if _, err := o.Deliver(context.Background(), "onebot", "in:1#1", reply("p1|p2|p3")); err != nil {
			t.Fatal(err)
		}
		c.set(func(c *chat) { c.down = true })
		if _, err := o.Deliver(context.Background(), "onebot", "in:2#1", reply("q1")); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) != 0 {
			t.Errorf("Deliver waited %v during an outage", time.Since(start))
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if diff := cmp.Diff([]string{"p1"}, c.sent()); diff != "" {
			t.Errorf("during the outage (-want +got):\n%s", diff)
		}
		c.set(func(c *chat) { c.down = false })
		o.Wake("onebot", "default")
		synctest.Wait()
		if diff := cmp.Diff([]string{"p1", "p2", "p3", "q1"}, c.sent()); diff != "" {
			t.Errorf("after the outage (-want +got):\n%s", diff)
		}
		if err := o.Drain(context.Background()); err != nil {
			t.Error(err)
		}
	})
}

// TestRestartResumesPendingReplies: a reply stored by one run and not
// delivered is delivered by the next, from the first unconfirmed part.
func TestRestartResumesPendingReplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "p.db")
		st := openStore(t, path)
		c := &chat{failAfter: 1}
		first := New(Options{Store: st})
		first.Register("onebot", "default", c)
		if _, err := first.Deliver(context.Background(), "onebot", "in:1#1", reply("p1|p2")); err != nil {
			t.Fatal(err)
		}
		first.Close() // the process ends with p2 unsent
		st.Close()

		st2 := openStore(t, path)
		again := &chat{}
		newOutbox(t, st2, again)
		synctest.Wait()
		if diff := cmp.Diff([]string{"p2"}, again.sent()); diff != "" {
			t.Errorf("the next run sends only what was not confirmed (-want +got):\n%s", diff)
		}
		if has, _ := st2.HasOutbox(context.Background(), "in:1#"); !has {
			t.Error("the delivered reply is remembered")
		}
	})
}

// TestTooOldIsGivenUp: a reply the platform never takes is given up after
// MaxAge; one refused for good is given up at once.
func TestTooOldIsGivenUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t, filepath.Join(t.TempDir(), "p.db"))
		c := &chat{down: true}
		o := New(Options{Store: st, MaxAge: time.Minute})
		o.Register("onebot", "default", c)
		defer o.Close()
		if _, err := o.Deliver(context.Background(), "onebot", "in:1#1", reply("late")); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := o.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < time.Minute || took > time.Minute+15*time.Second {
			t.Errorf("given up after %v", took)
		}
		if len(c.sent()) != 0 {
			t.Error("sent")
		}
		c.set(func(c *chat) { c.down, c.refuse = false, true })
		if _, err := o.Deliver(context.Background(), "onebot", "in:2#1", reply("nope")); err == nil || !IsPermanent(err) {
			t.Errorf("a refused reply: %v", err)
		}
		if n := o.Pending(); n != 0 {
			t.Errorf("%d pending", n)
		}
	})
}

// TestDrainStopsAtItsDeadline: Drain waits for pending replies but not
// past its context.
func TestDrainStopsAtItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t, filepath.Join(t.TempDir(), "p.db"))
		c := &chat{down: true}
		o := newOutbox(t, st, c)
		if _, err := o.Deliver(context.Background(), "onebot", "in:1#1", reply("x")); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := o.Drain(ctx); err == nil {
			t.Error("drained with a reply pending")
		}
	})
}

// updates records the outbox updates a store was handed.
type updates struct {
	store.Store
	mu  sync.Mutex
	got []string // "<sent> <state>"
}

func (u *updates) UpdateOutbox(ctx context.Context, id string, sent, attempts int, state store.OutboxState, lastErr string) error {
	u.mu.Lock()
	u.got = append(u.got, fmt.Sprintf("%d %s", sent, state))
	u.mu.Unlock()
	return u.Store.UpdateOutbox(ctx, id, sent, attempts, state, lastErr)
}

func (u *updates) list() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.got)
}

// TestProgressIsStoredBeforeTheNextPart: each part but the last is
// stored as sent before the next goes out, so a crash never sends one
// twice; after the last, the outcome alone is stored (one commit, not
// two).
func TestProgressIsStoredBeforeTheNextPart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u := &updates{Store: openStore(t, filepath.Join(t.TempDir(), "p.db"))}
		c := &chat{}
		o := newOutbox(t, u, c)
		var seen []string
		c.beforeSend = func(part int) { seen = append(seen, fmt.Sprintf("part %d after %v", part, u.list())) }
		if _, err := o.Deliver(context.Background(), "onebot", "in:1#1", reply("p1|p2|p3")); err != nil {
			t.Fatal(err)
		}
		want := []string{"part 0 after []", "part 1 after [1 pending]", "part 2 after [1 pending 2 pending]"}
		if diff := cmp.Diff(want, seen); diff != "" {
			t.Errorf("what the store held as each part went out (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"1 pending", "2 pending", "3 sent"}, u.list()); diff != "" {
			t.Errorf("updates stored (-want +got):\n%s", diff)
		}
		if _, err := o.Deliver(context.Background(), "onebot", "in:2#1", reply("one")); err != nil {
			t.Fatal(err)
		}
		if got := u.list()[3:]; !slices.Equal(got, []string{"1 sent"}) {
			t.Errorf("a one-part reply stored %q, want only its outcome", got)
		}
	})
}

// TestAConfirmedPartIsStoredBeforeItsMessageIsRecorded: when a part's
// confirmation returns, the store knows the part went, the last one's
// outcome included, so the message a sender then records as the bot's
// always belongs to a part the store knows was sent: a crash in between
// cannot leave a recorded message whose part is restored as unsent, which
// the platform look-up (Finder) would then pass over and send again.
func TestAConfirmedPartIsStoredBeforeItsMessageIsRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u := &updates{Store: openStore(t, filepath.Join(t.TempDir(), "p.db"))}
		c := &chat{}
		o := newOutbox(t, u, c)
		var seen []string
		c.afterConfirm = func(part int) {
			got := u.list()
			seen = append(seen, fmt.Sprintf("part %d: %s", part, got[len(got)-1]))
		}
		if _, err := o.Deliver(context.Background(), "onebot", "in:1#1", reply("p1|p2")); err != nil {
			t.Fatal(err)
		}
		want := []string{"part 0: 1 pending", "part 1: 2 sent"}
		if diff := cmp.Diff(want, seen); diff != "" {
			t.Errorf("the store's latest update as each confirmation returned (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"1 pending", "2 sent"}, u.list()); diff != "" {
			t.Errorf("updates stored (-want +got):\n%s", diff)
		}
	})
}

// TestDeliverReturnsAfterItsOwnAttempt: a Deliver that makes its reply's
// attempt itself returns once that reply is out, not after the replies
// queued behind it in the chat meanwhile, which still go out, in order.
func TestDeliverReturnsAfterItsOwnAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t, filepath.Join(t.TempDir(), "p.db"))
		gates := map[string]chan struct{}{"first": make(chan struct{}), "second": make(chan struct{})}
		sending := make(chan string, 2)
		c := &chat{}
		c.beforeSend = func(int) {
			text := "first"
			if c.n > 0 {
				text = "second"
			}
			sending <- text
			c.mu.Unlock() // the fake holds its lock around beforeSend
			<-gates[text]
			c.mu.Lock()
		}
		o := newOutbox(t, st, c)
		firstDone := make(chan error, 1)
		go func() {
			_, err := o.Deliver(context.Background(), "onebot", "in:1#1", reply("first"))
			firstDone <- err
		}()
		if got := <-sending; got != "first" {
			t.Fatalf("sending %q", got)
		}
		secondDone := make(chan error, 1)
		go func() {
			_, err := o.Deliver(context.Background(), "onebot", "in:2#1", reply("second"))
			secondDone <- err
		}()
		synctest.Wait() // the second is queued behind the first
		close(gates["first"])
		if err := <-firstDone; err != nil {
			t.Fatal(err)
		}
		if got := <-sending; got != "second" {
			t.Fatalf("sending %q", got)
		}
		select {
		case <-secondDone:
			t.Fatal("the second reply's Deliver returned before its attempt")
		default:
		}
		close(gates["second"])
		if err := <-secondDone; err != nil {
			t.Fatal(err)
		}
		if got := c.sent(); !slices.Equal(got, []string{"first", "second"}) {
			t.Errorf("sent %q", got)
		}
	})
}

// TestARetryDoesNotRaceItsDeliver: a reply whose first attempt fails
// before any part went out is settled for its Deliver, which returns, and
// sent by a retry later; the retry's record of the first part's id does
// not race the Deliver that returned (run with -race).
func TestARetryDoesNotRaceItsDeliver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t, filepath.Join(t.TempDir(), "p.db"))
		// Nothing but the outbox passes between the Deliver and the retry.
		c := &chat{failNext: 1}
		o := newOutbox(t, st, c)
		id, err := o.Deliver(context.Background(), "onebot", "in:1#1", reply("one"))
		if err != nil || id != "" {
			t.Fatalf("deliver during an outage: %q %v", id, err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if diff := cmp.Diff([]string{"one"}, c.sent()); diff != "" {
			t.Errorf("the retry (-want +got):\n%s", diff)
		}
	})
}

// TestRunningOutboxForgetsOldReplies: a reply finished longer than Keep
// ago is forgotten while the outbox runs, within PruneEvery, not only at
// the next start; a younger one is kept.
func TestRunningOutboxForgetsOldReplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := openStore(t, filepath.Join(t.TempDir(), "p.db"))
		c := &chat{}
		o := New(Options{Store: st, Keep: 3 * time.Hour})
		o.Register("onebot", "default", c)
		if err := o.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(o.Close)
		if _, err := o.Deliver(ctx, "onebot", "in:1#1", reply("早上好")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Hour)
		if _, err := o.Deliver(ctx, "onebot", "in:2#1", reply("下午好")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2*time.Hour + time.Minute) // the first is 4 h old, the second 2 h
		synctest.Wait()
		for id, want := range map[string]bool{"in:1#": false, "in:2#": true} {
			if has, err := st.HasOutbox(ctx, id); err != nil || has != want {
				t.Errorf("%s remembered: %v (%v), want %v", id, has, err, want)
			}
		}
	})
}
