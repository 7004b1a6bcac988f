package cluster

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// view is what this node has seen of the lease bucket through a watcher. It
// only speeds things up (a released lease is taken at once, a joining member
// is noticed at once); every decision made from it is checked by a
// compare-and-set on the bucket, and whatever it misses is caught by polling.
// Expiry by TTL produces no event, so an entry counts as held only while its
// last write was seen less than a TTL ago (renewals come every TTL/3).
type view struct {
	ttl     time.Duration
	mu      sync.Mutex
	entries map[string]viewEntry
	changed chan struct{} // closed and replaced on every change
}

type viewEntry struct {
	value string
	seen  time.Time
}

func newView(ttl time.Duration) *view {
	return &view{ttl: ttl, entries: map[string]viewEntry{}, changed: make(chan struct{})}
}

// wait returns a channel that is closed at the next change.
func (v *view) wait() <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.changed
}

func (v *view) notifyLocked() {
	close(v.changed)
	v.changed = make(chan struct{})
}

func (v *view) apply(e jetstream.KeyValueEntry) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if e.Operation() == jetstream.KeyValuePut {
		v.entries[e.Key()] = viewEntry{value: string(e.Value()), seen: time.Now()}
	} else {
		delete(v.entries, e.Key())
	}
	v.notifyLocked()
}

func (v *view) reset() {
	v.mu.Lock()
	defer v.mu.Unlock()
	clear(v.entries)
	v.notifyLocked()
}

// held reports whether key was written less than a TTL ago and not deleted.
func (v *view) held(key string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.entries[key]
	return ok && time.Since(e.seen) < v.ttl
}

// current is key's value while it counts as held (see held).
func (v *view) current(key string) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.entries[key]
	if !ok || time.Since(e.seen) >= v.ttl {
		return "", false
	}
	return e.value, true
}

// markHeld records that key was found held (a Create failed) when the
// watcher has not told about it (yet, or any more), so the contender waits
// for an event or the poll instead of retrying at once.
func (v *view) markHeld(key string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if e, ok := v.entries[key]; !ok || time.Since(e.seen) >= v.ttl {
		v.entries[key] = viewEntry{value: e.value, seen: time.Now()}
	}
}

// members returns the instances whose member lease is held, sorted.
func (v *view) members() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for k, e := range v.entries {
		if name, ok := strings.CutPrefix(k, memberPrefix); ok && time.Since(e.seen) < v.ttl {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// watch keeps the view current until ctx ends, restarting the watcher when
// it stops.
func (n *Node) watch(ctx context.Context) {
	for ctx.Err() == nil {
		w, err := n.leases.WatchAll(ctx)
		if err != nil {
			n.log.Debug("lease watcher", "error", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(n.poll):
			}
			continue
		}
		n.view.reset()
		n.follow(ctx, w)
		_ = w.Stop()
		// The watcher's callback blocks on a full channel; drain it so
		// the subscription can wind down.
		drain := time.After(time.Second)
	drained:
		for {
			select {
			case _, ok := <-w.Updates():
				if !ok {
					break drained
				}
			case <-drain:
				break drained
			}
		}
	}
}

func (n *Node) follow(ctx context.Context, w jetstream.KeyWatcher) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.reconnected:
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e != nil {
				n.view.apply(e)
			}
		}
	}
}
