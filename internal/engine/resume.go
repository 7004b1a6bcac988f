package engine

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/reply"
	"github.com/pincerbot/pincer/internal/store"
)

// Resume answers the turns a previous run admitted and did not finish (it
// crashed, was killed, or shutdown cut them before anything went out).
// replier rebuilds a turn's reply path from its Delivery spec; false drops
// the turn. Resume starts the turns and returns how many; they run like
// any other and Close waits for them.
//
// What the turn's reply had stored in the outbox before the restart is
// delivered by the outbox, each payload once; Resume sends only the rest,
// once:
//
//   - A turn whose reply the transcript holds (the model had finished) is
//     not asked again: what of that reply is not among its stored payloads
//     is delivered, numbered after them (usually nothing, or the last
//     block).
//   - A turn whose reply was cut in the middle (block streaming: some
//     blocks stored, the model still writing) is run once more to finish
//     it. The model is shown the stored part as its own reply so far,
//     followed by a note that it was cut off there, that the user has it,
//     and that it is to go on from there without repeating it. A note
//     rather than a trailing assistant message to continue: Anthropic
//     continues one, OpenAI-compatible servers generally answer it as a
//     new turn, and one chain may hold both. The run's payloads are
//     numbered after the stored ones, so none of theirs is taken for one
//     already sent; a run that starts by repeating blocks the user has
//     seen (whitespace aside) has those blocks dropped, and the transcript
//     keeps the reply as the user got it: the stored part and the rest, as
//     one assistant turn.
//   - A turn without stored payloads is run again as it was.
//
// The messages one reply answered together (a batch) are resumed as one
// turn, through the newest of them, which their reply was for. A turn is
// run again once: one that was resumed before and still did not finish is
// given up, with an error in the log.
func (e *Engine) Resume(ctx context.Context, replier func(MsgContext) (channel.Replier, bool)) (int, error) {
	pending, err := e.opts.Store.PendingTurns(ctx)
	if err != nil {
		return 0, fmt.Errorf("resume turns: %w", err)
	}
	var sessions []string
	bySession := map[string][]*pendingTurn{}
	for _, p := range pending {
		log := e.log.With("turn", p.Key)
		mc, err := decodeTurn(p.Turn)
		if err != nil {
			log.Error("turn given up: its journal record cannot be read", "err", err)
			e.drop(ctx, log, p.Key, "turn given up")
			continue
		}
		mc.Key, mc.Resumed, mc.SessionKey = p.Key, true, e.SessionKey(mc.Message)
		log = log.With("channel", string(mc.Message.Channel), "peer", mc.Message.Peer.String(), "msg_id", string(mc.Message.ID))
		if bySession[mc.SessionKey] == nil {
			sessions = append(sessions, mc.SessionKey)
		}
		bySession[mc.SessionKey] = append(bySession[mc.SessionKey], &pendingTurn{PendingTurn: p, mc: mc, log: log})
	}
	started := 0
	for _, key := range sessions {
		n, err := e.resumeSession(ctx, key, bySession[key], replier)
		started += n
		if err != nil {
			return started, err
		}
	}
	return started, nil
}

// pendingTurn is a journaled turn being resumed.
type pendingTurn struct {
	store.PendingTurn
	mc  MsgContext
	log *slog.Logger
}

// resumeSession resumes the pending turns of one session, oldest first.
func (e *Engine) resumeSession(ctx context.Context, key string, turns []*pendingTurn, replier func(MsgContext) (channel.Replier, bool)) (int, error) {
	tr, err := e.opts.Store.Transcript(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("resume turns of %s: %w", key, err)
	}
	sess, err := e.opts.Store.Session(ctx, key)
	if err != nil {
		sess = store.Session{Key: key} // a session never opened: no options
	}
	vars := reply.PrefixVars{ThinkingLevel: sess.Options[optThink], Identity: e.opts.Identity}
	if models := e.chain(sess); len(models) > 0 {
		vars.Provider, vars.Model = models[0].Provider, models[0].Model
	}
	end := tailOf(tr)
	// The unanswered messages at the transcript's end were one batch: the
	// newest of them is resumed for all.
	newestOpen, newestAt := -1, -1
	for i, p := range turns {
		if at := end.find(tr, end.open, p.mc.BodyForAgent); at >= newestAt && at >= 0 {
			newestOpen, newestAt = i, at
		}
	}
	started := 0
	for i, p := range turns {
		stored, err := e.opts.Store.OutboxEntries(ctx, p.Key+"#")
		if err != nil {
			return started, fmt.Errorf("resume turn %s: %w", p.Key, err)
		}
		res, answered := readStored(stored, e.opts.ResponsePrefix, vars)
		if answered {
			e.drop(ctx, p.log, p.Key, "turn answered before the restart; its reply is delivered from the outbox")
			continue
		}
		if at := end.find(tr, end.asked, p.mc.BodyForAgent); at >= 0 {
			if at != end.owner {
				e.drop(ctx, p.log, p.Key, "turn answered before the restart by the reply to a newer message")
				continue
			}
			r, ok := replier(p.mc)
			if !ok {
				e.drop(ctx, p.log, p.Key, "turn given up: its chat is no longer configured")
				continue
			}
			rest, known := res.unsent(end.text)
			if !known {
				p.log.Warn("the reply's stored part is not where its transcript has it: nothing more is sent, so nothing is sent twice", "stored", len(stored))
			}
			if rest == "" {
				e.drop(ctx, p.log, p.Key, "turn answered before the restart; its reply is delivered from the outbox")
				continue
			}
			p.log.Info("turn answered before the restart; the rest of its reply is delivered", "stored", len(stored))
			if !e.start(p, func() {
				e.deliverRest(p.log, p.mc, r, rest, res.from()+1, vars)
			}) {
				return started, channel.ErrClosed
			}
			started++
			continue
		}
		if end.find(tr, end.open, p.mc.BodyForAgent) >= 0 && i != newestOpen {
			e.drop(ctx, p.log, p.Key, "turn resumed with the newer message it was asked with")
			continue
		}
		attempts, err := e.opts.Store.ResumeTurn(ctx, p.Key)
		if err != nil {
			return started, fmt.Errorf("resume turn %s: %w", p.Key, err)
		}
		if attempts > 1 {
			p.log.Error("turn given up: it did not finish after the last restart either", "admitted", p.At)
			e.drop(ctx, p.log, p.Key, "turn given up")
			continue
		}
		r, ok := replier(p.mc)
		if !ok {
			e.drop(ctx, p.log, p.Key, "turn given up: its chat is no longer configured")
			continue
		}
		mc, log := p.mc, p.log
		mc.resume = res
		if res != nil {
			log.Info("resuming a turn cut in the middle of its reply: the model is asked for the rest", "stored", len(stored))
		} else {
			log.Info("resuming a turn admitted before the restart")
		}
		if !e.start(p, func() {
			turnCtx, cancel := context.WithCancel(e.base)
			defer cancel()
			if err := e.dispatch(turnCtx, log, Finalize(mc, e.opts.Policy), r); err != nil {
				log.Warn("resumed turn", "err", err)
			}
		}) {
			return started, channel.ErrClosed
		}
		started++
	}
	return started, nil
}

// drop takes a turn out of the journal, saying why.
func (e *Engine) drop(ctx context.Context, log *slog.Logger, key, why string) {
	if err := e.opts.Store.FinishTurn(ctx, key); err != nil {
		log.Warn("turn not taken out of the journal", "err", err)
	}
	log.Info(why)
}

// start runs a resumed turn's work like any other turn's, so that Close
// waits for it, and then takes the turn out of the journal unless shutdown
// cut it. It is false once the engine is closed.
func (e *Engine) start(p *pendingTurn, work func()) bool {
	e.state.RLock()
	if e.closed {
		e.state.RUnlock()
		return false
	}
	e.inflight.Add(1)
	e.state.RUnlock()
	go func() {
		defer e.inflight.Done()
		work()
		if e.base.Err() == nil {
			e.finish(p.log, p.Key)
		}
	}()
	return true
}

// deliverRest sends the part of a finished reply that was not stored
// before the restart, as payload n of the turn.
func (e *Engine) deliverRest(log *slog.Logger, mc MsgContext, r channel.Replier, rest string, n int, vars reply.PrefixVars) {
	ctx := context.WithoutCancel(e.base)
	m := mc.Message
	p := msg.Outbound{Account: m.Account, Peer: m.Peer, Text: rest}
	e.attach(ctx, log, m, &p)
	norm := reply.Normalizer{Prefix: e.opts.ResponsePrefix, Vars: vars, OnSkip: func(reason reply.SkipReason, _ msg.Outbound) {
		log.Info("reply not delivered", "reason", string(reason))
	}}
	p, ok := norm.Normalize(reply.KindFinal, p)
	if !ok {
		return
	}
	p.ID = mc.Key + "#" + strconv.Itoa(n)
	if _, err := r.Deliver(ctx, p); err != nil {
		log.Error("deliver reply", "kind", string(reply.KindFinal), "err", err)
	}
}

// resumption is what a resumed turn's reply had stored before the
// restart.
type resumption struct {
	// said are the stored payloads' texts, in order, without the response
	// prefix.
	said []string
	// last is the highest payload number stored; the resumed run numbers
	// its payloads after it.
	last int
}

// readStored reads a turn's stored payloads: nil when there are none;
// answered when they hold a command's answer or the notice of a failed
// turn, which conclude it.
func readStored(entries []store.OutboxEntry, prefix string, vars reply.PrefixVars) (res *resumption, answered bool) {
	if len(entries) == 0 {
		return nil, false
	}
	res = &resumption{}
	expanded := reply.ExpandPrefix(prefix, vars)
	type numbered struct {
		n    int
		text string
	}
	var parts []numbered
	for _, e := range entries {
		_, suffix, _ := strings.Cut(e.ID, "#")
		n, err := strconv.Atoi(suffix)
		if err != nil || n < 1 || e.Out.IsError {
			return nil, true
		}
		res.last = max(res.last, n)
		if text := strings.TrimSpace(strings.TrimPrefix(e.Out.Text, expanded)); text != "" {
			parts = append(parts, numbered{n, text})
		}
	}
	// Payloads are numbered in delivery order.
	slices.SortStableFunc(parts, func(a, b numbered) int { return cmp.Compare(a.n, b.n) })
	for _, p := range parts {
		res.said = append(res.said, p.text)
	}
	return res, false
}

// resumeOf is what the batch's resumed message had stored of its reply.
// The payloads are numbered on under the newest message's key: another's
// stored ones do not count there.
func resumeOf(batch []*waiting) *resumption {
	for i, w := range batch {
		if r := w.mc.resume; r != nil {
			if i < len(batch)-1 {
				return &resumption{said: r.said}
			}
			return r
		}
	}
	return nil
}

// from is the payload number the run counts on from.
func (r *resumption) from() int {
	if r == nil {
		return 0
	}
	return r.last
}

// resumeNote follows, for the model, the part of its reply that was sent
// before a restart, when it is asked for the rest.
const resumeNote = "[Your reply above was cut off at this point by a restart, and the user has already received it. " +
	"Continue it from exactly where it stops: do not repeat any of it, and do not mention the interruption.]"

// told is what the model is shown after the turn's messages: its reply so
// far and the note asking for the rest; nothing when nothing was stored.
func (r *resumption) told(at time.Time) []store.Turn {
	if r == nil || len(r.said) == 0 {
		return nil
	}
	return []store.Turn{
		{Role: store.RoleAssistant, Text: strings.Join(r.said, "\n\n"), At: at},
		{Role: store.RoleUser, Text: resumeNote, At: at},
	}
}

// kept is what the transcript keeps of the resumed run's turns: the reply
// as the user got it, the stored part and the rest in the run's first
// assistant turn, without the blocks the run repeated.
func (r *resumption) kept(turns []store.Turn) []store.Turn {
	if r == nil || len(r.said) == 0 {
		return turns
	}
	turns = append([]store.Turn(nil), turns...)
	first := -1
	for i, t := range turns {
		if t.Role != store.RoleAssistant {
			continue
		}
		if first < 0 {
			first = i
		}
		if t.Text != "" {
			turns[i].Text = r.rest(t.Text)
			break
		}
	}
	said := strings.Join(r.said, "\n\n")
	if first < 0 {
		// The run said nothing: the transcript still has what the user got.
		return append([]store.Turn{{Role: store.RoleAssistant, Text: said, Partial: true}}, turns...)
	}
	turns[first].Text = strings.TrimSpace(said + "\n\n" + turns[first].Text)
	return turns
}

// rest is what of a whole text is not a repeat of blocks already sent.
func (r *resumption) rest(text string) string {
	if r == nil {
		return text
	}
	cut, open := r.repeated(text)
	if open {
		return "" // all of it repeats what was sent
	}
	return strings.TrimLeftFunc(text[cut:], unicode.IsSpace)
}

// unsent is what of a finished reply follows the payloads stored of it.
// known is false when the stored part is not the reply's start (the chat
// was sent another form of it): then nothing is taken for unsent.
func (r *resumption) unsent(reply string) (rest string, known bool) {
	if r == nil {
		return reply, true
	}
	cut, whole, open := repeatFrom(r.said, reply)
	switch {
	case open:
		return "", true // the stored payloads hold all of it
	case whole < len(r.said):
		return "", false
	}
	return strings.TrimLeftFunc(reply[cut:], unicode.IsSpace), true
}

// repeated measures how much of text, from its start, repeats whole
// blocks the user has seen: asked to go on, a model may start over from
// one of them. Whitespace does not count. cut is the byte offset in text
// after the repeated blocks; open reports that all of text so far repeats
// sent text and may go on doing so.
func (r *resumption) repeated(text string) (cut int, open bool) {
	for j := range r.said {
		c, _, o := repeatFrom(r.said[j:], text)
		cut, open = max(cut, c), open || o
	}
	return cut, open
}

// repeatFrom matches text against blocks, in order, whitespace aside: cut
// is the byte offset in text after the whole blocks it repeats, whole how
// many they are, open that text ended inside the repeat.
func repeatFrom(blocks []string, text string) (cut, whole int, open bool) {
	at := 0
	for i, b := range blocks {
		for _, want := range b {
			if unicode.IsSpace(want) {
				continue
			}
			for at < len(text) {
				got, n := utf8.DecodeRuneInString(text[at:])
				if !unicode.IsSpace(got) {
					break
				}
				at += n
			}
			if at == len(text) {
				return cut, i, true
			}
			got, n := utf8.DecodeRuneInString(text[at:])
			if got != want {
				return cut, i, false
			}
			at += n
		}
		cut = at
	}
	return cut, len(blocks), false
}

// stream wraps the run's stream so that blocks it repeats are not sent
// again; s itself when nothing was stored.
func (r *resumption) stream(s agent.Stream) agent.Stream {
	if r == nil || len(r.said) == 0 {
		return s
	}
	return &resumedStream{Stream: s, r: r}
}

// resumedStream holds the start of a resumed run's text back while it
// repeats what was sent before the restart, and passes on the rest.
type resumedStream struct {
	agent.Stream
	r    *resumption
	held strings.Builder
	// decided: the run's text has gone past any repeat; atBegin is its
	// value when the current call began.
	decided, atBegin bool
}

// Begin implements agent.Stream.
func (s *resumedStream) Begin() {
	if !s.decided && s.held.Len() > 0 {
		s.decided = true // the last call only repeated what was sent
	}
	s.held.Reset()
	s.atBegin = s.decided
	s.Stream.Begin()
}

// Text implements agent.Stream.
func (s *resumedStream) Text(delta string) {
	if s.decided {
		s.Stream.Text(delta)
		return
	}
	s.held.WriteString(delta)
	text := s.held.String()
	cut, open := s.r.repeated(text)
	if open {
		s.Stream.Text("") // the model is writing: its slot is busy
		return
	}
	s.decided = true
	s.Stream.Text(strings.TrimLeftFunc(text[cut:], unicode.IsSpace))
}

// Discard implements agent.Stream.
func (s *resumedStream) Discard() {
	s.held.Reset()
	s.decided = s.atBegin
	s.Stream.Discard()
}

// tail is how a transcript ends: with messages not answered yet, or with
// a reply and the messages it answered.
type tail struct {
	// open is the first of the user turns at the end, len(tr) when the
	// transcript does not end with one.
	open int
	// When the transcript ends with a finished reply: asked is the first
	// of the user turns it answers (they are followed by messages steered
	// into it), owner the newest of those first ones, whose key the
	// reply's payloads carry, and text what the reply said. Otherwise
	// asked and owner are -1.
	asked, owner int
	text         string
}

// tailOf reads how tr ends.
func tailOf(tr []store.Turn) tail {
	t := tail{open: len(tr), asked: -1, owner: -1}
	for t.open > 0 && tr[t.open-1].Role == store.RoleUser {
		t.open--
	}
	ends := func(u store.Turn) bool {
		return u.Role == store.RoleAssistant && len(u.ToolCalls) == 0 || u.Role == store.RoleSummary
	}
	n := len(tr)
	if t.open < n || n == 0 || !ends(tr[n-1]) || tr[n-1].Partial || tr[n-1].Role != store.RoleAssistant {
		return t
	}
	// The exchange starts after the reply before it.
	from := n - 1
	for from > 0 && !ends(tr[from-1]) {
		from--
	}
	for from < n && tr[from].Role != store.RoleUser {
		from++
	}
	to := from
	for to < n && tr[to].Role == store.RoleUser {
		to++
	}
	if from == to {
		return t
	}
	var said []string
	for _, u := range tr[to:] {
		if u.Role == store.RoleAssistant && u.Text != "" {
			said = append(said, u.Text)
		}
	}
	t.asked, t.owner, t.text = from, to-1, strings.Join(said, "\n\n")
	return t
}

// find returns the index of the last user turn of tr[from:] that holds
// body as a message, or -1.
func (tail) find(tr []store.Turn, from int, body string) int {
	if from < 0 {
		return -1
	}
	for i := len(tr) - 1; i >= from; i-- {
		if tr[i].Role == store.RoleUser && holdsBody(tr[i].Text, body) {
			return i
		}
	}
	return -1
}

// holdsBody reports whether a user turn's text is the message body: after
// its envelope (or a notice line), and followed by nothing but the notes
// of its media.
func holdsBody(text, body string) bool {
	for at := strings.Index(text, body); at >= 0; {
		before, rest := text[:at], text[at+len(body):]
		starts := before == "" || strings.HasSuffix(before, "] ") || strings.HasSuffix(before, "\n")
		if starts && (rest == "" || strings.HasPrefix(rest, "\n[")) {
			return true
		}
		next := strings.Index(text[at+1:], body)
		if next < 0 {
			break
		}
		at += 1 + next
	}
	return false
}
