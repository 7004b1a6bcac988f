package quote

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pincerbot/pincer/internal/msg"
)

// retrying fetches forwards as OneBot's adapter does: a failed call is
// asked once more (get_forward_msg with message_id), each call taken from
// the resolution's budget first.
type retrying struct {
	*fetcher
	calls atomic.Int64
}

func (r *retrying) FetchForwardLimited(ctx context.Context, id msg.ForwardID, take func() bool) ([]msg.Message, error) {
	var err error
	for range 2 {
		if take != nil && !take() {
			break
		}
		r.calls.Add(1)
		var ms []msg.Message
		if ms, err = r.FetchForward(ctx, id); err == nil {
			return ms, nil
		}
	}
	if err == nil {
		err = fmt.Errorf("no calls left")
	}
	return nil, err
}

func manyIDs(n int) []msg.ForwardID {
	ids := make([]msg.ForwardID, n)
	for i := range ids {
		ids[i] = msg.ForwardID(fmt.Sprintf("F%04d", i))
	}
	return ids
}

// TestForwardFanOutIsBounded: one message carrying 2,000 forwards that all
// fail (or all come back empty, which renders nothing) makes a bounded
// number of calls: no more fetches than the nodes can render, and at most
// 2 x MaxNodes calls counting the retry of each failure.
func TestForwardFanOutIsBounded(t *testing.T) {
	ids := manyIDs(2000)
	tests := []struct {
		name      string
		fail      bool
		limited   bool
		wantNodes int
		maxCalls  int64
	}{
		{"failing, plain fetcher", true, false, 20, 20},
		{"failing, retried", true, true, 20, 40},
		{"empty, plain fetcher", false, false, 0, 40},
		{"empty, retried", false, true, 0, 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fetcher{fail: map[string]bool{}, forwards: map[msg.ForwardID][]msg.Message{}, delay: time.Second}
				for _, id := range ids {
					if tt.fail {
						f.fail[string(id)] = true
					} else {
						f.forwards[id] = []msg.Message{}
					}
				}
				var fetch Fetcher = f
				r := &retrying{fetcher: f}
				if tt.limited {
					fetch = r
				}
				res := New(Cached(fetch, time.Minute, 1000), defaults(), cst).Resolve(context.Background(), msg.Message{ForwardIDs: ids})
				if len(res.Nodes) != tt.wantNodes || !res.Truncated {
					t.Errorf("%d nodes, truncated %v; want %d, truncated", len(res.Nodes), res.Truncated, tt.wantNodes)
				}
				calls := int64(len(f.callList()))
				if calls > tt.maxCalls {
					t.Errorf("%d calls for 2000 forwards, want at most %d", calls, tt.maxCalls)
				}
				if tt.limited && r.calls.Load() != calls {
					t.Errorf("the fetcher counted %d calls, the peer saw %d", r.calls.Load(), calls)
				}
			})
		})
	}
}

// TestNestedFanOutIsBounded: a forward whose messages each carry a hundred
// forwards starts no more nested fetches than the nodes left can render.
func TestNestedFanOutIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		forwards := map[msg.ForwardID][]msg.Message{}
		var top []msg.Message
		for i := range 5 {
			nested := manyIDs(100)
			for j := range nested {
				nested[j] = msg.ForwardID(fmt.Sprintf("N%d-%d", i, j))
				forwards[nested[j]] = []msg.Message{node("x", "1", "甲", "10:00:00", "inner")}
			}
			top = append(top, node(fmt.Sprint(i), "1", "甲", "10:00:00", "outer", nested...))
		}
		forwards["TOP"] = top
		f := &fetcher{forwards: forwards, delay: time.Second}
		res := New(f, defaults(), cst).Resolve(context.Background(), msg.Message{ForwardIDs: []msg.ForwardID{"TOP"}})
		if len(res.Nodes) != 20 || !res.Truncated {
			t.Errorf("%d nodes, truncated %v", len(res.Nodes), res.Truncated)
		}
		// TOP, then at most the 19 nodes left.
		if calls := f.callList(); len(calls) > 20 {
			t.Errorf("%d fetches: %s …", len(calls), strings.Join(calls[:20], " "))
		}
	})
}

// TestCachedForwardsCostNoCalls: a resolution served from the cache
// renders the same, though it makes no call at all.
func TestCachedForwardsCostNoCalls(t *testing.T) {
	ids := manyIDs(30)
	f := &fetcher{forwards: map[msg.ForwardID][]msg.Message{}}
	for _, id := range ids {
		f.forwards[id] = []msg.Message{node(string(id), "1", "甲", "10:00:00", string(id))}
	}
	r := New(Cached(&retrying{fetcher: f}, time.Minute, 1000), defaults(), cst)
	first := r.Resolve(context.Background(), msg.Message{ForwardIDs: ids})
	n := len(f.callList())
	second := r.Resolve(context.Background(), msg.Message{ForwardIDs: ids})
	if diff := cmp.Diff(first, second, cmpopts.IgnoreFields(Result{}, "Calls")); diff != "" {
		t.Errorf("from the cache (-first +second):\n%s", diff)
	}
	if first.Calls != n || second.Calls != 0 {
		t.Errorf("calls counted: %d then %d, want %d then 0", first.Calls, second.Calls, n)
	}
	if len(first.Nodes) != 20 || n > 20 || len(f.callList()) != n {
		t.Errorf("%d nodes, %d calls, then %d more", len(first.Nodes), n, len(f.callList())-n)
	}
}
