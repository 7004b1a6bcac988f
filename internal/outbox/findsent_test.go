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
