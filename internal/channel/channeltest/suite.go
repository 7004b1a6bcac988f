package channeltest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/lanes"
	"github.com/pincerbot/pincer/internal/msg"
)

// timeout bounds each subtest's waits: a deadline for a hung adapter,
// not a measure of speed. The suite's own tests shorten it for adapters
// built to fail.
var timeout = 60 * time.Second

// minChunkLimit is the least chunk limit the suite works with: its short
// texts and markers must fit in one message.
const minChunkLimit = 20

// env is one subtest's adapter, platform and sink.
type env struct {
	p   Platform
	s   *sink
	ctx context.Context
}

// start starts the adapter of h on a fresh platform. With viaLanes the
// adapter feeds the sink through internal/lanes, as the gateway runs it.
func start(t *testing.T, h Harness, viaLanes bool) *env {
	t.Helper()
	s := newSink()
	var taker channel.Taker = s
	if viaLanes {
		l := lanes.New(lanes.Options{Workers: 4, Capacity: 256})
		t.Cleanup(l.Close) // after the adapter stopped
		taker = lanes.Sink{Lanes: l, Next: s}
	}
	p := h.Start(t, taker)
	// Registered after Start, so it runs before the harness stops the
	// adapter: a request held open by an unfinished message ends first.
	t.Cleanup(s.finishAll)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return &env{p: p, s: s, ctx: ctx}
}

// chats makes n chats of kind; ok is false, with the reason logged, when
// the platform has none of that kind.
func (e *env) chats(t *testing.T, kind msg.PeerKind, n int) (_ []Chat, ok bool) {
	t.Helper()
	cs, err := e.p.Chats(e.ctx, kind, n)
	if errors.Is(err, ErrUnsupported) {
		t.Logf("no %s chats: %v", kind, err)
		return nil, false
	}
	if err != nil {
		t.Fatalf("making %d %s chats: %v", n, kind, err)
	}
	if len(cs) != n {
		t.Fatalf("asked for %d %s chats, got %d", n, kind, len(cs))
	}
	return cs, true
}

// some makes n chats: groups first where the platform has them, the rest
// direct chats.
func (e *env) some(t *testing.T, n int) []Chat {
	t.Helper()
	groups, _ := e.chats(t, msg.Group, (n+1)/2)
	if len(groups) == n {
		return groups
	}
	directs, ok := e.chats(t, msg.Direct, n-len(groups))
	if !ok {
		groups, ok = e.chats(t, msg.Group, n)
		if !ok {
			t.Fatal("the platform has neither group nor direct chats")
		}
	}
	return append(groups, directs...)
}

// inject sends in and checks the platform says which message it is.
func (e *env) inject(t *testing.T, in Inbound) Posted {
	t.Helper()
	p, err := e.p.Inject(e.ctx, in)
	if err != nil {
		t.Fatalf("inject %q in %s: %v", in.Text, in.Chat.Peer, err)
	}
	if p.ID == "" {
		t.Fatalf("inject %q in %s: the platform gave no message id", in.Text, in.Chat.Peer)
	}
	return p
}

// arrived waits for the posted messages at the sink, and returns them in
// the same order.
func (e *env) arrived(t *testing.T, posts ...Posted) []*arrival {
	t.Helper()
	ids := make([]msg.MessageID, len(posts))
	for i, p := range posts {
		ids[i] = p.ID
	}
	got, err := e.s.waitIDs(e.ctx, ids...)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// sentUntil waits until the platform has received marker from the bot in
// chat, and returns everything received there so far.
func (e *env) sentUntil(t *testing.T, chat Chat, marker string) []string {
	t.Helper()
	for {
		texts, more := e.p.Sent(chat)
		if slices.Contains(texts, marker) {
			return texts
		}
		select {
		case <-more:
		case <-e.ctx.Done():
			t.Fatalf("%q never reached %s; the platform received %q", marker, chat.Peer, texts)
		}
	}
}

// sent is what the platform received in chat so far.
func (e *env) sent(chat Chat) []string {
	texts, _ := e.p.Sent(chat)
	return texts
}

// deliver sends text through a's replier, as the engine answers a turn.
func (e *env) deliver(t *testing.T, a *arrival, text string) {
	t.Helper()
	if _, err := a.replier.Deliver(e.ctx, msg.Outbound{Account: a.Account, Peer: a.Peer, Text: text}); err != nil {
		t.Fatalf("deliver %.40q to %s: %v", text, a.Peer, err)
	}
}

// testNormalize: a text message reaches the sink with its channel,
// account, chat, sender, time, id and text, and a mention of the bot is
// recognised as one (and its absence as none).
func testNormalize(t *testing.T, h Harness) {
	e := start(t, h, false)
	var posts []Posted
	if directs, ok := e.chats(t, msg.Direct, 1); ok {
		posts = append(posts, e.inject(t, Inbound{Chat: directs[0], Text: "hello from a direct chat"}))
	}
	if groups, ok := e.chats(t, msg.Group, 1); ok {
		posts = append(posts,
			e.inject(t, Inbound{Chat: groups[0], Text: "hello everyone in the group"}),
			e.inject(t, Inbound{Chat: groups[0], Text: "a question for the bot", MentionBot: true}))
	}
	if len(posts) == 0 {
		t.Fatal("the platform has neither group nor direct chats")
	}
	bot := e.p.Bot()
	now := time.Now()
	for i, a := range e.arrived(t, posts...) {
		p := posts[i]
		where := fmt.Sprintf("%q in %s", p.Text, p.Chat.Peer)
		if a.Channel != e.p.Adapter().Name() {
			t.Errorf("%s: channel %q, want %q", where, a.Channel, e.p.Adapter().Name())
		}
		if a.Account != e.p.Account() {
			t.Errorf("%s: account %q, want %q", where, a.Account, e.p.Account())
		}
		if a.Peer != p.Chat.Peer {
			t.Errorf("%s: peer %s, want %s", where, a.Peer, p.Chat.Peer)
		}
		if a.Sender.ID != p.Chat.User {
			t.Errorf("%s: sender %q, want %q", where, a.Sender.ID, p.Chat.User)
		}
		// A day either way catches seconds read as milliseconds and the
		// like; it says nothing about how fast anything ran.
		if a.Time.IsZero() || a.Time.Sub(now).Abs() > 24*time.Hour {
			t.Errorf("%s: time %v, want about now (%v)", where, a.Time, now)
		}
		switch {
		case !p.MentionBot && a.Text != p.Text:
			t.Errorf("%s: text %q, want it as sent", where, a.Text)
		case p.MentionBot && !strings.Contains(a.Text, p.Text):
			t.Errorf("%s: text %q does not hold what was sent", where, a.Text)
		}
		if p.MentionBot && (bot == "" || !a.Mentioned(bot)) {
			t.Errorf("%s: the mention of the bot (%q) is not recognised: mentions %q", where, bot, a.Mentions)
		}
		if !p.MentionBot && a.Mentioned(bot) {
			t.Errorf("%s: a message without a mention mentions the bot: %q", where, a.Mentions)
		}
		if a.AtAll {
			t.Errorf("%s: reads as a mention of everyone", where)
		}
	}
}

// testDedup: a message the platform delivers again reaches the sink once.
// The message sent next in the same chat arriving says the redelivery was
// dealt with: the adapter takes one chat's messages in order.
func testDedup(t *testing.T, h Harness) {
	e := start(t, h, false)
	chat := e.some(t, 1)[0]
	first := e.inject(t, Inbound{Chat: chat, Text: "a message delivered twice"})
	if err := e.p.Redeliver(e.ctx, first); errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	} else if err != nil {
		t.Fatalf("redeliver: %v", err)
	}
	next := e.inject(t, Inbound{Chat: chat, Text: "the message after it"})
	e.arrived(t, next)
	all, _ := e.s.arrivals()
	var ids []msg.MessageID
	for _, a := range inChat(all, chat.Peer) {
		ids = append(ids, a.ID)
	}
	if want := []msg.MessageID{first.ID, next.ID}; !slices.Equal(ids, want) {
		t.Errorf("the sink took %v in %s, want %v", ids, chat.Peer, want)
	}
}

// testOrder: messages sent in several chats at once reach the sink in the
// order each chat's user sent them: as the adapter calls Take, and through
// internal/lanes (several workers), as the gateway runs the adapters.
func testOrder(t *testing.T, h Harness) {
	subtest(t, h, "AsTaken", func(t *testing.T) { order(t, h, false) })
	subtest(t, h, "ThroughLanes", func(t *testing.T) { order(t, h, true) })
}

func order(t *testing.T, h Harness, viaLanes bool) {
	const perChat = 15
	e := start(t, h, viaLanes)
	chats := e.some(t, 4)
	posted := make([][]Posted, len(chats))
	errs := make(chan error, len(chats))
	var wg sync.WaitGroup
	for i, c := range chats {
		wg.Go(func() {
			for j := range perChat {
				p, err := e.p.Inject(e.ctx, Inbound{Chat: c, Text: fmt.Sprintf("chat %d, message %02d", i, j)})
				if err != nil {
					errs <- fmt.Errorf("inject in %s: %w", c.Peer, err)
					return
				}
				posted[i] = append(posted[i], p)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var all []Posted
	for _, ps := range posted {
		all = append(all, ps...)
	}
	e.arrived(t, all...)
	got, _ := e.s.arrivals()
	for i, c := range chats {
		var want, have []string
		for _, p := range posted[i] {
			want = append(want, p.Text)
		}
		for _, a := range inChat(got, c.Peer) {
			have = append(have, a.Text)
		}
		if !slices.Equal(have, want) {
			t.Errorf("%s: the sink took\n%q\nwant\n%q", c.Peer, have, want)
		}
	}
}

// testDeliver: a reply through the replier the adapter handed the sink
// reaches the message's chat, once, and no other; so does a message sent
// through the adapter outside any turn.
func testDeliver(t *testing.T, h Harness) {
	e := start(t, h, false)
	chats := e.some(t, 2)
	a, b := chats[0], chats[1]
	got := e.arrived(t,
		e.inject(t, Inbound{Chat: a, Text: "please answer me"}),
		e.inject(t, Inbound{Chat: b, Text: "a message nobody answers yet"}))

	// Sends to one chat reach it in order, so the marker sent after the
	// reply arriving means any second copy of the reply would have too.
	// Every text here fits in one message under any chunk limit the
	// suite accepts.
	const reply, replyEnd = "the answer", "end of answer"
	e.deliver(t, got[0], reply)
	e.deliver(t, got[0], replyEnd)
	got[0].finish()
	if texts := e.sentUntil(t, a, replyEnd); !slices.Equal(texts, []string{reply, replyEnd}) {
		t.Errorf("%s received %q, want the reply once, then the marker", a.Peer, texts)
	}
	if texts := e.sent(b); len(texts) > 0 {
		t.Errorf("the reply to %s went to %s too: %q", a.Peer, b.Peer, texts)
	}

	const notice, noticeEnd = "a notice", "end of notice"
	for _, text := range []string{notice, noticeEnd} {
		if _, err := e.p.Adapter().Send(e.ctx, msg.Outbound{Account: e.p.Account(), Peer: b.Peer, Text: text}); err != nil {
			t.Fatalf("send %q to %s: %v", text, b.Peer, err)
		}
	}
	if texts := e.sentUntil(t, b, noticeEnd); !slices.Equal(texts, []string{notice, noticeEnd}) {
		t.Errorf("%s received %q, want the notice once, then the marker", b.Peer, texts)
	}
	if texts := e.sent(a); len(texts) != 2 {
		t.Errorf("%s received %q after the notice to %s", a.Peer, texts, b.Peer)
	}
}

// testChunk: a reply longer than the adapter's chunk limit arrives as
// several messages within the limit whose concatenation, but for
// whitespace at the cuts, is the reply, in order; an adapter without a
// limit sends it whole.
func testChunk(t *testing.T, h Harness) {
	e := start(t, h, false)
	chat := e.some(t, 1)[0]
	a := e.arrived(t, e.inject(t, Inbound{Chat: chat, Text: "tell me a long story"}))[0]
	limit := e.p.ChunkLimit()
	if limit != 0 && limit < minChunkLimit {
		t.Fatalf("a chunk limit of %d is under the suite's %d", limit, minChunkLimit)
	}
	reply := longText(max(4*limit, 300))
	const end = "the end"
	e.deliver(t, a, reply)
	e.deliver(t, a, end)
	a.finish()
	texts := e.sentUntil(t, chat, end)
	if texts[len(texts)-1] != end || slices.Index(texts, end) != len(texts)-1 {
		t.Fatalf("the marker must come once, last: %q", texts)
	}
	chunks := texts[:len(texts)-1]
	if limit == 0 {
		if len(chunks) != 1 || chunks[0] != reply {
			t.Errorf("an adapter without a chunk limit must send the reply whole; the platform received %d messages: %q", len(chunks), chunks)
		}
		return
	}
	if least := (utf8.RuneCountInString(strings.TrimSpace(reply)) + limit - 1) / limit; len(chunks) < least {
		t.Errorf("a %d-character reply came as %d messages; a limit of %d needs at least %d", utf8.RuneCountInString(reply), len(chunks), limit, least)
	}
	for i, c := range chunks {
		if n := utf8.RuneCountInString(c); n > limit {
			t.Errorf("chunk %d has %d characters, over the limit of %d: %q", i, n, limit, c)
		}
	}
	if err := reassemble(reply, chunks); err != nil {
		t.Errorf("the chunks are not the reply: %v\nchunks: %q", err, chunks)
	}
}

// reassemble checks that chunks, in order, are text cut at some places,
// with whitespace at the cuts possibly dropped.
func reassemble(text string, chunks []string) error {
	rest := text
	for i, c := range chunks {
		c = strings.TrimFunc(c, unicode.IsSpace)
		if c == "" {
			return fmt.Errorf("chunk %d is blank", i)
		}
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if !strings.HasPrefix(rest, c) {
			return fmt.Errorf("chunk %d (%.40q…) is not what follows in the reply (%.40q…)", i, c, rest)
		}
		rest = rest[len(c):]
	}
	if strings.TrimSpace(rest) != "" {
		return fmt.Errorf("the end of the reply is missing: %q", rest)
	}
	return nil
}

// longText is at least n characters of plain prose in English and
// Chinese, in lines of a few sentences: nothing a platform would read as
// markup.
func longText(n int) string {
	sentences := []string{
		"The harbour lights came on one by one as the ferry slowed.",
		"码头的灯一盏一盏亮起来，渡轮慢慢减速靠岸。",
		"Nobody on deck said a word until the ropes were tied",
		"and the gangway rattled down onto the stones.",
		"岸上卖烤红薯的老人把炉子往里挪了挪，给下船的人让出一条路。",
		"Somewhere behind the warehouses a dog barked twice, then gave up.",
	}
	var b strings.Builder
	for i := 0; utf8.RuneCountInString(b.String()) < n; i++ {
		if i > 0 {
			if i%3 == 0 {
				b.WriteString("\n")
			} else {
				b.WriteString(" ")
			}
		}
		b.WriteString(sentences[i%len(sentences)])
	}
	return b.String()
}

// testCapabilities: sending where the adapter cannot is an error, not a
// silent success; a HistoryFetcher reads the history of the chats it can
// and says channel.ErrHistoryUnsupported for the others.
func testCapabilities(t *testing.T, h Harness) {
	e := start(t, h, false)
	subtest(t, h, "Unreachable", func(t *testing.T) {
		peers := append(e.p.Unreachable(), msg.Peer{}, msg.Peer{Kind: "bogus", ID: "1"})
		for _, peer := range peers {
			subtest(t, h, peer.String(), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(e.ctx, 15*time.Second)
				defer cancel()
				id, err := e.p.Adapter().Send(ctx, msg.Outbound{Account: e.p.Account(), Peer: peer, Text: "is anyone there?"})
				if err == nil {
					t.Errorf("send to %q succeeded (message %q); want an error", peer.String(), id)
				}
			})
		}
	})
	subtest(t, h, "History", func(t *testing.T) {
		hf, ok := e.p.Adapter().(channel.HistoryFetcher)
		if !ok {
			t.Log("the adapter is no channel.HistoryFetcher: callers know it reads no history")
			return
		}
		var chats []Chat
		for _, kind := range []msg.PeerKind{msg.Group, msg.Direct} {
			if cs, ok := e.chats(t, kind, 1); ok {
				chats = append(chats, cs...)
			}
		}
		for _, c := range chats {
			p := e.inject(t, Inbound{Chat: c, Text: "a line worth remembering"})
			e.arrived(t, p)
			msgs, err := hf.History(e.ctx, c.Peer, channel.HistoryQuery{Count: 10})
			switch {
			case !c.History && !errors.Is(err, channel.ErrHistoryUnsupported):
				t.Errorf("history of %s, which the adapter cannot read: got %d messages and error %v, want channel.ErrHistoryUnsupported", c.Peer, len(msgs), err)
			case c.History && err != nil:
				t.Errorf("history of %s: %v", c.Peer, err)
			case c.History:
				i := slices.IndexFunc(msgs, func(m msg.Message) bool { return m.ID == p.ID })
				if i < 0 || !strings.Contains(msgs[i].Text, p.Text) {
					t.Errorf("history of %s lacks %s (%q): %d messages", c.Peer, p.ID, p.Text, len(msgs))
				}
			}
		}
	})
}

// testReconnect: after the platform drops the adapter's connection and
// the adapter connects again, a message reaches the sink, once, and the
// reply to it reaches the chat.
func testReconnect(t *testing.T, h Harness) {
	e := start(t, h, false)
	d, ok := e.p.(Dropper)
	if !ok {
		t.Skip("the platform cannot drop the adapter's connection")
	}
	chat := e.some(t, 1)[0]
	before := e.arrived(t, e.inject(t, Inbound{Chat: chat, Text: "before the drop"}))[0]
	before.finish()
	if err := d.Drop(e.ctx); err != nil {
		t.Fatalf("drop: %v", err)
	}
	after := e.arrived(t, e.inject(t, Inbound{Chat: chat, Text: "after the drop"}))[0]
	const reply = "answered after the drop"
	e.deliver(t, after, reply)
	after.finish()
	if texts := e.sentUntil(t, chat, reply); !slices.Equal(texts, []string{reply}) {
		t.Errorf("%s received %q, want the reply once", chat.Peer, texts)
	}
	all, _ := e.s.arrivals()
	if n := len(inChat(all, chat.Peer)); n != 2 {
		t.Errorf("the sink took %d messages in %s, want 2", n, chat.Peer)
	}
}
