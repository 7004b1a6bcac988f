package outbox

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/msg"
)

// findingChat is a platform that shows what it took: a payload's parts
// are its text split at "|"; with lose set, the answer to the next part
// is lost (the part went out, the attempt fails as when the connection
// drops), and FindSent finds on the platform what went out.
type findingChat struct {
	mu    sync.Mutex
	lose  bool
	got   []string
	shown map[string]bool // payload text + "#" + part
	asked []int
}

func (c *findingChat) SendParts(ctx context.Context, out msg.Outbound, from int, confirmed Confirmed) error {
	parts := strings.Split(out.Text, "|")
	for i := from; i < len(parts); i++ {
		c.mu.Lock()
		c.got = append(c.got, parts[i])
		c.shown[out.Text+"#"+strconv.Itoa(i)] = true
		lose := c.lose
		c.lose = false
		c.mu.Unlock()
		if lose {
			return errDown // the platform took it; its answer never came
		}
		confirmed(i, msg.MessageID("m"+strconv.Itoa(i)), i+1 < len(parts))
	}
	return nil
}

func (c *findingChat) FindSent(ctx context.Context, out msg.Outbound, part int, since time.Time) (msg.MessageID, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, part)
	if c.shown[out.Text+"#"+strconv.Itoa(part)] {
		return msg.MessageID("found" + strconv.Itoa(part)), true, nil
	}
	return "", false, nil
}

func (c *findingChat) report() (got []string, asked []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.got), slices.Clone(c.asked)
}

// TestPartsAnEarlierAttemptSentAreNotSentAgain: a part whose answer was
// lost (the platform took it) is found on the platform before the retry,
// recorded as sent and not sent again; a reply restored from the store
// is looked for the same way; a fresh reply's first attempt asks nothing.
func TestPartsAnEarlierAttemptSentAreNotSentAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "f.db")
		st := openStore(t, path)
		fc := &findingChat{shown: map[string]bool{}, lose: true}
		o := New(Options{Store: st})
		o.Register("onebot", "default", fc)
		if err := o.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := o.Deliver(context.Background(), "onebot", "in:1#1", reply("好的|马上到")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		time.Sleep(time.Minute) // the retry's backoff
		synctest.Wait()
		got, asked := fc.report()
		if diff := cmp.Diff([]string{"好的", "马上到"}, got); diff != "" {
			t.Errorf("the platform got (-want +got):\n%s", diff)
		}
		if !slices.Equal(asked, []int{0, 1}) {
			t.Errorf("asked the platform for parts %v, want [0 1]: none on the first attempt, then from the first part not confirmed", asked)
		}
		if has, _ := st.HasOutbox(context.Background(), "in:1#"); !has {
			t.Error("the reply is not remembered")
		}
		o.Close()

		// A process dies after the first part of a reply went out,
		// unconfirmed: the next one finds it and sends only the rest.
		first := New(Options{Store: st})
		first.Register("onebot", "default", &findingChat{shown: map[string]bool{}, lose: true})
		if _, err := first.Deliver(context.Background(), "onebot", "in:2#1", reply("第一段|第二段")); err != nil {
			t.Fatal(err)
		}
		first.Close()
		next := &findingChat{shown: map[string]bool{"第一段|第二段#0": true}}
		again := New(Options{Store: st})
		again.Register("onebot", "default", next)
		if err := again.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer again.Close()
		synctest.Wait()
		got, asked = next.report()
		if diff := cmp.Diff([]string{"第二段"}, got); diff != "" {
			t.Errorf("the next process sent (-want +got):\n%s", diff)
		}
		if !slices.Equal(asked, []int{0, 1}) {
			t.Errorf("the restored reply was looked for at parts %v, want [0 1]", asked)
		}
	})
}

// blindChat is a findingChat whose history cannot be read while blind is
// set (no connection to ask over): FindSent fails.
type blindChat struct {
	*findingChat
	mu    sync.Mutex
	blind int // how many more lookups fail
}

func (c *blindChat) FindSent(ctx context.Context, out msg.Outbound, part int, since time.Time) (msg.MessageID, bool, error) {
	c.mu.Lock()
	if c.blind > 0 {
		c.blind--
		c.mu.Unlock()
		return "", false, errDown
	}
	c.mu.Unlock()
	return c.findingChat.FindSent(ctx, out, part, since)
}

// TestAPartIsNotSentBeforeThePlatformCanBeAskedForIt: a retry whose look
// for what the last attempt sent fails (the platform cannot be asked yet)
// sends nothing; the next retry looks again, finds the part and does not
// send it a second time.
func TestAPartIsNotSentBeforeThePlatformCanBeAskedForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t, filepath.Join(t.TempDir(), "f.db"))
		bc := &blindChat{findingChat: &findingChat{shown: map[string]bool{}, lose: true}, blind: 2}
		o := New(Options{Store: st})
		o.Register("onebot", "default", bc)
		if err := o.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		if _, err := o.Deliver(context.Background(), "onebot", "in:1#1", reply("好的")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		time.Sleep(5 * time.Minute) // every retry's backoff
		synctest.Wait()
		got, asked := bc.report()
		if diff := cmp.Diff([]string{"好的"}, got); diff != "" {
			t.Errorf("the platform got (-want +got):\n%s", diff)
		}
		if !slices.Equal(asked, []int{0, 1}) {
			t.Errorf("asked the platform for parts %v; want [0 1] (the part, then the end), once it could be asked", asked)
		}
		bc.mu.Lock()
		left := bc.blind
		bc.mu.Unlock()
		if left != 0 {
			t.Errorf("%d failed lookups left; want both used", left)
		}
	})
}
