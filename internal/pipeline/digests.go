package pipeline

import (
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/aggregate"
)

// digests are the digest windows, one aggregate.Digest per chat with an
// open window, so that one chat's window can be dropped without firing
// (see Release) while the others keep their timers. A chat's Digest is
// forgotten once its window has flushed and no other opened since.
type digests struct {
	opts aggregate.DigestOptions[held]
	// flush receives every ended window and forget, to call off the
	// goroutine that flushed (it takes mu).
	flush func(f aggregate.Flushed[held], forget func())

	mu    sync.Mutex
	byKey map[string]*aggregate.Digest[held]
}

// newDigests returns no windows; o.Flush is not used (flush is).
func newDigests(o aggregate.DigestOptions[held], flush func(aggregate.Flushed[held], func())) *digests {
	return &digests{opts: o, flush: flush, byKey: map[string]*aggregate.Digest[held]{}}
}

// AcceptEvery is aggregate.Digest.AcceptEvery for key's window.
func (d *digests) AcceptEvery(key string, e aggregate.Entry[held], every time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	g := d.byKey[key]
	if g == nil {
		o := d.opts
		var mine *aggregate.Digest[held]
		// Flush may run inside AcceptEvery, under d.mu: forget is called
		// later, from the goroutine the flush is handed to.
		o.Flush = func(f aggregate.Flushed[held]) {
			d.flush(f, func() { d.forget(key, mine) })
		}
		g = aggregate.NewDigest(o)
		mine = g
		d.byKey[key] = g
	}
	g.AcceptEvery(key, e, every)
}

// forget drops key's Digest g when it is still the chat's and holds no
// window.
func (d *digests) forget(key string, g *aggregate.Digest[held]) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byKey[key] == g && g.Pending(key) == 0 {
		delete(d.byKey, key)
	}
}

// Open reports whether key has a digest window open.
func (d *digests) Open(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	g := d.byKey[key]
	return g != nil && g.Pending(key) > 0
}

// Reschedule is aggregate.Digest.Reschedule over every chat.
func (d *digests) Reschedule(every func(key string) time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, g := range d.byKey {
		g.Reschedule(every)
	}
}

// Drop stops key's window without flushing it.
func (d *digests) Drop(key string) {
	d.mu.Lock()
	g := d.byKey[key]
	delete(d.byKey, key)
	d.mu.Unlock()
	if g != nil {
		g.Stop()
	}
}

// Stop drops every window and its timer.
func (d *digests) Stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for key, g := range d.byKey {
		g.Stop()
		delete(d.byKey, key)
	}
}

// Keys lists the chats with a digest window.
func (d *digests) Keys() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	keys := make([]string, 0, len(d.byKey))
	for key := range d.byKey {
		keys = append(keys, key)
	}
	return keys
}
