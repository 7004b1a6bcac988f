package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/pincerbot/pincer/internal/trace"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/aggregate"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/prompt"
	"github.com/pincerbot/pincer/internal/store"
	"github.com/pincerbot/pincer/internal/trigger"
)

// runRealtime turns a flushed realtime window into an agent turn: the
// messages joined (the leading mention stripped once), the quote block
// first, taken history around it; the commands see only the user's text.
func (p *Pipeline) runRealtime(ctx context.Context, f aggregate.Flushed[held]) {
	var err error
	defer func() { answer(f.Entries, err) }()
	msgs := f.Messages()
	if len(msgs) == 0 {
		return
	}
	if p.stale(f.Entries) {
		err = ErrReleased // the chat's next owner restores the window
		return
	}
	msgs = p.enrich(ctx, msgs)
	p.writeBack(f.Entries, msgs)
	if !slices.ContainsFunc(msgs, func(m msg.Message) bool { return !m.Recalled }) {
		// Every message of the batch was taken back by its sender before
		// the reply: there is nothing to answer.
		keys := make([]trace.Key, len(msgs))
		for i, m := range msgs {
			keys[i] = trace.KeyOf(m)
		}
		p.opts.Trace.StepAll(keys, trace.StageDeliver, "no reply", "recalled by its sender before the reply")
		p.log.Debug("recalled realtime batch skipped", "peer", msgs[0].Peer.String())
		p.release(store.Consumed{Entries: refsOf(f.Entries)})
		return
	}
	first := msgs[0]
	text := RealtimeText(msgs, p.opts.Bot.Self())
	consume := store.Consumed{Entries: refsOf(f.Entries)}
	// A command is a batch of its own; it neither takes the history meant
	// for the next reply nor needs quotes.
	command := len(msgs) == 1 && p.isCommand(text)
	c := p.chat(first.Peer)
	var history []msg.Message
	if c.Receive.History.Enabled && !command {
		var refs []int64
		history, refs = p.history.Take(first.Peer.String(), msgs, time.Now())
		consume.Marks = p.mark(first, store.ViewHistory, refs)
		if p.opts.Enrich != nil {
			// The buffer keeps no chat per line; the enricher needs it.
			for i := range history {
				history[i].Channel, history[i].Account, history[i].Peer = first.Channel, first.Account, first.Peer
			}
			history = p.enrich(ctx, history)
		}
	}
	batch := msg.Batch{Kind: msg.Realtime, Messages: msgs, History: history, Trigger: f.Trigger, Flush: f.Reason}
	var keys []trace.Key
	if p.opts.Trace != nil {
		keys = make([]trace.Key, len(msgs))
		for i, m := range msgs {
			keys[i] = trace.KeyOf(m)
		}
		p.opts.Trace.StepAll(keys, trace.StageWindow, "", flushText(f.Reason, len(msgs), len(history), first.ID))
	}
	quote := ""
	var media []msg.Attachment
	for _, m := range msgs {
		media = append(media, m.Attachments(msg.AttachedHere)...)
	}
	if p.opts.Quote != nil && !command && !c.NoQuote {
		var summary string
		var quoted []msg.Attachment
		quote, summary, quoted = p.quote(ctx, batch)
		for _, a := range quoted {
			// Forward nodes may not say where they were seen.
			if a.Channel == "" {
				a.Channel, a.Account, a.Peer = first.Channel, first.Account, first.Peer
			}
			media = append(media, a)
		}
		if summary != "" {
			p.opts.Trace.StepAll(keys, trace.StageQuote, "", summary)
		}
	}
	hasImage := slices.ContainsFunc(msgs, func(m msg.Message) bool { return m.HasImage() })
	if strings.TrimSpace(text) == "" && quote == "" && len(history) == 0 && !hasImage {
		p.opts.Trace.StepAll(keys, trace.StageDeliver, "no reply", "the batch was empty: nothing to answer")
		p.log.Debug("empty realtime batch skipped", "peer", first.Peer.String(), "reason", string(f.Reason))
		p.release(consume)
		return
	}
	body := RealtimeBody(first, text, quote, history, p.opts.Location)
	m := first
	m.Text = text
	r := &filtered{Wrapper: channel.Wrapper{Replier: f.Entries[0].Tag.r}, mentionable: mentionable(history, msgs)}
	t := Turn{Message: m, Body: text, BodyForAgent: body, RawBody: text, CommandBody: text, Consume: consume, Delivery: replyDelivery(first, r), Media: media}
	p.log.Debug("realtime batch", "peer", first.Peer.String(), "messages", len(msgs), "history", len(history), "trigger", string(f.Trigger), "flush", string(f.Reason))
	if p.stale(f.Entries) {
		err = ErrReleased
		return
	}
	if err = p.opts.Engine.Turn(ctx, t, r); err != nil {
		p.log.Warn("realtime batch", "peer", first.Peer.String(), "err", err)
	}
}

// enrich runs the channel's enricher over msgs, containing its failures:
// the turn goes on with the messages as they were.
func (p *Pipeline) enrich(ctx context.Context, msgs []msg.Message) (out []msg.Message) {
	if p.opts.Enrich == nil || len(msgs) == 0 {
		return msgs
	}
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("enriching messages panicked; going on without it", "panic", v)
			out = msgs
		}
	}()
	return p.opts.Enrich(ctx, slices.Clone(msgs))
}

// answer tells the messages of a batch its outcome: err for the first,
// the one the reply answers; channel.ErrMerged for the rest.
func answer(entries []aggregate.Entry[held], err error) {
	for i, e := range entries {
		if e.Tag.done == nil {
			continue
		}
		if i == 0 {
			e.Tag.done(err)
		} else {
			e.Tag.done(channel.ErrMerged)
		}
	}
}

// quote runs the quoter, containing its failures: the batch goes on
// without a quote block.
func (p *Pipeline) quote(ctx context.Context, b msg.Batch) (block, summary string, media []msg.Attachment) {
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("quote resolution panicked; going on without it", "panic", v)
			block, summary, media = "", "quote resolution failed; the turn went on without it", nil
		}
	}()
	return p.opts.Quote(ctx, b)
}

// flushText says why a batch was answered now, for its messages' traces.
func flushText(reason msg.FlushReason, messages, history int, first msg.MessageID) string {
	s := fmt.Sprintf("answered in a batch of %d message(s) led by %s, flushed: %s", messages, first, reason)
	if history > 0 {
		s += fmt.Sprintf("; with %d line(s) of chat history", history)
	}
	return s
}

// RealtimeText is what the users of a realtime batch said: each message's
// text on its own line, the first without its leading mention of self.
func RealtimeText(msgs []msg.Message, self msg.UserID) string {
	lines := make([]string, 0, len(msgs))
	for i, m := range msgs {
		t := m.Text
		if i == 0 {
			t = trigger.StripLeadingMention(m, self)
		}
		if t = strings.TrimSpace(t); t != "" {
			lines = append(lines, t)
		}
	}
	return strings.Join(lines, "\n")
}

// RealtimeBody is what the agent reads for a realtime batch: the quote
// block, then the text; with history, the transcript between its markers
// first; and in groups the sender's label ("昵称 (qq): ") on the current
// message, so the agent knows who spoke and the envelope's sender never
// seems to have said the whole transcript. The
// history is all shown: its buffer already keeps to history.maxChars of
// text (the lines' time and sender labels are not counted, as the spec
// counts the buffer's texts).
func RealtimeBody(first msg.Message, text, quote string, history []msg.Message, loc *time.Location) string {
	current := text
	if quote != "" {
		current = quote + "\n" + text
	}
	lines := prompt.Transcript(history, loc, math.MaxInt)
	if len(lines) == 0 {
		if first.Peer.Kind == msg.Group {
			// A group's message says who sent it, as with history.
			return prompt.SenderLabel(first.Sender) + current
		}
		return current
	}
	var b strings.Builder
	b.WriteString(prompt.HistoryHeader + "\n")
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	b.WriteString(prompt.HistoryFooter + "\n")
	if first.Peer.Kind == msg.Group {
		b.WriteString(prompt.SenderLabel(first.Sender))
	}
	b.WriteString(current)
	return b.String()
}

// SummaryBody is the body of digest and summary turns: the prompt, a
// blank line, then the transcript trimmed from the oldest end to maxChars,
// its newest line cut to fit when even that one is longer. ok is false
// when no message says anything: there is nothing to read, and the turn
// is not to be run.
func SummaryBody(promptText string, msgs []msg.Message, loc *time.Location, maxChars int) (body string, ok bool) {
	if !slices.ContainsFunc(msgs, func(m msg.Message) bool { return strings.TrimSpace(m.Text) != "" }) {
		return "", false
	}
	return strings.TrimSpace(promptText) + "\n\n" + strings.Join(prompt.CutTranscript(msgs, loc, maxChars), "\n"), true
}

// digestPrefix marks the ids of digest turns.
const digestPrefix = "digest:"

// runDigest sends a chat's digest: a turn that answers no one, runs no
// command, and stays silent when the agent says SKIP.
func (p *Pipeline) runDigest(ctx context.Context, f aggregate.Flushed[held]) {
	msgs := f.Messages()
	if len(msgs) == 0 || p.stale(f.Entries) {
		return
	}
	msgs = p.enrich(ctx, msgs)
	if p.stale(f.Entries) {
		return
	}
	first := msgs[0]
	dg := p.opts.Receive.Digest
	dg.Prompt = p.chat(first.Peer).Receive.Digest.Prompt
	consume := store.Consumed{Marks: p.mark(first, store.ViewDigest, refsOf(f.Entries))}
	body, ok := SummaryBody(dg.Prompt, msgs, p.opts.Location, dg.MaxTranscriptChars)
	if !ok {
		// Not one of the messages has text: the model is not asked to
		// summarize nothing, and the buffer moves past them.
		keys := make([]trace.Key, len(msgs))
		for i, m := range msgs {
			keys[i] = trace.KeyOf(m)
		}
		p.opts.Trace.StepAll(keys, trace.StageDeliver, "no digest", "nothing to read: no message of the digest has text")
		p.log.Debug("empty digest skipped", "peer", first.Peer.String(), "messages", len(msgs))
		p.release(consume)
		return
	}
	m := msg.Message{
		ID:      msg.MessageID(digestPrefix + string(first.ID) + ":" + string(msgs[len(msgs)-1].ID)),
		Channel: first.Channel, Account: first.Account, Peer: first.Peer, Time: time.Now(),
	}
	r := &peerReplier{send: p.opts.Send, account: first.Account, peer: first.Peer, flatten: p.opts.PlainText, skip: true}
	t := Turn{Message: m, Body: body, BodyForAgent: body, NoCommands: true, Standalone: true, Consume: consume, Delivery: chatDelivery(r)}
	p.log.Debug("digest batch", "peer", first.Peer.String(), "messages", len(msgs), "flush", string(f.Reason))
	if p.stale(f.Entries) {
		return
	}
	if err := p.opts.Engine.Turn(ctx, t, r); err != nil {
		p.log.Warn("digest batch", "peer", first.Peer.String(), "err", err)
	}
}

// summaryCount reports whether m is a /summary command this pipeline
// honours, and its count; typed is m's text without its leading mention.
func (p *Pipeline) summaryCount(c *ChatRules, m msg.Message, typed string) (int, bool) {
	s := p.opts.Receive.Summary
	if c.Silent || !c.Receive.Summary.Enabled || !p.summaryScope.covers(m.Peer) {
		return 0, false
	}
	return ParseSummary(typed, s.Commands, s.Count, s.MaxCount)
}

// summary answers a /summary command for count messages: the chat's
// history from the platform (or from pincer's own log), summarized by a
// turn of its own, or a notice saying why not. ref is the command's
// stored entry, which keeps it across a restart or a handover until it is
// answered: the turn's admission consumes it, a notice removes it. A
// command of a chat released since epoch is left to the process that
// took the chat over.
func (p *Pipeline) summary(ctx context.Context, m msg.Message, count int, r channel.Replier, ref int64, epoch uint64) error {
	s := p.opts.Receive.Summary
	s.Prompt = p.chat(m.Peer).Receive.Summary.Prompt
	reply := &filtered{Wrapper: channel.Wrapper{Replier: r}, flatten: p.opts.PlainText, noMentions: true}
	answered := false // by a notice, or by a turn admitted or refused
	defer func() {
		if ref == 0 || !answered {
			return
		}
		p.mu.Lock()
		keep := p.flushed || p.epochs[m.Peer] != epoch
		p.mu.Unlock()
		if !keep {
			p.unbuffer(ref) // consumed already when the turn was admitted
		}
	}()
	notice := func(text string) {
		answered = true
		if _, err := reply.Deliver(ctx, msg.Outbound{Account: m.Account, Peer: m.Peer, Text: text}); err != nil {
			p.log.Warn("summary notice", "peer", m.Peer.String(), "err", err)
		}
	}
	history := p.opts.History
	if history == nil && p.opts.LocalHistory != nil {
		history = p.opts.LocalHistory
	}
	if history == nil {
		notice(textSummaryFailed + "this chat has no message history")
		return nil
	}
	fetched, err := history.History(ctx, m.Peer, channel.HistoryQuery{Count: count + 1})
	if errors.Is(err, channel.ErrHistoryUnsupported) && p.opts.LocalHistory != nil {
		// The implementation cannot read history: summarize what pincer
		// saw itself.
		p.log.Info("summary: the platform has no chat history; using the messages pincer logged", "peer", m.Peer.String())
		fetched, err = p.opts.LocalHistory.History(ctx, m.Peer, channel.HistoryQuery{Count: count + 1})
	}
	if err != nil {
		p.log.Warn("summary history", "peer", m.Peer.String(), "err", err)
		notice(textSummaryFailed + err.Error())
		return nil
	}
	msgs := make([]msg.Message, 0, len(fetched))
	for _, h := range fetched {
		if h.ID == "" || h.ID == m.ID || h.Time.IsZero() {
			continue // malformed, or the command itself
		}
		msgs = append(msgs, h)
	}
	slices.SortStableFunc(msgs, func(a, b msg.Message) int { return cmp.Compare(a.Time.UnixNano(), b.Time.UnixNano()) })
	if len(msgs) > count {
		msgs = msgs[len(msgs)-count:]
	}
	if len(msgs) == 0 {
		notice(textSummaryEmpty)
		return nil
	}
	msgs = p.enrich(ctx, msgs)
	body, ok := SummaryBody(s.Prompt, msgs, p.opts.Location, s.MaxTranscriptChars)
	if !ok {
		notice(textSummaryEmpty) // none of them says anything
		return nil
	}
	if p.epoch(m.Peer) != epoch {
		return ErrReleased // the process that took the chat over answers it
	}
	// Attributed to the command: its sender's id and name, its message id.
	t := Turn{Message: m, Body: body, BodyForAgent: body, NoCommands: true, Standalone: true, Delivery: replyDelivery(m, reply)}
	if ref != 0 {
		t.Consume.Entries = []int64{ref}
	}
	answered = true
	err = p.opts.Engine.Turn(ctx, t, reply)
	if err != nil {
		p.log.Warn("summary", "peer", m.Peer.String(), "err", err)
	}
	return err
}

// refsOf lists the stored entries of flushed buffer entries.
func refsOf(entries []aggregate.Entry[held]) []int64 {
	var out []int64
	for _, e := range entries {
		if e.Tag.ref != 0 {
			out = append(out, e.Tag.ref)
		}
	}
	return out
}

// mentionable lists the senders the agent was shown, oldest first, each
// once (at their latest appearance).
func mentionable(groups ...[]msg.Message) []msg.Sender {
	var all []msg.Sender
	for _, g := range groups {
		for _, m := range g {
			if m.Sender.ID != "" {
				all = append(all, m.Sender)
			}
		}
	}
	seen := map[msg.UserID]bool{}
	var out []msg.Sender
	for i := len(all) - 1; i >= 0; i-- {
		if !seen[all[i].ID] {
			seen[all[i].ID] = true
			out = append(out, all[i])
		}
	}
	slices.Reverse(out)
	return out
}
