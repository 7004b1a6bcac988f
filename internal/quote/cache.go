package quote

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// Cached remembers what f fetched for ttl, at most max entries of each
// kind (oldest forgotten first), so the same quoted message in a busy chat
// is fetched once. Failures are not remembered, and neither is a message
// after Forget (its sender recalled it).
func Cached(f Fetcher, ttl time.Duration, max int) *Cache {
	return &Cache{f: f, messages: newTTL[msg.MessageID, msg.Message](ttl, max), forwards: newTTL[msg.ForwardID, []msg.Message](ttl, max)}
}

var _ LimitedForwardFetcher = (*Cache)(nil)

// Cache is a Fetcher that remembers (see Cached).
type Cache struct {
	f        Fetcher
	messages *ttlMap[msg.MessageID, msg.Message]
	forwards *ttlMap[msg.ForwardID, []msg.Message]
}

// Forget drops what was fetched of message id: the next quote of it asks
// again, and the platform says what became of it (recalled, it fails).
func (c *Cache) Forget(id msg.MessageID) { c.messages.forget(id) }

// FetchMessage implements Fetcher.
func (c *Cache) FetchMessage(ctx context.Context, id msg.MessageID) (msg.Message, error) {
	if m, ok := c.messages.get(id); ok {
		return m, nil
	}
	m, err := c.f.FetchMessage(ctx, id)
	if err == nil {
		c.messages.put(id, m)
	}
	return m, err
}

// FetchForward implements Fetcher.
func (c *Cache) FetchForward(ctx context.Context, id msg.ForwardID) ([]msg.Message, error) {
	return c.FetchForwardLimited(ctx, id, nil)
}

// FetchForwardLimited passes take on to a LimitedForwardFetcher; a plain
// one's fetch takes one call. An answer from the cache takes none.
func (c *Cache) FetchForwardLimited(ctx context.Context, id msg.ForwardID, take func() bool) ([]msg.Message, error) {
	if ms, ok := c.forwards.get(id); ok {
		return ms, nil
	}
	var ms []msg.Message
	var err error
	switch lf, ok := c.f.(LimitedForwardFetcher); {
	case ok:
		ms, err = lf.FetchForwardLimited(ctx, id, take)
	case take != nil && !take():
		return nil, errNoCalls
	default:
		ms, err = c.f.FetchForward(ctx, id)
	}
	if err == nil {
		c.forwards.put(id, ms)
	}
	return ms, err
}

// errNoCalls: the resolution had no platform call left for a fetch.
var errNoCalls = errors.New("quote: no calls left for this fetch")

// ttlMap is a small map whose entries expire, bounded in size.
type ttlMap[K comparable, V any] struct {
	ttl time.Duration
	max int

	mu    sync.Mutex
	items map[K]ttlItem[V]
	order []K
}

type ttlItem[V any] struct {
	v       V
	expires time.Time
}

func newTTL[K comparable, V any](ttl time.Duration, max int) *ttlMap[K, V] {
	return &ttlMap[K, V]{ttl: ttl, max: max, items: map[K]ttlItem[V]{}}
}

func (m *ttlMap[K, V]) get(k K) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.items[k]
	if !ok || time.Now().After(it.expires) {
		var zero V
		return zero, false
	}
	return it.v, true
}

func (m *ttlMap[K, V]) forget(k K) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.items, k) // its place in order goes when it comes first
}

func (m *ttlMap[K, V]) put(k K, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.items[k]; !ok {
		m.order = append(m.order, k)
	}
	m.items[k] = ttlItem[V]{v: v, expires: time.Now().Add(m.ttl)}
	now := time.Now()
	for len(m.order) > 0 {
		oldest := m.order[0]
		if it, ok := m.items[oldest]; ok && len(m.items) <= m.max && now.Before(it.expires) {
			break
		}
		delete(m.items, oldest)
		m.order = m.order[1:]
	}
}
