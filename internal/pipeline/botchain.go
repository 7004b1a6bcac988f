package pipeline

import (
	"fmt"
	"sync"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/trigger"
)

// maxBotChats bounds the chats whose bot reply chains are tracked; past
// it the counts start over (a chain then gets its full length again).
const maxBotChats = 10000

// botChains limits bot-to-bot reply loops: in each chat it counts the
// replies other bots' messages triggered in a row, and a human's message
// starts the count over.
type botChains struct {
	mu sync.Mutex
	n  map[string]int
}

// apply returns d for m as the chain allows: a bot's message that would
// trigger the limit-th reply in a row no longer triggers.
func (c *botChains) apply(m msg.Message, d trigger.Decision, limit int) trigger.Decision {
	if limit <= 0 {
		return d
	}
	peer := m.Peer.String()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !m.Sender.IsBot {
		delete(c.n, peer)
		return d
	}
	if !d.Triggered {
		return d
	}
	if c.n == nil || len(c.n) >= maxBotChats {
		c.n = map[string]int{}
	}
	if n := c.n[peer]; n >= limit {
		return trigger.Decision{Why: fmt.Sprintf("sent by a bot, and bots' messages triggered the last %d replies in this chat in a row (maxBotReplyChain %d); a person's message starts the count over", n, limit)}
	}
	c.n[peer]++
	return d
}
