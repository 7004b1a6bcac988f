package quote

import (
	"context"
	"fmt"
	"sync"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/prompt"
)

// state is one resolution's shared budgets, visited set and fetches.
type state struct {
	r         *Resolver
	remaining int
	visited   map[msg.ForwardID]bool
	truncated bool

	mu      sync.Mutex
	futures map[msg.ForwardID]*future
	sem     chan struct{}
	wg      sync.WaitGroup
}

// future is one forward fetch, started ahead of its turn so siblings load
// concurrently while they are still consumed in order.
type future struct {
	done  chan struct{}
	msgs  []msg.Message
	err   error
	panic any
}

// prefetch starts the fetches of sibling forwards that have no inline
// content and are not yet fetched; at most r.parallel run at once.
func (s *state) prefetch(ctx context.Context, ids []msg.ForwardID, inline map[msg.ForwardID][]msg.Message) {
	if s.remaining <= 0 {
		return // nothing more will be rendered
	}
	for _, id := range ids {
		if _, ok := inline[id]; ok {
			continue
		}
		s.start(ctx, id)
	}
}

func (s *state) start(ctx context.Context, id msg.ForwardID) *future {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.futures[id]; ok {
		return f
	}
	f := &future{done: make(chan struct{})}
	s.futures[id] = f
	s.wg.Go(func() {
		defer close(f.done)
		defer func() {
			// A fetcher that panics fails the whole resolution, in the
			// goroutine that asked for it, where it is contained.
			if v := recover(); v != nil {
				f.panic = v
			}
		}()
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
			f.err = ctx.Err()
			return
		}
		defer func() { <-s.sem }()
		fctx, cancel := context.WithTimeout(ctx, s.r.settings.Timeout)
		defer cancel()
		f.msgs, f.err = s.r.fetch.FetchForward(fctx, id)
	})
	return f
}

// wait lets started fetches finish, so none outlives the resolution.
func (s *state) wait() { s.wg.Wait() }

// get returns a forward's messages: inline content when the platform sent
// it, else the (possibly prefetched) fetch.
func (s *state) get(ctx context.Context, id msg.ForwardID, inline []msg.Message) ([]msg.Message, error) {
	if inline != nil {
		return inline, nil
	}
	f := s.start(ctx, id)
	<-f.done
	if f.panic != nil {
		panic(fmt.Sprintf("quote: fetching forward %s: %v", id, f.panic))
	}
	return f.msgs, f.err
}

// expand renders the forward id at depth: each of its messages is a node,
// followed by its own forwards while depth < MaxDepth. A repeated id
// renders nothing and costs nothing; a failed fetch is one node.
func (s *state) expand(ctx context.Context, id msg.ForwardID, inline []msg.Message, depth int) []Node {
	if s.remaining <= 0 {
		s.truncated = true
		return nil
	}
	if s.visited[id] {
		return nil
	}
	s.visited[id] = true
	msgs, err := s.get(ctx, id, inline)
	if err != nil {
		s.remaining--
		return []Node{{Depth: depth, Text: textFailed}}
	}
	var out []Node
	if depth < s.r.settings.MaxDepth {
		// The nested forwards of every message here load while the
		// messages are consumed in order.
		for _, m := range msgs {
			s.prefetch(ctx, m.ForwardIDs, inlineForwards(m))
		}
	}
	for _, m := range msgs {
		if s.remaining <= 0 {
			s.truncated = true
			break
		}
		s.remaining--
		out = append(out, Node{Depth: depth, Sender: m.Sender, Time: m.Time, Text: m.Text})
		if depth >= s.r.settings.MaxDepth {
			continue
		}
		nested := inlineForwards(m)
		for _, fid := range m.ForwardIDs {
			out = append(out, s.expand(ctx, fid, nested[fid], depth+1)...)
		}
	}
	return out
}

// speaker is "name(qq)", the QQ number alone without a name, 未知 without
// either.
func speaker(s msg.Sender) string {
	name := prompt.Sanitize(s.Name)
	switch {
	case s.ID == "" && name == "":
		return textUnknown
	case s.ID == "":
		return name
	case name == "" || name == string(s.ID):
		return string(s.ID)
	}
	return name + "(" + string(s.ID) + ")"
}
