package feishu

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/feishu/larkmsg"
	"github.com/pincerbot/pincer/internal/msg"
)

// Bounds of merged-forward expansion.
const (
	// expandTimeout bounds one expansion, all its calls included.
	expandTimeout = 20 * time.Second
	// expandParallel bounds the expansions running at once.
	expandParallel = 4
	// excerptTTL is how long an expansion is remembered.
	excerptTTL = time.Hour
	// maxExcerpts bounds the remembered expansions.
	maxExcerpts = 2048
)

// forwards expands merged forwards once each: a message's expansion
// starts when it is taken in (so a later turn finds it ready) and a turn
// that needs it waits for it.
type forwards struct {
	a   *Account
	sem chan struct{}

	mu   sync.Mutex
	jobs map[string]*expansion
}

// expansion is one forward's expansion, running or done.
type expansion struct {
	done    chan struct{}
	excerpt string // "" when it failed
	at      time.Time
}

func newForwards(a *Account) *forwards {
	return &forwards{a: a, sem: make(chan struct{}, expandParallel), jobs: map[string]*expansion{}}
}

// prefetch starts the expansion of the forward id posted in peer, unless it
// runs or ran.
func (f *forwards) prefetch(id string, peer msg.Peer) { f.start(id, peer) }

// start returns the expansion of id, starting it when needed.
func (f *forwards) start(id string, peer msg.Peer) *expansion {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.jobs[id]; ok {
		select {
		case <-e.done:
			if time.Since(e.at) < excerptTTL && e.excerpt != "" {
				return e
			}
		default:
			return e
		}
	}
	if len(f.jobs) >= maxExcerpts {
		f.pruneLocked()
	}
	e := &expansion{done: make(chan struct{})}
	f.jobs[id] = e
	go func() {
		defer close(e.done)
		f.sem <- struct{}{}
		defer func() { <-f.sem }()
		ctx, cancel := context.WithTimeout(context.Background(), expandTimeout)
		defer cancel()
		excerpt, err := f.expand(ctx, id, peer)
		if err != nil {
			f.a.log.Warn("Feishu merged forward not expanded; the agent sees its placeholder", "message_id", id, "code", codeOf(err), "err", err)
		}
		e.excerpt, e.at = excerpt, time.Now()
	}()
	return e
}

// pruneLocked forgets finished expansions, the oldest half when all are
// fresh.
func (f *forwards) pruneLocked() {
	var oldest time.Time
	for id, e := range f.jobs {
		select {
		case <-e.done:
			if time.Since(e.at) >= excerptTTL {
				delete(f.jobs, id)
			} else if oldest.IsZero() || e.at.Before(oldest) {
				oldest = e.at
			}
		default:
		}
	}
	if len(f.jobs) < maxExcerpts {
		return
	}
	cutoff := oldest.Add(time.Since(oldest) / 2)
	for id, e := range f.jobs {
		select {
		case <-e.done:
			if e.at.Before(cutoff) {
				delete(f.jobs, id)
			}
		default:
		}
	}
}

// excerpt waits for the expansion of id within ctx; "" when it failed or
// ctx ended first.
func (f *forwards) excerpt(ctx context.Context, id string, peer msg.Peer) string {
	e := f.start(id, peer)
	select {
	case <-e.done:
		return e.excerpt
	case <-ctx.Done():
		return ""
	}
}

// expand runs one expansion through the platform.
func (f *forwards) expand(ctx context.Context, id string, peer msg.Peer) (string, error) {
	a := f.a
	mf := a.opts.MergeForward
	workspace := ""
	if a.opts.Workspace != nil {
		workspace = a.opts.Workspace(peer)
	}
	x := &larkmsg.Expander{
		Get: a.api.getMessage,
		Names: func(ctx context.Context, ids []string) (map[string]string, error) {
			return a.names.lookup(ctx, ids)
		},
		BotName: a.botName(), Location: a.opts.Location,
		MaxDepth: mf.MaxDepth, MaxLines: mf.MaxLines, MaxChars: mf.MaxChars,
		Workspace: workspace, Logger: a.log,
	}
	return x.Expand(ctx, id)
}

// Enrich implements the pipeline's enricher: every merged forward among
// msgs reads as the excerpt of its messages (or keeps its placeholder when
// the expansion failed), and carries no forward left to resolve.
func (a *Account) Enrich(ctx context.Context, msgs []msg.Message) []msg.Message {
	for i := range msgs {
		m := &msgs[i]
		if len(m.ForwardIDs) == 0 {
			continue
		}
		if a.opts.MergeForward.Enabled {
			ectx, cancel := context.WithTimeout(ctx, expandTimeout)
			if ex := a.forward.excerpt(ectx, string(m.ForwardIDs[0]), m.Peer); ex != "" {
				m.Text = ex
				m.Segments = []msg.Segment{msg.Text(ex)}
			}
			cancel()
		}
		m.ForwardIDs = nil
	}
	return msgs
}

var _ channel.Fetcher = (*Account)(nil)

// errNoForwardFetch: Feishu's forwards are expanded by Enrich, never
// fetched node by node.
var errNoForwardFetch = errors.New("feishu: merged forwards are expanded with their message")

// FetchMessage implements channel.Fetcher for quotes: the message with id,
// a merged forward as the excerpt of its messages.
func (a *Account) FetchMessage(ctx context.Context, id msg.MessageID) (msg.Message, error) {
	items, err := a.api.getMessage(ctx, string(id))
	if err != nil {
		return msg.Message{}, err
	}
	if len(items) == 0 {
		return msg.Message{}, fmt.Errorf("message %s: no item", id)
	}
	it := items[0]
	m := a.fromItem(ctx, it, msg.Peer{})
	if it.MsgType == "merge_forward" && a.opts.MergeForward.Enabled {
		if ex := a.forward.excerpt(ctx, it.MessageID, m.Peer); ex != "" {
			m.Text = ex
		}
	}
	m.ForwardIDs = nil
	return m, nil
}

// FetchForward implements channel.Fetcher; see Enrich.
func (a *Account) FetchForward(context.Context, msg.ForwardID) ([]msg.Message, error) {
	return nil, errNoForwardFetch
}

// fromItem turns a message read through the API into a msg.Message.
func (a *Account) fromItem(ctx context.Context, it larkmsg.Item, peer msg.Peer) msg.Message {
	ms, _ := parseMillis(it.CreateTime)
	m := msg.Message{
		ID: msg.MessageID(it.MessageID), Channel: ChannelID, Account: a.opts.ID, Peer: peer,
		Sender: msg.Sender{ID: msg.UserID(it.Sender.ID), IsBot: it.Sender.SenderType == "app"},
		Time:   time.UnixMilli(ms),
	}
	if peer == (msg.Peer{}) && it.ChatID != "" {
		m.Peer = msg.Peer{Kind: msg.Group, ID: it.ChatID}
	}
	switch {
	case m.Sender.IsBot:
		m.Sender.Name = a.botName()
	case it.Sender.SenderType == "anonymous":
		m.Sender.Name = "匿名"
	default:
		m.Sender.Name = a.names.name(ctx, it.Sender.ID, it.Mentions)
	}
	if it.Deleted {
		m.Text = "(已撤回)"
		return m
	}
	m.Text = larkmsg.Render(it.MsgType, it.Body.Content, it.MessageID, it.Mentions)
	for _, mn := range it.Mentions {
		if mn.ID != "" {
			m.Mentions = append(m.Mentions, msg.UserID(mn.ID))
		}
	}
	if it.MsgType == "merge_forward" {
		m.ForwardIDs = []msg.ForwardID{msg.ForwardID(it.MessageID)}
	}
	m.Segments = []msg.Segment{msg.Text(m.Text)}
	return m
}

var _ channel.HistoryFetcher = (*Account)(nil)

// History implements channel.HistoryFetcher for /summary: the chat's
// recent messages through the list API, newest last. Direct chats are
// read through the pincer log instead (their chat id is not the peer).
func (a *Account) History(ctx context.Context, peer msg.Peer, q channel.HistoryQuery) ([]msg.Message, error) {
	if peer.Kind != msg.Group {
		return nil, channel.ErrHistoryUnsupported
	}
	var out []msg.Message
	token := ""
	for len(out) < q.Count {
		items, next, err := a.api.listMessages(ctx, peer.ID, time.Time{}, time.Time{}, token, min(50, max(q.Count-len(out), 1)))
		if err != nil {
			if len(out) > 0 {
				break
			}
			return nil, fmt.Errorf("history of %s: %w", peer, err)
		}
		for _, it := range items {
			if it.Deleted {
				continue
			}
			out = append(out, a.fromItem(ctx, it, peer))
		}
		if next == "" {
			break
		}
		token = next
	}
	// Newest first from the API; oldest first for the caller.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}
