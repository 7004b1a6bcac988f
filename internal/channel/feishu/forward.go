package feishu

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	// failTTL is how long a failed expansion is remembered: the turn
	// that waits for a forward whose expansion failed on arrival does not
	// ask again, a quote a while later does.
	failTTL = time.Minute
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

// expansion is one forward's expansion, running or done. Its fields are
// written before done is closed and read after.
type expansion struct {
	done      chan struct{}
	excerpt   string        // "" when it failed
	container *larkmsg.Item // the forward as the platform answered
	at        time.Time
}

func newForwards(a *Account) *forwards {
	return &forwards{a: a, sem: make(chan struct{}, expandParallel), jobs: map[string]*expansion{}}
}

// prefetch starts the expansion of the forward id posted in peer, unless it
// runs or ran.
func (f *forwards) prefetch(id string, peer msg.Peer) { f.start(id, peer, nil) }

// fresh reports whether a finished expansion may still be used.
func (e *expansion) fresh(now time.Time) bool {
	ttl := excerptTTL
	if e.excerpt == "" {
		ttl = failTTL
	}
	return now.Sub(e.at) < ttl
}

// running returns the expansion of id when one runs or finished well and
// is fresh; nil otherwise.
func (f *forwards) running(id string) *expansion {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.jobs[id]
	if !ok {
		return nil
	}
	select {
	case <-e.done:
		if e.excerpt == "" || !e.fresh(f.a.opts.Now()) {
			return nil
		}
	default:
	}
	return e
}

// start returns the expansion of id, starting it when none runs or is
// fresh. The items of a GET of id already in hand, when given, are used
// instead of asking again.
func (f *forwards) start(id string, peer msg.Peer, items []larkmsg.Item) *expansion {
	return f.job(id, func(e *expansion) { f.run(e, id, peer, items) })
}

// textRecalled stands for a message its sender recalled.
const textRecalled = "(已撤回)"

// cardKey is the key of a card's fetch among the expansions, and the
// reference a card's message defers.
func cardKey(id string) string { return "card:" + id }

// startCard returns the fetch of the card of message id as its sender
// wrote it, starting it when none runs or is fresh: events carry only a
// degraded projection of a card (often nothing but "please upgrade").
func (f *forwards) startCard(id string) *expansion {
	return f.job(cardKey(id), func(e *expansion) { f.runCard(e, id) })
}

// job returns the job under key, starting run when none runs or is fresh.
func (f *forwards) job(key string, run func(*expansion)) *expansion {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.jobs[key]; ok {
		select {
		case <-e.done:
			if e.fresh(f.a.opts.Now()) {
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
	f.jobs[key] = e
	go run(e)
	return e
}

// runCard fetches the card of message id into e: its text as the
// sender's card reads, "" when the platform refused or it has none.
func (f *forwards) runCard(e *expansion, id string) {
	defer close(e.done)
	f.sem <- struct{}{}
	defer func() { <-f.sem }()
	ctx, cancel := context.WithTimeout(context.Background(), expandTimeout)
	defer cancel()
	defer func() { e.at = f.a.opts.Now() }()
	items, err := f.a.api.getMessage(ctx, id)
	if err != nil {
		f.a.log.Warn("Feishu card not fetched; the agent sees what the event carried", "message_id", id, "code", codeOf(err))
		return
	}
	for _, it := range items {
		if it.MessageID == id && it.MsgType == "interactive" && !it.Deleted {
			e.excerpt = larkmsg.Render(it.MsgType, it.Body.Content, id, it.Mentions)
			return
		}
	}
}

// run expands id into e. The expander logs a failure once, with the
// platform's code.
func (f *forwards) run(e *expansion, id string, peer msg.Peer, items []larkmsg.Item) {
	defer close(e.done)
	f.sem <- struct{}{}
	defer func() { <-f.sem }()
	ctx, cancel := context.WithTimeout(context.Background(), expandTimeout)
	defer cancel()
	get := func(ctx context.Context, gid string) ([]larkmsg.Item, error) {
		got := items
		if gid != id || got == nil {
			var err error
			if got, err = f.a.api.getMessage(ctx, gid); err != nil {
				return nil, err
			}
		} else {
			items = nil
		}
		if gid == id {
			for i := range got {
				if got[i].MessageID == id {
					c := got[i]
					e.container = &c
					break
				}
			}
		}
		return got, nil
	}
	excerpt, _ := f.expander(get, peer).Expand(ctx, id)
	e.excerpt, e.at = excerpt, f.a.opts.Now()
}

// pruneLocked forgets finished expansions past their time, then the
// oldest half of the finished ones when all are fresh.
func (f *forwards) pruneLocked() {
	now := f.a.opts.Now()
	var oldest time.Time
	for id, e := range f.jobs {
		select {
		case <-e.done:
			if !e.fresh(now) {
				delete(f.jobs, id)
			} else if oldest.IsZero() || e.at.Before(oldest) {
				oldest = e.at
			}
		default:
		}
	}
	if len(f.jobs) < maxExcerpts || oldest.IsZero() {
		return
	}
	cutoff := oldest.Add(now.Sub(oldest) / 2)
	for id, e := range f.jobs {
		select {
		case <-e.done:
			if !e.at.After(cutoff) {
				delete(f.jobs, id)
			}
		default:
		}
	}
}

// wait waits for e within ctx; "" when it failed or ctx ended first.
func (e *expansion) wait(ctx context.Context) string {
	select {
	case <-e.done:
		return e.excerpt
	case <-ctx.Done():
		return ""
	}
}

// expander is the larkmsg expander of a forward posted in peer.
func (f *forwards) expander(get func(context.Context, string) ([]larkmsg.Item, error), peer msg.Peer) *larkmsg.Expander {
	a := f.a
	mf := a.opts.MergeForward
	workspace := ""
	if a.opts.Workspace != nil && peer.ID != "" {
		workspace = a.opts.Workspace(peer)
	}
	return &larkmsg.Expander{
		Get:     get,
		Names:   a.names.lookup,
		BotName: a.botName(), Location: a.opts.Location,
		MaxDepth: mf.MaxDepth, MaxLines: mf.MaxLines, MaxChars: mf.MaxChars,
		Workspace: workspace, Logger: a.log,
	}
}

// Enrich implements the pipeline's enricher: every merged forward among
// msgs reads as the excerpt of its messages (or keeps its placeholder when
// the expansion failed), and carries no forward left to resolve; a card
// reads as its sender wrote it; a message its sender recalled reads
// "(已撤回)", whatever it said. The
// expansions run at once, each at most once (one started when the
// message arrived is waited for).
func (a *Account) Enrich(ctx context.Context, msgs []msg.Message) []msg.Message {
	jobs := make([]*expansion, len(msgs))
	for i, m := range msgs {
		if a.wasRecalled(m.ID) {
			// Recalled by its sender: the agent sees that, not what it said.
			msgs[i].Text, msgs[i].Segments = textRecalled, []msg.Segment{msg.Text(textRecalled)}
			msgs[i].ForwardIDs, msgs[i].Deferred, msgs[i].Recalled = nil, nil, true
			continue
		}
		if id, ok := cardOf(m); ok {
			jobs[i] = a.forward.startCard(id)
		} else if len(m.ForwardIDs) > 0 && a.opts.MergeForward.Enabled {
			jobs[i] = a.forward.start(string(m.ForwardIDs[0]), m.Peer, nil)
		}
	}
	ectx, cancel := context.WithTimeout(ctx, expandTimeout)
	defer cancel()
	for i, e := range jobs {
		if e == nil {
			continue
		}
		m := &msgs[i]
		if ex := e.wait(ectx); ex != "" {
			m.Text = ex
			m.Segments = []msg.Segment{msg.Text(ex)}
		}
	}
	for i := range msgs {
		msgs[i].ForwardIDs, msgs[i].Deferred = nil, nil
	}
	return msgs
}

// QuotesFromLog reports whether m, as pincer logged it in a chat (a group
// when group is true), may answer a quote of it without asking Feishu,
// unless its sender recalled it: a merged forward the log holds expanded
// (its excerpt, with its file note when it spilled), and in a group any
// other message the log holds complete (the log comes first, as the spec
// says). A forward the log holds unexpanded, a message whose content is
// still to be fetched (a card), and in a direct chat anything else are
// fetched.
func (a *Account) QuotesFromLog(m msg.Message, group bool) bool {
	switch {
	case a.wasRecalled(m.ID):
		return false
	case strings.HasPrefix(m.Text, larkmsg.ExcerptPrefix):
		return true
	}
	return group && !m.Incomplete() && strings.TrimSpace(m.Text) != larkmsg.MergeForwardText
}

// cardOf reports whether m is a card whose content is to be fetched, and
// its message id.
func cardOf(m msg.Message) (string, bool) {
	for _, d := range m.Deferred {
		if id, ok := strings.CutPrefix(d, "card:"); ok && id != "" {
			return id, true
		}
	}
	return "", false
}

var _ channel.Fetcher = (*Account)(nil)

// errNoForwardFetch: Feishu's forwards are expanded by Enrich, never
// fetched node by node.
var errNoForwardFetch = errors.New("feishu: merged forwards are expanded with their message")

// FetchMessage implements channel.Fetcher for quotes: the message with id
// (only the first item of the platform's answer), a merged forward as the
// excerpt of its messages. A forward expanded already, or being expanded,
// is not asked for again.
func (a *Account) FetchMessage(ctx context.Context, id msg.MessageID) (msg.Message, error) {
	enabled := a.opts.MergeForward.Enabled
	if e := a.forward.running(string(id)); enabled && e != nil {
		if ex := e.wait(ctx); ex != "" && e.container != nil {
			m := a.fromItem(ctx, *e.container, a.peerOf(e.container.ChatID), nil)
			m.Text, m.Segments, m.ForwardIDs = ex, []msg.Segment{msg.Text(ex)}, nil
			return m, nil
		}
	}
	items, err := a.api.getMessage(ctx, string(id))
	if err != nil {
		return msg.Message{}, fmt.Errorf("message %s: %w", id, err)
	}
	if len(items) == 0 {
		return msg.Message{}, fmt.Errorf("message %s: no item", id)
	}
	it := items[0]
	m := a.fromItem(ctx, it, a.peerOf(it.ChatID), nil)
	if it.MsgType == "merge_forward" && !it.Deleted && enabled {
		if ex := a.forward.start(it.MessageID, m.Peer, items).wait(ctx); ex != "" {
			m.Text, m.Segments = ex, []msg.Segment{msg.Text(ex)}
		}
	}
	m.ForwardIDs = nil
	return m, nil
}

// FetchForward implements channel.Fetcher; see Enrich.
func (a *Account) FetchForward(context.Context, msg.ForwardID) ([]msg.Message, error) {
	return nil, errNoForwardFetch
}

// fromItem turns a message read through the API into a msg.Message. The
// names of users come from names when given, else from the cache or the
// platform. The bot's own messages are sent by its open_id.
func (a *Account) fromItem(ctx context.Context, it larkmsg.Item, peer msg.Peer, names map[string]string) msg.Message {
	ms, _ := parseMillis(it.CreateTime)
	m := msg.Message{
		ID: msg.MessageID(it.MessageID), Channel: ChannelID, Account: a.opts.ID, Peer: peer,
		Sender: msg.Sender{ID: msg.UserID(it.Sender.ID), IsBot: it.Sender.SenderType == "app"},
		Time:   time.UnixMilli(ms),
	}
	if peer.ID == "" && it.ChatID != "" {
		m.Peer = a.peerOf(it.ChatID)
	}
	switch {
	case m.Sender.IsBot && it.Sender.ID == a.opts.AppID:
		m.Sender.Name = a.botName()
		if self := a.Self(); self != "" {
			m.Sender.ID = self
		}
	case m.Sender.IsBot:
	case it.Sender.SenderType == "anonymous":
		m.Sender.Name = "匿名"
	case names != nil:
		m.Sender.Name = names[it.Sender.ID]
	default:
		m.Sender.Name = a.names.name(ctx, it.Sender.ID, it.Mentions)
	}
	if it.ParentID != "" && !(it.ThreadID != "" && it.ParentID == it.RootID) {
		m.ReplyTo = msg.MessageID(it.ParentID)
	}
	if it.Deleted {
		m.Text = "(已撤回)"
		m.Segments = []msg.Segment{msg.Text(m.Text)}
		return m
	}
	m.Text = renderContent(it.MsgType, it.Body.Content, it.MessageID, it.Mentions)
	for _, mn := range it.Mentions {
		if mn.ID != "" && (mn.IDType == "" || mn.IDType == "open_id") && !m.Mentioned(msg.UserID(mn.ID)) {
			m.Mentions = append(m.Mentions, msg.UserID(mn.ID))
		}
	}
	m.AtAll = larkmsg.MentionsAll(it.MsgType, it.Body.Content, it.Mentions)
	if it.MsgType == "merge_forward" {
		m.ForwardIDs = []msg.ForwardID{msg.ForwardID(it.MessageID)}
	}
	m.Segments = append(mediaSegments(it.MsgType, it.Body.Content, it.MessageID), msg.Text(m.Text))
	return m
}

var _ channel.HistoryFetcher = (*Account)(nil)

// History implements channel.HistoryFetcher for /summary: the chat's
// recent messages through the list API, newest last, recalled ones left
// out, before q.Before when set. A direct chat is read when its chat id
// is known from a message of it; else ErrHistoryUnsupported sends the
// caller to the pincer log.
func (a *Account) History(ctx context.Context, peer msg.Peer, q channel.HistoryQuery) ([]msg.Message, error) {
	chatID := peer.ID
	switch peer.Kind {
	case msg.Group:
	case msg.Direct:
		c, ok := a.direct.chat(peer.ID)
		if !ok {
			return nil, fmt.Errorf("history of %s: %w", peer, channel.ErrHistoryUnsupported)
		}
		chatID = c
	default:
		return nil, fmt.Errorf("history of %s: %w", peer, channel.ErrHistoryUnsupported)
	}
	if q.Count <= 0 {
		return nil, nil
	}
	var end time.Time
	var before int64
	if q.Before != "" {
		items, err := a.api.getMessage(ctx, string(q.Before))
		if err != nil {
			return nil, fmt.Errorf("history of %s before %s: %w", peer, q.Before, err)
		}
		if len(items) == 0 {
			return nil, fmt.Errorf("history of %s before %s: no such message", peer, q.Before)
		}
		before, _ = parseMillis(items[0].CreateTime)
		// The range is in seconds: round up, then leave out what is newer.
		end = time.Unix((before+999)/1000, 0)
	}
	var items []larkmsg.Item
	token := ""
	for len(items) < q.Count {
		page, next, err := a.api.listMessages(ctx, chatID, time.Time{}, end, token, min(50, q.Count-len(items)))
		if err != nil {
			if len(items) > 0 {
				a.log.Warn("Feishu history cut short", "peer", peer.String(), "err", err)
				break
			}
			return nil, fmt.Errorf("history of %s: %w", peer, err)
		}
		for _, it := range page {
			if it.Deleted || len(items) == q.Count {
				continue
			}
			if q.Before != "" {
				ms, _ := parseMillis(it.CreateTime)
				if it.MessageID == string(q.Before) || ms > before {
					continue
				}
			}
			items = append(items, it)
		}
		if next == "" {
			break
		}
		token = next
	}
	names := a.senderNames(ctx, items)
	// Newest first from the API; oldest first for the caller.
	out := make([]msg.Message, 0, len(items))
	for i := len(items) - 1; i >= 0; i-- {
		out = append(out, a.fromItem(ctx, items[i], peer, names))
	}
	return out, nil
}

// senderNames resolves the names of the users who sent items, in batches.
func (a *Account) senderNames(ctx context.Context, items []larkmsg.Item) map[string]string {
	var ids []string
	for _, it := range items {
		a.names.learn(it.Mentions)
		if it.Sender.SenderType == "user" && it.Sender.ID != "" {
			ids = append(ids, it.Sender.ID)
		}
	}
	nctx, cancel := context.WithTimeout(ctx, expandTimeout)
	defer cancel()
	names, err := a.names.lookup(nctx, ids)
	if err != nil {
		a.log.Warn("Feishu sender names not resolved", "err", err)
	}
	return names
}
