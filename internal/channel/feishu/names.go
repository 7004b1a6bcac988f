package feishu

import (
	"context"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/channel/feishu/larkmsg"
)

// nameCache remembers users' names for a while: from the mentions of
// messages (free) and from basic_batch (ten ids a call).
type nameCache struct {
	api *client
	ttl time.Duration

	mu    sync.Mutex
	names map[string]cachedName
}

type cachedName struct {
	name string
	at   time.Time
}

func newNameCache(api *client, ttl time.Duration) *nameCache {
	return &nameCache{api: api, ttl: ttl, names: map[string]cachedName{}}
}

// name returns the name of openID: from mentions that name it, the cache
// or the platform; empty when none says.
func (c *nameCache) name(ctx context.Context, openID string, mentions []larkmsg.Mention) string {
	now := time.Now()
	c.mu.Lock()
	for _, m := range mentions {
		if m.ID != "" && m.Name != "" {
			c.names[m.ID] = cachedName{m.Name, now}
		}
	}
	n, ok := c.names[openID]
	c.mu.Unlock()
	if ok && now.Sub(n.at) < c.ttl {
		return n.name
	}
	got, _ := c.lookup(ctx, []string{openID})
	return got[openID]
}

// lookup resolves ids through the cache and the platform; a failure of the
// platform leaves the unresolved ids out and is returned.
func (c *nameCache) lookup(ctx context.Context, ids []string) (map[string]string, error) {
	now := time.Now()
	out := make(map[string]string, len(ids))
	var missing []string
	c.mu.Lock()
	for _, id := range ids {
		if n, ok := c.names[id]; ok && now.Sub(n.at) < c.ttl {
			out[id] = n.name
		} else {
			missing = append(missing, id)
		}
	}
	c.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	got, err := c.api.userNames(ctx, missing)
	c.mu.Lock()
	for id, n := range got {
		c.names[id] = cachedName{n, now}
		out[id] = n
	}
	if len(c.names) > 100000 {
		for id, n := range c.names {
			if now.Sub(n.at) >= c.ttl {
				delete(c.names, id)
			}
		}
	}
	c.mu.Unlock()
	return out, err
}
