package feishu

import (
	"context"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/pincerbot/pincer/internal/channel/feishu/larkmsg"
)

// How long names are remembered: a name the platform gave, an id it does
// not know, and an id it could not be asked about (it failed).
const (
	nameTTL     = 6 * time.Hour
	nameMissTTL = 10 * time.Minute
	nameFailTTL = time.Minute
)

// maxNames bounds the names remembered.
const maxNames = 100_000

// basicBatchQPS is basic_batch's limit of calls per second.
const basicBatchQPS = 5

// nameCache remembers users' names for a while: from the mentions of
// messages (free) and from basic_batch (ten ids a call, five calls a
// second). An id the platform does not name, or could not be asked
// about, is remembered as unnamed for a shorter while, so a sender
// without a name costs no call per message; concurrent look-ups of one id
// make one call.
type nameCache struct {
	api   *client
	ttl   time.Duration
	limit *rate.Limiter

	mu      sync.Mutex
	names   map[string]cachedName
	flights map[string]chan struct{} // ids being looked up
}

type cachedName struct {
	name  string // empty: not known
	until time.Time
}

func newNameCache(api *client, ttl time.Duration) *nameCache {
	return &nameCache{
		api: api, ttl: ttl, limit: rate.NewLimiter(basicBatchQPS, 1),
		names: map[string]cachedName{}, flights: map[string]chan struct{}{},
	}
}

// name returns the name of openID: from mentions that name it, the cache
// or the platform; empty when none says.
func (c *nameCache) name(ctx context.Context, openID string, mentions []larkmsg.Mention) string {
	c.learn(mentions)
	got, _ := c.lookup(ctx, []string{openID})
	return got[openID]
}

// learn remembers the names mentions give.
func (c *nameCache) learn(mentions []larkmsg.Mention) {
	if len(mentions) == 0 {
		return
	}
	until := time.Now().Add(c.ttl)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range mentions {
		if m.ID != "" && m.Name != "" && (m.IDType == "" || m.IDType == "open_id") {
			c.names[m.ID] = cachedName{m.Name, until}
		}
	}
	c.boundLocked()
}

// lookup resolves ids through the cache and the platform. The result
// holds the ids that have a name; a failure of the platform is returned
// with what was resolved.
func (c *nameCache) lookup(ctx context.Context, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	var ask []string
	var wait []chan struct{}
	now := time.Now()
	c.mu.Lock()
	for _, id := range ids {
		if id == "" || out[id] != "" || slices.Contains(ask, id) {
			continue
		}
		if n, ok := c.names[id]; ok && now.Before(n.until) {
			if n.name != "" {
				out[id] = n.name
			}
			continue
		}
		if ch, ok := c.flights[id]; ok {
			wait = append(wait, ch)
			continue
		}
		c.flights[id] = make(chan struct{})
		ask = append(ask, id)
	}
	c.mu.Unlock()

	var err error
	if len(ask) > 0 {
		err = c.ask(ctx, ask)
	}
	for _, ch := range wait {
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
	now = time.Now()
	c.mu.Lock()
	for _, id := range ids {
		if n, ok := c.names[id]; ok && n.name != "" && now.Before(n.until) {
			out[id] = n.name
		}
	}
	c.mu.Unlock()
	return out, err
}

// ask asks the platform for the names of ids, ten a call, and remembers
// what it answered; the flights of ids end.
func (c *nameCache) ask(ctx context.Context, ids []string) error {
	var firstErr error
	for batch := range slices.Chunk(ids, maxNameBatch) {
		var got map[string]string
		err := c.limit.Wait(ctx)
		if err == nil {
			got, err = c.api.userNames(ctx, batch)
		}
		now := time.Now()
		c.mu.Lock()
		for _, id := range batch {
			switch {
			case got[id] != "":
				c.names[id] = cachedName{got[id], now.Add(c.ttl)}
			case err == nil:
				c.names[id] = cachedName{"", now.Add(nameMissTTL)}
			case ctx.Err() == nil:
				c.names[id] = cachedName{"", now.Add(nameFailTTL)}
			}
			if ch, ok := c.flights[id]; ok {
				close(ch)
				delete(c.flights, id)
			}
		}
		c.boundLocked()
		c.mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// boundLocked forgets expired names past the bound, then any.
func (c *nameCache) boundLocked() {
	if len(c.names) <= maxNames {
		return
	}
	now := time.Now()
	for id, n := range c.names {
		if !now.Before(n.until) {
			delete(c.names, id)
		}
	}
	for id := range c.names {
		if len(c.names) <= maxNames*9/10 {
			break
		}
		delete(c.names, id)
	}
}
