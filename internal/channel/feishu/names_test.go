package feishu

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/channel/feishu/larkmsg"
)

// TestNameCache: a sender the platform does not name costs one call, not
// one per message; concurrent look-ups of a new name share one call;
// names from mentions cost none.
func TestNameCache(t *testing.T) {
	r := newRig(t, nil)
	r.run()
	const stranger = "ou_c0000000000000000000000000000c"
	for i := range 3 {
		// Distinct texts: the same text in the same millisecond is one
		// message redelivered (the content key).
		if m := r.take(feishusim.Message{ChatID: groupChat, SenderID: stranger, Content: fmt.Sprintf(`{"text":"我是谁 %d"}`, i)}); m.Sender.Name != "" {
			t.Errorf("name %q", m.Sender.Name)
		}
	}
	if sizes := r.sim.BasicBatchSizes(); len(sizes) != 1 {
		t.Errorf("basic_batch calls %v, want one", sizes)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if got := r.a.names.name(context.Background(), userB, nil); got != "李四" {
				t.Errorf("name %q", got)
			}
		})
	}
	wg.Wait()
	if sizes := r.sim.BasicBatchSizes(); len(sizes) != 2 {
		t.Errorf("basic_batch calls %v, want two", sizes)
	}
	const named = "ou_d0000000000000000000000000000d"
	if got := r.a.names.name(context.Background(), named, []larkmsg.Mention{{Key: "@_user_1", ID: named, IDType: "open_id", Name: "王五"}}); got != "王五" {
		t.Errorf("name from mentions %q", got)
	}
	got, err := r.a.names.lookup(context.Background(), []string{userA, userB, named, stranger})
	must(t, err)
	if got[userA] != "张三" || got[userB] != "李四" || got[named] != "王五" || got[stranger] != "" {
		t.Errorf("names %v", got)
	}
	if sizes := r.sim.BasicBatchSizes(); len(sizes) != 3 || sizes[2] != 1 {
		t.Errorf("basic_batch calls %v: only %s was to be asked", sizes, userA)
	}
}
