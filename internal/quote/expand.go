package quote

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/prompt"
)

// state is one resolution's shared budgets, visited set and fetches. Only
// the resolving goroutine touches it, except calls, which fetches spend.
type state struct {
	r         *Resolver
	remaining int
	visited   map[msg.ForwardID]bool
	truncated bool
	// futures are the fetches started, by id; pending counts those started
	// ahead of their turn and not yet consumed, each of which will render
	// at least one node.
	futures map[msg.ForwardID]*future
	pending int
	// calls is what is left of the resolution's platform calls; a fetch
	// spends one per call it makes (see LimitedForwardFetcher).
	calls atomic.Int64

	sem chan struct{}
	wg  sync.WaitGroup
}

func newState(r *Resolver) *state {
	s := &state{r: r, remaining: r.settings.MaxNodes, visited: map[msg.ForwardID]bool{}, futures: map[msg.ForwardID]*future{}, sem: make(chan struct{}, r.parallel)}
	s.calls.Store(int64(maxCalls(r.settings.MaxNodes)))
	return s
}

// maxCalls bounds the platform calls of one resolution: every node may
// come from a fetch of its own, and a fetch may be asked twice (OneBot's
// get_forward_msg, retried with message_id).
func maxCalls(maxNodes int) int { return 2 * max(maxNodes, 0) }

// future is one forward fetch, started ahead of its turn so siblings load
// concurrently while they are still consumed in order.
type future struct {
	done     chan struct{}
	msgs     []msg.Message
	err      error
	panic    any
	ahead    bool // started by prefetch, counted in pending
	consumed bool
	// skipped: no call was left for it; it renders nothing.
	skipped bool
}

// prefetch starts the fetches of forwards that have no inline content and
// are not yet fetched, in order, as long as the nodes that will be left by
// then can render each of them: room is the node budget that remains once
// what renders before them is taken, and every fetch started ahead and not
// yet consumed holds one node of it. At most r.parallel run at once.
func (s *state) prefetch(ctx context.Context, ids []msg.ForwardID, inline map[msg.ForwardID][]msg.Message, room int) {
	for _, id := range ids {
		if room-s.pending <= 0 || s.calls.Load() <= 0 {
			return // nothing started now could be rendered
		}
		if s.visited[id] {
			continue
		}
		if content, ok := inline[id]; ok {
			if len(content) > 0 {
				room-- // its first node renders before what follows
			}
			continue
		}
		if _, ok := s.futures[id]; ok {
			continue
		}
		s.start(ctx, id).ahead = true
		s.pending++
	}
}

func (s *state) start(ctx context.Context, id msg.ForwardID) *future {
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
		var made, refused atomic.Bool
		take := func() bool {
			if s.calls.Add(-1) < 0 {
				refused.Store(true)
				return false
			}
			made.Store(true)
			return true
		}
		if lf, ok := s.r.fetch.(LimitedForwardFetcher); ok {
			f.msgs, f.err = lf.FetchForwardLimited(fctx, id, take)
		} else if take() {
			f.msgs, f.err = s.r.fetch.FetchForward(fctx, id)
		}
		f.skipped = refused.Load() && !made.Load()
	})
	return f
}

// wait lets started fetches finish, so none outlives the resolution.
func (s *state) wait() { s.wg.Wait() }

// get returns a forward's messages: inline content when the platform sent
// it, else the (possibly prefetched) fetch. skipped: it was not fetched
// because the resolution's calls ran out.
func (s *state) get(ctx context.Context, id msg.ForwardID, inline []msg.Message) (msgs []msg.Message, skipped bool, err error) {
	if inline != nil {
		return inline, false, nil
	}
	f := s.start(ctx, id)
	<-f.done
	if f.ahead && !f.consumed {
		s.pending--
	}
	f.consumed = true
	if f.panic != nil {
		panic(fmt.Sprintf("quote: fetching forward %s: %v", id, f.panic))
	}
	return f.msgs, f.skipped, f.err
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
	msgs, skipped, err := s.get(ctx, id, inline)
	if skipped {
		s.truncated = true
		return nil
	}
	if err != nil {
		s.remaining--
		return []Node{{Depth: depth, Text: textFailed}}
	}
	var out []Node
	if depth < s.r.settings.MaxDepth {
		// The nested forwards of every message here load while the
		// messages are consumed in order; those of the i-th render after
		// its own node and those of the messages before it.
		for i, m := range msgs {
			s.prefetch(ctx, m.ForwardIDs, inlineForwards(m), s.remaining-(i+1))
		}
	}
	for _, m := range msgs {
		if s.remaining <= 0 {
			s.truncated = true
			break
		}
		s.remaining--
		out = append(out, Node{Depth: depth, Sender: m.Sender, Time: m.Time, Text: m.Text, Media: m.Attachments(msg.AttachedForward)})
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
