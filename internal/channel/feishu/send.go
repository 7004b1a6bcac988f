package feishu

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
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
	err := a.SendParts(ctx, out, 0, func(part int, id msg.MessageID) {
		if part == 0 {
			first = id
		}
	})
	return first, err
}

// SendParts implements outbox.Sender: the chunks of out from part from
// on. Each part carries a uuid derived from the payload's id and the
// part's index, so a retry of a part the platform already took is not
// posted twice. A reply whose target is gone goes to the chat instead.
func (a *Account) SendParts(ctx context.Context, out msg.Outbound, from int, confirmed func(part int, id msg.MessageID)) error {
	if out.Empty() {
		return nil
	}
	parts := a.compose(out)
	for i := from; i < len(parts); i++ {
		if err := a.limiter(out.Peer).Wait(ctx); err != nil {
			return err
		}
		id, err := a.sendPart(ctx, out, parts[i], partUUID(out.ID, i))
		if err != nil {
			return a.classify(out, err)
		}
		if a.opts.Sent != nil && id != "" {
			if err := a.opts.Sent.RecordSent(context.WithoutCancel(ctx), ChannelID, a.opts.ID, msg.MessageID(id)); err != nil {
				a.log.Warn("record sent message", "err", err)
			}
		}
		confirmed(i, msg.MessageID(id))
	}
	return nil
}

// sendPart posts one part: a reply to out.ReplyTo when set (falling back to
// the chat when the target is gone), else a new message in the chat.
func (a *Account) sendPart(ctx context.Context, out msg.Outbound, p part, uuid string) (string, error) {
	if out.ReplyTo != "" {
		id, err := a.api.reply(ctx, string(out.ReplyTo), p.msgType, p.content, uuid)
		switch codeOf(err) {
		case codeRecalled, codeDeleted, codeReplyUnavailable:
			a.log.Info("Feishu reply target is gone; sending to the chat", "reply_to", string(out.ReplyTo))
		default:
			return id, err
		}
	}
	idType := "chat_id"
	if out.Peer.Kind == msg.Direct {
		idType = "open_id"
	}
	return a.api.create(ctx, idType, out.Peer.ID, p.msgType, p.content, uuid)
}

// classify tells the outbox what a failed send deserves: a throttled send
// waits as long as the platform asked, a refused one is not retried.
func (a *Account) classify(out msg.Outbound, err error) error {
	ae, ok := errors.AsType[*apiError](err)
	if !ok {
		return err // network, timeout: retried
	}
	switch ae.Code {
	case codeRateLimited, codeIMRateLimited:
		wait := max(ae.RetryAfter, time.Second)
		a.log.Warn("Feishu throttled a send; retrying", "peer", out.Peer.String(), "code", ae.Code, "in", wait.String())
		return retryAfter{err, wait}
	case codeTenantToken, codeAppToken, codeAccessToken:
		return err
	}
	if ae.Code >= 500 && ae.Code < 600 {
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

// limiter is the per-chat send limiter.
func (a *Account) limiter(peer msg.Peer) *rate.Limiter {
	a.limitMu.Lock()
	defer a.limitMu.Unlock()
	if a.limits == nil {
		a.limits = map[msg.Peer]*rate.Limiter{}
	}
	l, ok := a.limits[peer]
	if !ok {
		l = rate.NewLimiter(chatQPS, 1)
		a.limits[peer] = l
	}
	return l
}

// part is one message to post: its msg_type and content JSON.
type part struct {
	msgType, content string
}

// markdownish finds what the post's md tag renders and a text message
// shows as typed: code fences, emphasis, headings, lists, links, quotes.
var markdownish = regexp.MustCompile("(?m)```|\\*\\*[^*\\n]+\\*\\*|^#{1,6} |^\\s*[-*] |^\\s*\\d+\\. |\\[[^\\]\\n]+\\]\\([^)\\s]+\\)|^> ")

// compose cuts out's text into parts under the chunk limit and picks each
// part's form: a post of markdown paragraphs when the text uses markdown,
// plain text otherwise. Mentions of the people out may mention become
// real ones.
func (a *Account) compose(out msg.Outbound) []part {
	text := strings.TrimSpace(out.Text)
	for _, m := range out.Media {
		// Media upload is not supported yet: name what could not be sent.
		text = strings.TrimSpace(text + "\n" + "[" + string(m.Kind) + ": " + firstNonEmpty(m.Name, m.URL) + "]")
	}
	md := markdownish.MatchString(text)
	var parts []part
	for _, chunk := range chunkText(text, a.opts.ChunkLimit) {
		chunk = a.mentions(out, chunk)
		if md {
			parts = append(parts, part{"post", postContent(chunk)})
		} else {
			parts = append(parts, part{"text", textContent(chunk)})
		}
	}
	return parts
}

// mentions rewrites "@Name" of the people out lists as mentionable into
// the platform's at tag.
func (a *Account) mentions(out msg.Outbound, text string) string {
	if out.Mentionable == nil || out.NoMentions || out.IsError {
		return text
	}
	seen := map[string]bool{}
	for _, s := range out.Mentionable {
		if s.Name == "" || seen[s.Name] || !strings.HasPrefix(string(s.ID), "ou_") {
			continue
		}
		seen[s.Name] = true
		text = strings.ReplaceAll(text, "@"+s.Name, `<at user_id="`+string(s.ID)+`">`+escapeAt(s.Name)+`</at>`)
	}
	return text
}

func escapeAt(s string) string {
	return strings.NewReplacer("<", "＜", ">", "＞").Replace(s)
}

func textContent(s string) string {
	b, _ := json.Marshal(map[string]string{"text": s})
	return string(b)
}

// postContent is a zh_cn post of md elements, one per paragraph: Lark
// cuts an md element at its first blank line.
func postContent(s string) string {
	type el struct {
		Tag  string `json:"tag"`
		Text string `json:"text"`
	}
	var rows [][]el
	for _, p := range paragraphs(s) {
		rows = append(rows, []el{{Tag: "md", Text: p}})
	}
	b, _ := json.Marshal(map[string]any{"zh_cn": map[string]any{"title": "", "content": rows}})
	return string(b)
}

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
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
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

// chunkText cuts s into pieces of at most limit characters, at a blank
// line, else a line end, else a space, else anywhere.
func chunkText(s string, limit int) []string {
	var out []string
	for utf8.RuneCountInString(s) > limit {
		cut := byteIndexOfRune(s, limit)
		head := s[:cut]
		at := -1
		for _, sep := range []string{"\n\n", "\n", " "} {
			if i := strings.LastIndex(head, sep); i > cut/2 {
				at = i
				break
			}
		}
		if at < 0 {
			at = cut
		}
		if p := strings.TrimSpace(s[:at]); p != "" {
			out = append(out, p)
		}
		s = strings.TrimLeft(s[at:], " \n")
	}
	if p := strings.TrimSpace(s); p != "" {
		out = append(out, p)
	}
	return out
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
// may mention its sender, with a "Typing" reaction while the agent works.
func (a *Account) ReplierFor(m msg.Message) channel.Replier { return &replier{a: a, trigger: m} }

type replier struct {
	a       *Account
	trigger msg.Message
}

func (r *replier) Partial(string) {}

func (r *replier) Deliver(ctx context.Context, out msg.Outbound) (msg.MessageID, error) {
	if out.ReplyTo == "" && !strings.Contains(string(r.trigger.ID), ":") {
		out.ReplyTo = r.trigger.ID
	}
	if out.Mentionable == nil {
		out.Mentionable = []msg.Sender{r.trigger.Sender}
	}
	return r.a.Send(ctx, out)
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
