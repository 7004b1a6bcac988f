package feishu

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/outbox"
)

var _ outbox.Sender = (*Account)(nil)

// chatQPS is the platform's send limit per chat (and per user).
const chatQPS = 5

// Send delivers out: through the outbox when the account has one, so a
// reply outlives a platform outage or a restart, else at once.
func (a *Account) Send(ctx context.Context, out msg.Outbound) (msg.MessageID, error) {
	if a.opts.Outbox != nil {
		return a.opts.Outbox.Deliver(ctx, ChannelID, out.ID, out)
	}
	var first msg.MessageID
	err := a.SendParts(ctx, out, 0, func(part int, id msg.MessageID, _ bool) {
		if part == 0 {
			first = id
		}
	})
	return first, err
}

// SendParts implements outbox.Sender: the parts of out from part from
// on, the chunks of its text first, then one message per media
// attachment (uploaded when its part is sent, so a resumed delivery
// uploads nothing it already sent). Each part carries a uuid derived
// from the payload's id and the part's index, so a retry of a part the
// platform already took is not posted twice. A reply whose target is
// gone goes to the chat instead. Each sent message is recorded in the
// Sent log, and so is the topic it landed in ("thread:<id>"): a topic the
// bot answered in needs no @.
func (a *Account) SendParts(ctx context.Context, out msg.Outbound, from int, confirmed outbox.Confirmed) error {
	if out.Empty() {
		return nil
	}
	parts := a.compose(out)
	// A medium refused for good (a file too large or gone, a type the
	// platform refuses) is logged and passed over: the parts after it
	// still go out, and the payload then fails for good, naming it.
	var refused []error
	for i := from; i < len(parts); i++ {
		if err := a.limiter(out.Peer).Wait(ctx); err != nil {
			return fmt.Errorf("feishu: send to %s: %w", out.Peer, err)
		}
		var sent sentMessage
		var err error
		if m := parts[i].media; m != nil {
			sent, err = a.sendMedia(ctx, out, *m, partUUID(out.ID, i))
			if err != nil {
				if err = a.classify(out, err); !outbox.IsPermanent(err) {
					return err
				}
				a.log.Warn("a medium of the reply was not sent; the rest goes on", "peer", out.Peer.String(), "err", err)
				refused = append(refused, err)
				confirmed(i, "", i+1 < len(parts))
				continue
			}
		} else if ref := parts[i].card; ref != nil {
			err = a.finishCard(ctx, *ref, parts[i].content)
			sent = sentMessage{MessageID: ref.MessageID, ThreadID: ref.ThreadID}
		} else {
			sent, err = a.sendPart(ctx, out, parts[i], partUUID(out.ID, i))
		}
		if err != nil {
			return a.classify(out, err)
		}
		// The confirmation first: the outbox stores that the part went
		// before the message is recorded as the bot's (see outbox.Confirmed).
		confirmed(i, msg.MessageID(sent.MessageID), i+1 < len(parts))
		a.recordSent(ctx, sent)
	}
	return errors.Join(refused...)
}

// recordSent remembers a sent message and the topic it is in.
func (a *Account) recordSent(ctx context.Context, sent sentMessage) {
	if a.opts.Sent == nil || sent.MessageID == "" {
		return
	}
	ids := []msg.MessageID{msg.MessageID(sent.MessageID)}
	if sent.ThreadID != "" {
		ids = append(ids, threadKey(sent.ThreadID))
	}
	if err := a.opts.Sent.RecordSent(context.WithoutCancel(ctx), ChannelID, a.opts.ID, ids...); err != nil {
		a.log.Warn("Feishu sent message not recorded", "message_id", sent.MessageID, "err", err)
	}
}

// threadKey is how the Sent log remembers a topic the bot answered in.
func threadKey(thread string) msg.MessageID { return msg.MessageID("thread:" + thread) }

// sendPart posts one part; a markdown post or card the platform refuses
// as such is posted again as text, under the same uuid (only one of them
// can land).
func (a *Account) sendPart(ctx context.Context, out msg.Outbound, p part, uuid string) (sentMessage, error) {
	sent, err := a.post(ctx, out, p.msgType, p.content, uuid)
	if err != nil && p.msgType != "text" {
		switch code := codeOf(err); code {
		case codeInvalidParam, codeTooLong, codeCardInvalid, codeCardBuild:
			a.log.Warn("Feishu refused a markdown "+p.msgType+"; sending it as text", "peer", out.Peer.String(), "code", code)
			return a.post(ctx, out, "text", textContent(p.text), uuid)
		}
	}
	return sent, err
}

// post sends content: a reply to out.ReplyTo when set (falling back to
// the chat when the target is gone), else a new message in the chat, or
// to the user of a direct chat.
func (a *Account) post(ctx context.Context, out msg.Outbound, msgType, content, uuid string) (sentMessage, error) {
	if out.ReplyTo != "" {
		sent, err := a.api.reply(ctx, string(out.ReplyTo), msgType, content, uuid)
		switch codeOf(err) {
		case codeRecalled, codeDeleted, codeReplyUnavailable:
			a.log.Info("Feishu reply target is gone; sending to the chat", "reply_to", string(out.ReplyTo), "code", codeOf(err))
		default:
			return sent, err
		}
	}
	idType := "chat_id"
	if out.Peer.Kind == msg.Direct {
		idType = "open_id"
	}
	return a.api.create(ctx, idType, out.Peer.ID, msgType, content, uuid)
}

// classify tells the outbox what a failed send deserves: a throttled send
// waits as long as the platform asked, a refused one is not retried, and
// network failures, server errors and a refused token are retried.
func (a *Account) classify(out msg.Outbound, err error) error {
	ae, ok := errors.AsType[*apiError](err)
	if !ok {
		return err // network, timeout: retried
	}
	switch {
	case ae.throttled():
		wait := max(ae.RetryAfter, time.Second)
		a.log.Warn("Feishu throttled a send; retrying", "peer", out.Peer.String(), "code", ae.Code, "in", wait.String())
		return retryAfter{err, wait}
	case invalidToken(ae.Code), ae.Status >= 500:
		return err
	}
	a.log.Error("Feishu refused a reply", "peer", out.Peer.String(), "code", ae.Code, "msg", ae.Msg)
	return outbox.Permanent(err)
}

// retryAfter is an error that says when a retry makes sense.
type retryAfter struct {
	error
	wait time.Duration
}

func (r retryAfter) Unwrap() error             { return r.error }
func (r retryAfter) RetryAfter() time.Duration { return r.wait }

// partUUID is the idempotency key of part i of the payload id: at most 50
// characters, the same on every retry. Payloads without an id get none.
func partUUID(id string, i int) string {
	if id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(id + "#" + strconv.Itoa(i)))
	return hex.EncodeToString(sum[:20])
}

// maxLimiters bounds the per-chat limiters kept; idle ones are dropped
// past it.
const maxLimiters = 1024

// limiter is the per-chat send limiter.
func (a *Account) limiter(peer msg.Peer) *rate.Limiter {
	a.limitMu.Lock()
	defer a.limitMu.Unlock()
	if a.limits == nil {
		a.limits = map[msg.Peer]*rate.Limiter{}
	}
	l, ok := a.limits[peer]
	if ok {
		return l
	}
	if len(a.limits) >= maxLimiters {
		for p, l := range a.limits {
			// A full limiter has been idle a while: a new one is the same.
			if l.Tokens() >= 1 {
				delete(a.limits, p)
			}
		}
	}
	l = rate.NewLimiter(chatQPS, 1)
	a.limits[peer] = l
	return l
}

// part is one message to post: its msg_type and content JSON, and its
// text for a fallback to a text message; or, for media, only the
// attachment to upload and show (its msg_type is known once uploaded).
type part struct {
	msgType, content, text string
	media                  *msg.Media
	// card, when set, is the live card the part finishes: content is its
	// final markdown.
	card *cardRef
}

// Platform bounds of a message's content (230025 past them).
const (
	maxPostContent = 30 << 10
	maxTextContent = 150 << 10
)

// Bounds of a chunk's text, in bytes, leaving room for the JSON around
// it, its escapes and the at tags of mentions.
const (
	postChunkBytes = 24 << 10
	textChunkBytes = 120 << 10
)

// markdownish finds what the post's md tag renders and a text message
// shows as typed: code fences, emphasis, headings, lists, links, quotes.
var markdownish = regexp.MustCompile("(?m)```|\\*\\*[^*\\n]+\\*\\*|^#{1,6} |^\\s*[-*] |^\\s*\\d+\\. |\\[[^\\]\\n]+\\]\\([^)\\s]+\\)|^> ")

// markdownTable finds a markdown table (a row, then its separator row):
// posts show it as typed, cards render it.
var markdownTable = regexp.MustCompile(`(?m)^[ \t]*\|.*\|[ \t]*\n[ \t]*\|[ \t]*:?-{3,}:?[ \t]*(\|[ \t]*:?-{3,}:?[ \t]*)*\|[ \t]*$`)

// compose cuts out's text into parts under the chunk limit and the
// platform's size limits, and picks their form by content: a card of
// markdown when the text has a table, posts of markdown paragraphs when
// it uses other markdown, plain text otherwise. Mentions of the people
// out may mention become real ones. A part per media attachment follows
// the text's.
func (a *Account) compose(out msg.Outbound) []part {
	var parts []part
	if ref, ok := liveCard(out); ok {
		parts = a.composeCard(out, ref)
	} else {
		parts = a.composeText(out)
	}
	for i := range out.Media {
		parts = append(parts, part{media: &out.Media[i]})
	}
	return parts
}

// composeText is the parts of out's text; see compose.
func (a *Account) composeText(out msg.Outbound) []part {
	text := strings.TrimSpace(out.Text)
	msgType, bytes, lim := "text", textChunkBytes, maxTextContent
	switch {
	case markdownTable.MatchString(text):
		msgType, bytes, lim = "interactive", postChunkBytes, maxPostContent
	case markdownish.MatchString(text):
		msgType, bytes, lim = "post", postChunkBytes, maxPostContent
	}
	mention := mentioner(out, textAt)
	cardMention := mentioner(out, cardAt)
	var parts []part
	var add func(chunk string, limit, bytes int)
	add = func(chunk string, limit, bytes int) {
		t := mention(chunk)
		p := part{msgType: msgType, text: t}
		switch msgType {
		case "text":
			p.content = textContent(t)
		case "post":
			p.content = postContent(t)
		default:
			p.content = cardContent(cardMention(chunk))
		}
		if len(p.content) > lim && utf8.RuneCountInString(chunk) > 1 {
			// Escapes made it too long: cut it again, smaller.
			for _, c := range chunkText(chunk, max(limit/2, 1), max(bytes/2, 4)) {
				add(c, max(limit/2, 1), max(bytes/2, 4))
			}
			return
		}
		parts = append(parts, p)
	}
	for _, chunk := range chunkText(text, a.opts.ChunkLimit, bytes) {
		add(chunk, a.opts.ChunkLimit, bytes)
	}
	return parts
}

// composeCard is the parts of the text of out, a reply written live into
// the card ref: the first chunk is the card's final text, the rest (a
// reply longer than a card takes) follow as cards of their own.
func (a *Account) composeCard(out msg.Outbound, ref cardRef) []part {
	mention := mentioner(out, textAt)
	cardMention := mentioner(out, cardAt)
	var parts []part
	for i, chunk := range chunkText(strings.TrimSpace(out.Text), a.opts.ChunkLimit, postChunkBytes) {
		p := part{msgType: "interactive", text: mention(chunk)}
		if i == 0 {
			p.card, p.content = &ref, cardMention(chunk)
		} else {
			p.content = cardContent(cardMention(chunk))
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		// Nothing to show (media only): the card keeps what it streamed.
		parts = append(parts, part{msgType: "interactive", card: &ref, content: ""})
	}
	return parts
}

// textAt is a mention in a text or a post; cardAt one in a card's
// markdown.
func textAt(id, name string) string { return `<at user_id="` + id + `">` + escapeAt(name) + `</at>` }
func cardAt(id, _ string) string    { return `<at id=` + id + `></at>` }

// mentioner rewrites "@Name" of the people out lists as mentionable into
// the platform's at tag, the longest name first (so "@张三丰" is not read
// as "@张三"). A name two of them share mentions neither, and nothing is
// rewritten in an error notice, a payload that must not ping anyone, or
// one that answers no conversation.
func mentioner(out msg.Outbound, at func(id, name string) string) func(string) string {
	none := func(s string) string { return s }
	if out.Mentionable == nil || out.NoMentions || out.IsError {
		return none
	}
	ids := map[string]string{}
	for _, s := range out.Mentionable {
		name := strings.TrimSpace(s.Name)
		if name == "" || !strings.HasPrefix(string(s.ID), "ou_") {
			continue
		}
		if id, seen := ids[name]; seen && id != string(s.ID) {
			ids[name] = "" // ambiguous
			continue
		}
		ids[name] = string(s.ID)
	}
	names := make([]string, 0, len(ids))
	for name, id := range ids {
		if id != "" {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return none
	}
	sort.Slice(names, func(i, j int) bool {
		if len(names[i]) != len(names[j]) {
			return len(names[i]) > len(names[j])
		}
		return names[i] < names[j]
	})
	pairs := make([]string, 0, 2*len(names))
	for _, name := range names {
		pairs = append(pairs, "@"+name, at(ids[name], name))
	}
	return strings.NewReplacer(pairs...).Replace
}

func escapeAt(s string) string {
	return strings.NewReplacer("<", "＜", ">", "＞").Replace(s)
}

// marshal encodes v as JSON without escaping <, > and & (the at tags
// stay readable and short).
func marshal(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // maps and strings always encode
	return strings.TrimSuffix(b.String(), "\n")
}

func textContent(s string) string {
	return marshal(map[string]string{"text": s})
}

// cardContent is a JSON 2.0 card of one markdown element, updatable
// later (update_multi).
func cardContent(s string) string {
	return marshal(map[string]any{
		"schema": "2.0", "config": map[string]any{"update_multi": true},
		"body": map[string]any{"elements": []any{map[string]string{"tag": "markdown", "content": s}}},
	})
}

// postContent is a zh_cn post of md elements, one per paragraph: Lark
// cuts an md element at its first blank line.
func postContent(s string) string {
	type el struct {
		Tag  string `json:"tag"`
		Text string `json:"text"`
	}
	rows := [][]el{}
	for _, p := range paragraphs(s) {
		rows = append(rows, []el{{Tag: "md", Text: p}})
	}
	return marshal(map[string]any{"zh_cn": map[string]any{"title": "", "content": rows}})
}

// isFence reports a line that opens or closes a fenced code block.
func isFence(line string) bool { return strings.HasPrefix(strings.TrimSpace(line), "```") }

// paragraphs splits s on blank lines, keeping a fenced code block whole.
func paragraphs(s string) []string {
	var out []string
	var cur []string
	fence := false
	flush := func() {
		if p := strings.TrimSpace(strings.Join(cur, "\n")); p != "" {
			out = append(out, p)
		}
		cur = cur[:0]
	}
	for _, line := range strings.Split(s, "\n") {
		if isFence(line) {
			fence = !fence
		}
		if !fence && strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return out
}

// fenceSlack is the room a chunk keeps for closing a code fence cut in
// two and opening it again in the next chunk.
const fenceSlack = 32

// chunkText cuts s into pieces of at most limit characters and maxBytes
// bytes, at a blank line, else a line end, else a space, else anywhere.
// A code fence cut in two is closed at the end of its first piece and
// opened again, with its language, at the start of the next.
func chunkText(s string, limit, maxBytes int) []string {
	repair := limit > 4*fenceSlack && maxBytes > 4*fenceSlack
	slack := 0
	if repair {
		slack = fenceSlack
	}
	var out []string
	reopen := "" // the fence line the next piece starts inside of
	for {
		s = strings.TrimLeft(s, " \n")
		if s == "" {
			break
		}
		// The rest may fit whole (a character is at most 4 bytes, and an
		// invalid byte counts as one): checked only when it can, so
		// chunking stays linear.
		if len(s) <= min(maxBytes, 4*limit) {
			if whole, _ := sealFence(strings.TrimSpace(s), reopen, repair); utf8.RuneCountInString(whole) <= limit && len(whole) <= maxBytes {
				out = append(out, whole)
				break
			}
		}
		head, rest := cutPiece(s, limit-slack, maxBytes-slack)
		s = rest
		piece := strings.TrimSpace(head)
		if piece == "" {
			continue
		}
		piece, reopen = sealFence(piece, reopen, repair)
		out = append(out, piece)
	}
	return out
}

// sealFence makes piece a whole markdown text when repair is set: opened
// with reopen (the fence a previous piece left open) and its last fence,
// when left open, closed. It returns the fence the next piece starts
// inside of.
func sealFence(piece, reopen string, repair bool) (string, string) {
	if !repair {
		return piece, ""
	}
	inside, open := reopen != "", reopen
	for _, line := range strings.Split(piece, "\n") {
		if isFence(line) {
			if inside {
				inside = false
			} else {
				inside, open = true, fenceOpening(line)
			}
		}
	}
	if reopen != "" {
		piece = reopen + "\n" + piece
	}
	if inside {
		return piece + "\n```", open
	}
	return piece, ""
}

// fenceOpening is the line that opens a fence again: ``` and the
// language of line, at most 20 characters of it.
func fenceOpening(line string) string {
	lang := strings.TrimPrefix(strings.TrimSpace(line), "```")
	if f := strings.Fields(lang); len(f) > 0 {
		lang = f[0]
	} else {
		lang = ""
	}
	if len(lang) > 20 || strings.Contains(lang, "`") {
		lang = ""
	}
	return "```" + lang
}

// cutPiece returns the head of s within limit characters and maxBytes
// bytes (at least one character), cut at a blank line, else a line end,
// else a space when one is in its second half, and the rest.
func cutPiece(s string, limit, maxBytes int) (head, rest string) {
	limit, maxBytes = max(limit, 1), max(maxBytes, utf8.UTFMax)
	if len(s) <= maxBytes && utf8.RuneCountInString(s) <= limit {
		return s, ""
	}
	cut := min(byteIndexOfRune(s, limit), maxBytes, len(s))
	for cut > 0 && cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if cut == 0 {
		_, n := utf8.DecodeRuneInString(s)
		cut = n
	}
	at := -1
	for _, sep := range []string{"\n\n", "\n", " "} {
		if i := strings.LastIndex(s[:cut], sep); i > cut/2 {
			at = i
			break
		}
	}
	if at < 0 {
		at = cut
	}
	return s[:at], s[at:]
}

func byteIndexOfRune(s string, n int) int {
	i := 0
	for j := range s {
		if i == n {
			return j
		}
		i++
	}
	return len(s)
}

// ReplierFor is the replier of an inbound message: a reply to it, which
// may mention its sender, with a "Typing" reaction while the agent works,
// written live into a card when the account streams replies.
func (a *Account) ReplierFor(m msg.Message) channel.Replier { return &replier{a: a, trigger: m} }

type replier struct {
	a       *Account
	trigger msg.Message

	mu sync.Mutex
	// live is the card the reply is being written into, from its first
	// visible text until a delivery takes it or the turn ends.
	live  *cardStream
	ended bool
}

// ShowsPartial implements channel.PartialViewer: a reply is written live
// into a card unless the account sends replies whole.
func (r *replier) ShowsPartial() bool { return r.a.streamsCards() }

// Partial implements channel.Replier: the card is created with the first
// visible text and then kept up to date. The text is what the engine shows
// live: the silent token and reasoning never reach it.
func (r *replier) Partial(delta string) {
	if delta == "" || !r.a.streamsCards() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	if r.live == nil {
		base := msg.Outbound{Account: r.a.opts.ID, Peer: r.trigger.Peer, ReplyTo: r.replyTo()}
		r.live = r.a.newCardStream(r.trigger, base)
	}
	r.live.push(delta)
}

// replyTo is the message a reply quotes: the trigger, unless it is one
// pincer made up (its id has a colon).
func (r *replier) replyTo() msg.MessageID {
	if strings.Contains(string(r.trigger.ID), ":") {
		return ""
	}
	return r.trigger.ID
}

// Deliver implements channel.Replier. A reply written live into a card
// finishes that card: the payload names it, so the outbox's delivery,
// resumed after a restart too, writes the final text into it and closes
// its streaming rather than posting another message.
func (r *replier) Deliver(ctx context.Context, out msg.Outbound) (msg.MessageID, error) {
	if out.ReplyTo == "" {
		out.ReplyTo = r.replyTo()
	}
	if out.Mentionable == nil {
		out.Mentionable = []msg.Sender{r.trigger.Sender}
	}
	if !out.IsReasoning {
		r.mu.Lock()
		live := r.live
		r.live = nil
		r.mu.Unlock()
		if live != nil {
			if ref, ok := live.stop(true); ok {
				out = withCard(out, ref)
			}
		}
	}
	return r.a.Send(ctx, out)
}

// EndLive implements channel.LiveEnder: a card no delivery took (the turn
// failed in a group, was stopped, or its reply was dropped) would show
// text that is not the answer, so its message is recalled.
func (r *replier) EndLive(ctx context.Context) {
	r.mu.Lock()
	live := r.live
	r.live, r.ended = nil, true
	r.mu.Unlock()
	if live == nil {
		return
	}
	ref, ok := live.stop(false)
	if !ok {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.a.api.recall(rctx, ref.MessageID); err != nil {
		r.a.log.Warn("Feishu card of a reply that was not delivered not recalled", "message_id", ref.MessageID, "err", err)
		return
	}
	r.a.log.Info("Feishu card of a reply that was not delivered recalled", "message_id", ref.MessageID)
}

// Typing implements channel.Typer with a reaction on the message being
// answered: added once, removed when the reply is done.
func (r *replier) Typing(ctx context.Context, on bool) error {
	if !r.a.opts.TypingReaction || r.trigger.ID == "" || strings.Contains(string(r.trigger.ID), ":") {
		return nil
	}
	return r.a.setTyping(ctx, string(r.trigger.ID), on)
}

// typingEmoji is the reaction that says the bot is working on a message.
const typingEmoji = "Typing"

func (a *Account) setTyping(ctx context.Context, id string, on bool) error {
	if on {
		if _, ok := a.typing.Load(id); ok {
			return nil
		}
		rid, err := a.api.addReaction(ctx, id, typingEmoji)
		if err != nil {
			return fmt.Errorf("typing reaction: %w", err)
		}
		if _, loaded := a.typing.LoadOrStore(id, rid); loaded {
			return a.api.deleteReaction(context.WithoutCancel(ctx), id, rid)
		}
		return nil
	}
	v, ok := a.typing.LoadAndDelete(id)
	if !ok {
		return nil
	}
	// Removed even when the turn's context has ended: a stuck "Typing"
	// is worse than a late removal.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := a.api.deleteReaction(dctx, id, v.(string)); err != nil {
		return fmt.Errorf("typing reaction: %w", err)
	}
	return nil
}

// limits is guarded by limitMu; declared here with the code that uses it.
type sendLimits struct {
	limitMu sync.Mutex
	limits  map[msg.Peer]*rate.Limiter
}
