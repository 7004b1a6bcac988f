// Package quote resolves what a realtime batch refers to: the message it
// replies to and the merged forwards it carries (or that the quoted
// message carries), expanded recursively within budgets of depth, nodes and
// characters shared across the whole resolution, and renders them as the
// block the agent reads before the user's text. It works on any channel
// through the channel's fetch capability.
package quote

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/prompt"
)

// Texts the agent reads.
const (
	textFailed    = "[引用消息获取失败]"
	textUnknown   = "未知"
	closeBracket  = "]"
	closeTruncate = "（已截断）]"
)

// Fetcher gets what a message refers to; channel adapters provide it.
type Fetcher = channel.Fetcher

// LimitedForwardFetcher is a Fetcher whose forward fetch may take more
// than one platform call (OneBot's get_forward_msg is asked again with
// another parameter when it fails): it asks take before each call and
// makes none once take says no. A resolution gives its forward fetches at
// most 2 x MaxNodes calls in all, counted this way; a plain Fetcher's
// fetch counts as one.
type LimitedForwardFetcher interface {
	Fetcher
	FetchForwardLimited(ctx context.Context, id msg.ForwardID, take func() bool) ([]msg.Message, error)
}

// Settings bound a resolution.
type Settings struct {
	Enabled        bool
	ResolveForward bool
	// MaxDepth: forwards nested deeper than this stay placeholders; 0
	// expands only the top level.
	MaxDepth int
	// MaxNodes is how many forward nodes may be rendered, failures
	// included, across the whole resolution. It bounds the fetches too:
	// no more are started than the nodes left can render (each fetched
	// forward renders at least one), and at most 2 x MaxNodes platform
	// calls are made (see LimitedForwardFetcher).
	MaxNodes int
	// MaxChars bounds the quote text and the node texts together.
	MaxChars int
	// Timeout bounds each fetch.
	Timeout time.Duration
}

// Resolver resolves quotes with one fetcher.
type Resolver struct {
	fetch    Fetcher
	settings Settings
	loc      *time.Location
	// logged, when set, looks a quoted message up before it is fetched
	// (see LogFirst).
	logged LogLookup
	// parallel bounds concurrent sibling forward fetches.
	parallel int
}

// New returns a resolver; times render in loc.
func New(f Fetcher, s Settings, loc *time.Location) *Resolver {
	if loc == nil {
		loc = time.Local
	}
	return &Resolver{fetch: f, settings: s, loc: loc, parallel: 4}
}

// LogLookup finds the message id that src quotes in what pincer logged of
// src's chat, as it may answer the quote without asking the platform; false
// when it may not (not logged, or logged as the platform's placeholder).
type LogLookup func(ctx context.Context, src msg.Message, id msg.MessageID) (msg.Message, bool)

// LogFirst makes r read a quoted message from the log with f before it
// asks the platform, and returns r.
func (r *Resolver) LogFirst(f LogLookup) *Resolver {
	r.logged = f
	return r
}

// Source returns the message of a batch whose quote and forwards are
// resolved: the last one that replies to a message or carries a forward.
func Source(b msg.Batch) (msg.Message, bool) {
	for i := len(b.Messages) - 1; i >= 0; i-- {
		if m := b.Messages[i]; m.ReplyTo != "" || len(m.ForwardIDs) > 0 {
			return m, true
		}
	}
	return msg.Message{}, false
}

// Result is a resolution before rendering.
type Result struct {
	// Quoted is the replied-to message: Sender and Time are zero when
	// unknown; Text is the failure placeholder when it could not be
	// fetched. Present is false when the source replies to nothing.
	Quoted  msg.Message
	Present bool
	Nodes   []Node
	// Truncated: a budget cut something, so the agent sees a part.
	Truncated bool
	// Calls counts the platform look-ups made: the quoted message's and
	// the forwards' fetches.
	Calls int
	// QuoteFailed: the quoted message could not be fetched.
	QuoteFailed bool
}

// Node is one rendered forward message.
type Node struct {
	Depth  int
	Sender msg.Sender
	Time   time.Time
	Text   string
	// Media are the node's pictures, voice notes and files.
	Media []msg.Attachment
}

// Media returns the attachments a resolution showed: the quoted message's,
// then those of the forward nodes that were rendered (the budgets apply to
// them as to the text).
func (res Result) Media() []msg.Attachment {
	var out []msg.Attachment
	if res.Present && !res.QuoteFailed {
		out = res.Quoted.Attachments(msg.AttachedQuote)
	}
	for _, n := range res.Nodes {
		out = append(out, n.Media...)
	}
	return out
}

// Block resolves a realtime batch and renders it; "" when there is
// nothing to show or resolution is off. Only realtime batches resolve.
func (r *Resolver) Block(ctx context.Context, b msg.Batch) string {
	block, _ := r.BlockTraced(ctx, b)
	return block
}

// BlockTraced is Block that also says, for the decision trace, what the
// resolution did and which budgets it spent; both are "" when there was
// nothing to resolve.
func (r *Resolver) BlockTraced(ctx context.Context, b msg.Batch) (block, trace string) {
	block, trace, _ = r.Resolved(ctx, b)
	return block, trace
}

// Resolved is BlockTraced that also returns the media the block shows
// (Result.Media), for the turn to read.
func (r *Resolver) Resolved(ctx context.Context, b msg.Batch) (block, trace string, media []msg.Attachment) {
	if !r.settings.Enabled || b.Kind != msg.Realtime {
		return "", "", nil
	}
	src, ok := Source(b)
	if !ok {
		return "", "", nil
	}
	res := r.Resolve(ctx, src)
	trace = res.Summary(r.settings)
	if !res.Present && len(res.Nodes) == 0 {
		return "", trace, nil
	}
	return Render(res, r.loc), trace, res.Media()
}

// Summary says what a resolution did and spent against the budgets of s.
func (res Result) Summary(s Settings) string {
	var parts []string
	switch {
	case res.QuoteFailed:
		parts = append(parts, "the quoted message could not be fetched (shown as a placeholder)")
	case res.Present:
		who := res.Quoted.Sender.Name
		if who == "" {
			who = string(res.Quoted.Sender.ID)
		}
		if who == "" {
			who = "an unknown sender"
		}
		parts = append(parts, "quoted message of "+who+" resolved")
	}
	if len(res.Nodes) > 0 || res.Calls > 0 && !res.Present {
		parts = append(parts, fmt.Sprintf("forwards: %d of at most %d messages, nested up to depth %d", len(res.Nodes), s.MaxNodes, s.MaxDepth))
	}
	chars := utf8.RuneCountInString(res.Quoted.Text)
	for _, n := range res.Nodes {
		chars += utf8.RuneCountInString(n.Text)
	}
	parts = append(parts, fmt.Sprintf("%d platform call(s) of at most %d; %d of %d characters", res.Calls, maxCalls(s.MaxNodes)+1, chars, s.MaxChars))
	if res.Truncated {
		parts = append(parts, "truncated: a budget cut it, the agent sees a part")
	}
	return strings.Join(parts, "; ")
}

// Resolve runs the two steps for src: the quoted message, then the
// forwards (src's own, then the quoted message's), with the budgets
// applied.
func (r *Resolver) Resolve(ctx context.Context, src msg.Message) Result {
	var res Result
	forwards := append([]msg.ForwardID(nil), src.ForwardIDs...)
	inline := inlineForwards(src)
	if src.ReplyTo != "" {
		res.Present = true
		q, logged := msg.Message{}, false
		if r.logged != nil {
			q, logged = r.logged(ctx, src, src.ReplyTo)
		}
		var err error
		if !logged {
			q, err = r.fetchMessage(ctx, src.ReplyTo)
			res.Calls++
		}
		if err != nil {
			res.Quoted = msg.Message{Text: textFailed}
			res.QuoteFailed = true
		} else {
			res.Quoted = q
			forwards = append(forwards, q.ForwardIDs...)
			for id, c := range inlineForwards(q) {
				inline[id] = c
			}
		}
	}
	if r.settings.ResolveForward && len(forwards) > 0 {
		st := newState(r)
		ctx, cancel := context.WithCancel(ctx)
		// Fetches started ahead that the budgets left unused are called
		// off, and none outlives the resolution.
		defer st.wait()
		defer cancel()
		st.prefetch(ctx, forwards, inline, st.remaining)
		for _, id := range forwards {
			res.Nodes = append(res.Nodes, st.expand(ctx, id, inline[id], 0)...)
		}
		res.Truncated = st.truncated
		cancel()  // the fetches left over are called off, and
		st.wait() // their calls count too
		res.Calls += maxCalls(r.settings.MaxNodes) - int(st.calls.Load())
	}
	applyChars(&res, r.settings.MaxChars)
	return res
}

func (r *Resolver) fetchMessage(ctx context.Context, id msg.MessageID) (msg.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, r.settings.Timeout)
	defer cancel()
	return r.fetch.FetchMessage(ctx, id)
}

// inlineForwards maps the forward ids of m to content the platform sent
// inline.
func inlineForwards(m msg.Message) map[msg.ForwardID][]msg.Message {
	out := map[msg.ForwardID][]msg.Message{}
	for _, s := range m.Segments {
		if s.Kind == msg.SegForward && s.ID != "" && s.Forward != nil {
			out[msg.ForwardID(s.ID)] = s.Forward
		}
	}
	return out
}

// applyChars spends the character budget: the quote text first, then the
// nodes in order; the node that does not fit is cut, later ones dropped.
func applyChars(res *Result, maxChars int) {
	budget := maxChars
	if n := utf8.RuneCountInString(res.Quoted.Text); n > budget {
		res.Quoted.Text = cut(res.Quoted.Text, budget)
		res.Truncated = true
		budget = 0
	} else {
		budget -= n
	}
	kept := res.Nodes[:0]
	for _, node := range res.Nodes {
		if budget <= 0 {
			res.Truncated = true
			continue
		}
		if n := utf8.RuneCountInString(node.Text); n > budget {
			node.Text = cut(node.Text, budget)
			res.Truncated = true
			budget = 0
		} else {
			budget -= n
		}
		kept = append(kept, node)
	}
	res.Nodes = kept
}

func cut(s string, n int) string {
	i := 0
	for range n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// Render formats a resolution: the quote line, one line per node indented
// by (depth+1)*2 spaces, and the closing bracket, marked when truncated.
// The texts of the quoted message and of the nodes are written on their
// line (prompt.OneLine): a text with line breaks typed to look like
// another node, the closing bracket or a line after the block stays inside
// its own line.
func Render(res Result, loc *time.Location) string {
	var b []byte
	q := res.Quoted
	if q.Sender.ID != "" && !q.Time.IsZero() {
		b = fmt.Appendf(b, "[引用 %s 于 %s 的消息：%s", speaker(q.Sender), q.Time.In(loc).Format("15:04:05"), prompt.OneLine(q.Text))
	} else {
		b = fmt.Appendf(b, "[引用消息：%s", prompt.OneLine(q.Text))
	}
	for _, n := range res.Nodes {
		b = append(b, '\n')
		for range (n.Depth + 1) * 2 {
			b = append(b, ' ')
		}
		b = append(b, "- "...)
		b = append(b, speaker(n.Sender)...)
		if !n.Time.IsZero() {
			b = append(b, ' ')
			b = n.Time.In(loc).AppendFormat(b, "15:04:05")
		}
		b = append(b, "："...)
		b = append(b, prompt.OneLine(n.Text)...)
	}
	b = append(b, '\n')
	if res.Truncated {
		b = append(b, closeTruncate...)
	} else {
		b = append(b, closeBracket...)
	}
	return string(b)
}
