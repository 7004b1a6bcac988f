package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/trace"
)

// Streaming modes of an account's replies: written live into a CardKit
// card, or sent whole when the model is done.
const (
	StreamingCard = "card"
	StreamingOff  = "off"
)

// codeScopeMissing is the platform's answer to an app without a scope the
// API needs (for CardKit, cardkit:card:write).
const codeScopeMissing = 99991672

// cardElement is the element_id of a streaming card's text.
const cardElement = "reply"

// cardInterval is the least time between two requests that write a
// card's text: about ten a second at most, whatever the model's pace.
const cardInterval = 100 * time.Millisecond

// liveCardKey is the ChannelData key under which a payload names the live
// card it finishes (a cardRef as JSON): stored with the payload in the
// outbox, so a delivery resumed after a restart finishes the same card.
const liveCardKey = "feishu.card"

// cardRef is a live card: the card entity, the message that shows it and
// the last sequence its stream used.
type cardRef struct {
	CardID    string `json:"card_id"`
	MessageID string `json:"message_id"`
	ThreadID  string `json:"thread_id,omitempty"`
	Sequence  int    `json:"sequence"`
}

// liveCard is the card a payload finishes, if it names one.
func liveCard(out msg.Outbound) (cardRef, bool) {
	s, _ := out.ChannelData[liveCardKey].(string)
	if s == "" {
		return cardRef{}, false
	}
	var ref cardRef
	if json.Unmarshal([]byte(s), &ref) != nil || ref.CardID == "" || ref.MessageID == "" {
		return cardRef{}, false
	}
	return ref, true
}

// withCard is out naming ref as the card it finishes.
func withCard(out msg.Outbound, ref cardRef) msg.Outbound {
	data := make(map[string]any, len(out.ChannelData)+1)
	for k, v := range out.ChannelData {
		data[k] = v
	}
	data[liveCardKey] = marshal(ref)
	out.ChannelData = data
	return out
}

// streamingCard is a JSON 2.0 card in streaming mode whose one markdown
// element, cardElement, shows text.
func streamingCard(text string) string {
	return marshal(map[string]any{
		"schema": "2.0",
		"config": map[string]any{"update_multi": true, "streaming_mode": true},
		"body": map[string]any{"elements": []any{
			map[string]string{"tag": "markdown", "element_id": cardElement, "content": text},
		}},
	})
}

// cardMessage is the content of an interactive message that shows the
// card entity id.
func cardMessage(id string) string {
	return marshal(map[string]any{"type": "card", "data": map[string]string{"card_id": id}})
}

// createCard is POST /open-apis/cardkit/v1/cards: a card entity of the
// card JSON data. It returns the card's id.
func (c *client) createCard(ctx context.Context, data string) (string, error) {
	raw, err := c.call(ctx, http.MethodPost, "/open-apis/cardkit/v1/cards", nil, map[string]string{"type": "card_json", "data": data})
	if err != nil {
		return "", err
	}
	var d struct {
		CardID string `json:"card_id"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return "", fmt.Errorf("created card: %w", err)
	}
	if d.CardID == "" {
		return "", errors.New("created card: no card_id")
	}
	return d.CardID, nil
}

// streamCardText is PUT
// /open-apis/cardkit/v1/cards/:card_id/elements/:element_id/content: the
// element's whole text, which the card writes out from where the text it
// showed stops. seq must rise with every update of the card; uuid makes a
// retried update land once.
func (c *client) streamCardText(ctx context.Context, cardID, element, text string, seq int, uuid string) error {
	body := map[string]any{"content": text, "sequence": seq}
	if uuid != "" {
		body["uuid"] = uuid
	}
	path := "/open-apis/cardkit/v1/cards/" + url.PathEscape(cardID) + "/elements/" + url.PathEscape(element) + "/content"
	_, err := c.call(ctx, http.MethodPut, path, nil, body)
	return err
}

// setCardStreaming is PATCH /open-apis/cardkit/v1/cards/:card_id/settings
// turning the card's streaming mode on or off.
func (c *client) setCardStreaming(ctx context.Context, cardID string, on bool, seq int, uuid string) error {
	settings := marshal(map[string]any{"config": map[string]bool{"streaming_mode": on}})
	body := map[string]any{"settings": settings, "sequence": seq}
	if uuid != "" {
		body["uuid"] = uuid
	}
	_, err := c.call(ctx, http.MethodPatch, "/open-apis/cardkit/v1/cards/"+url.PathEscape(cardID)+"/settings", nil, body)
	return err
}

// cardIDOf is POST /open-apis/cardkit/v1/cards/id_convert: the card
// entity the message id shows.
func (c *client) cardIDOf(ctx context.Context, id string) (string, error) {
	raw, err := c.call(ctx, http.MethodPost, "/open-apis/cardkit/v1/cards/id_convert", nil, map[string]string{"message_id": id})
	if err != nil {
		return "", err
	}
	var d struct {
		CardID string `json:"card_id"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return "", fmt.Errorf("card of message %s: %w", id, err)
	}
	if d.CardID == "" {
		return "", fmt.Errorf("card of message %s: no card_id", id)
	}
	return d.CardID, nil
}

// recall is DELETE /open-apis/im/v1/messages/:message_id: the bot takes a
// message it sent back.
func (c *client) recall(ctx context.Context, id string) error {
	_, err := c.call(ctx, http.MethodDelete, "/open-apis/im/v1/messages/"+url.PathEscape(id), nil, nil)
	return err
}

// streamsCards reports whether replies are written live into cards: the
// account is set to, and the platform has not refused it CardKit.
func (a *Account) streamsCards() bool {
	return a.opts.Streaming == StreamingCard && !a.cardsRefused.Load()
}

// refusedCards reports whether err is the platform refusing the app
// CardKit: its scope is not granted.
func refusedCards(err error) bool {
	return codeOf(err) == codeScopeMissing
}

// refuseCards remembers that the platform refused the app CardKit: the
// account's replies are sent whole until pincer restarts. It is logged
// and traced (on the message whose reply met it) once.
func (a *Account) refuseCards(err error, m msg.Message) {
	if !a.cardsRefused.CompareAndSwap(false, true) {
		return
	}
	a.log.Warn("Feishu refused CardKit: replies are sent as whole messages until restart; grant the app cardkit:card:write to stream them into cards",
		"code", codeOf(err), "err", err)
	if a.opts.Trace != nil && m.ID != "" {
		a.opts.Trace.Step(trace.KeyOf(m), trace.StageDeliver, "no card",
			fmt.Sprintf("Feishu refused CardKit (code %d): this account's replies are sent as whole messages until restart", codeOf(err)))
	}
}

// finishCard writes a live card's final text and closes its streaming
// mode. Each request carries a uuid and a sequence derived from the card,
// so a retry (after a restart too) repeats them rather than adding to
// them. A card the platform refuses the text (it took the card out of
// streaming mode, as it does to one that streamed too long) is put back
// into streaming mode for it.
func (a *Account) finishCard(ctx context.Context, ref cardRef, text string) error {
	seq := ref.Sequence
	step := func() int { seq++; return seq }
	// A payload of media only has no text to write: the card keeps what
	// it showed.
	if text != "" {
		err := a.api.streamCardText(ctx, ref.CardID, cardElement, text, step(), cardUUID(ref.CardID, "final"))
		if refusedText(err) {
			if err = a.api.setCardStreaming(ctx, ref.CardID, true, step(), cardUUID(ref.CardID, "reopen")); err == nil {
				err = a.api.streamCardText(ctx, ref.CardID, cardElement, text, step(), cardUUID(ref.CardID, "final again"))
			}
		}
		if err != nil {
			return fmt.Errorf("finish card %s: %w", ref.CardID, err)
		}
	}
	if err := a.api.setCardStreaming(ctx, ref.CardID, false, step(), cardUUID(ref.CardID, "close")); err != nil {
		return fmt.Errorf("close card %s: %w", ref.CardID, err)
	}
	return nil
}

// refusedText reports a business error of the platform for a card's text
// that neither a wait nor a new token cures.
func refusedText(err error) bool {
	ae, ok := errors.AsType[*apiError](err)
	return ok && !ae.throttled() && !invalidToken(ae.Code) && ae.Status < 500 && ae.Code != codeScopeMissing
}

// cardUUID is the idempotency key of one request to a card.
func cardUUID(cardID, what string) string { return partUUID("card:"+cardID+":"+what, 0) }

// cardStream writes one reply live into a card: created with the first
// visible text, then updated with the whole text so far, at most once per
// interval and never while a request is on its way, so fast deltas are
// coalesced into one update.
type cardStream struct {
	a       *Account
	trigger msg.Message
	base    msg.Outbound // where the card's message goes

	mu   sync.Mutex
	text strings.Builder

	kick    chan struct{} // new text; buffered by one
	stopped chan struct{} // closed by stop
	done    chan struct{} // closed when run returns
	once    sync.Once
	// openOnStop: stop asks for the card when it was not made yet; set
	// before stopped is closed.
	openOnStop bool

	// Written by run, read after done is closed.
	ref   cardRef
	shown string
	ok    bool // the card's message was posted
	// since is when the card's message was posted: its sequences count
	// the milliseconds since.
	since  time.Time
	warned bool // an update failed
}

// liveHead is what of text a card shows while it streams: at most limit
// characters and the bytes of a card's chunk. A longer reply is cut in
// chunks when it is delivered, the first in the card, the rest after it.
func liveHead(text string, limit int) string {
	n := min(byteIndexOfRune(text, limit), postChunkBytes, len(text))
	for n > 0 && n < len(text) && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n]
}

func (a *Account) newCardStream(trigger msg.Message, base msg.Outbound) *cardStream {
	s := &cardStream{
		a: a, trigger: trigger, base: base,
		kick: make(chan struct{}, 1), stopped: make(chan struct{}), done: make(chan struct{}),
	}
	go s.run()
	return s
}

// push adds streamed text.
func (s *cardStream) push(delta string) {
	s.mu.Lock()
	s.text.WriteString(delta)
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *cardStream) current() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String()
}

// stop ends the stream once its request on the way is answered, and
// returns the card, if its message was posted. With open, a card not
// asked for yet (the reply came whole before the stream got to it) is
// made now, so every reply of the account is a card, and a run after a
// restart finds the card of the run before (see open).
func (s *cardStream) stop(open bool) (cardRef, bool) {
	s.once.Do(func() {
		s.openOnStop = open
		close(s.stopped)
	})
	<-s.done
	return s.ref, s.ok
}

// run creates the card and keeps its text up to date until stop. An
// update on its way when stop comes is given up (the delivery writes the
// whole text again); the card's creation is waited for.
func (s *cardStream) run() {
	defer close(s.done)
	ctx := context.Background()
	updates, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.stopped:
			cancel()
		case <-updates.Done():
		}
	}()
	var last time.Time // when the last request went out
	for {
		stopping := false
		select {
		case <-s.kick:
		case <-s.stopped:
			stopping = true
		}
		if wait := cardInterval - time.Since(last); !stopping && !last.IsZero() && wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-s.stopped:
				t.Stop()
				stopping = true
			}
		}
		// Once stopped, the delivery writes the final text; only a card
		// not made yet is made, when stop asks for it.
		text := liveHead(s.current(), s.a.opts.ChunkLimit)
		switch {
		case stopping && (s.ok || !s.openOnStop):
			return
		case strings.TrimSpace(text) == "":
			if stopping {
				return
			}
			continue
		case !s.ok:
			last = time.Now()
			if err := s.open(ctx, text); err != nil {
				if _, took := errors.AsType[takeOverError](err); refusedCards(err) && !took {
					s.a.refuseCards(err, s.trigger)
				} else {
					s.a.log.Warn("Feishu card not created; the reply is sent whole", "peer", s.base.Peer.String(), "err", err)
				}
				return
			}
			if stopping {
				return
			}
			continue
		case text == s.shown:
			continue
		}
		last = time.Now()
		seq := s.nextSequence()
		if err := s.a.api.streamCardText(updates, s.ref.CardID, cardElement, text, seq, cardUUID(s.ref.CardID, fmt.Sprint(seq))); err != nil {
			if updates.Err() != nil {
				return
			}
			// The next update, or the final one, writes the whole text
			// again; one warning a card says the platform refuses them.
			if !s.warned {
				s.warned = true
				s.a.log.Warn("Feishu card not updated", "card_id", s.ref.CardID, "err", err)
			}
			continue
		}
		s.shown = text
	}
}

// nextSequence is the sequence of the card's next request: the time since
// its message was posted, in milliseconds (the platform suggests a time),
// or one more than the last when that is later. A run after a restart that
// writes into the card an earlier run left streaming (see open) counts
// from the same message, so it numbers after the earlier run; and the
// numbers stay small enough for a 32-bit field for weeks.
func (s *cardStream) nextSequence() int {
	s.ref.Sequence = max(s.ref.Sequence+1, int(time.Since(s.since)/time.Millisecond)+1)
	return s.ref.Sequence
}

// postedAt is when the platform says sent was created; now when it does
// not say.
func postedAt(sent sentMessage) time.Time {
	ms, err := strconv.ParseInt(sent.CreateTime, 10, 64)
	if err != nil || ms <= 0 {
		return time.Now()
	}
	return time.UnixMilli(ms)
}

// open creates the card showing text and posts the message that shows
// it, under an idempotency key of the message it answers. When the
// platform answers with a message the bot had posted already (a run
// before a restart wrote this reply into a card and was cut off), the
// reply goes on in that message's card, streaming again, and the card
// just created is left unshown.
func (s *cardStream) open(ctx context.Context, text string) error {
	id, err := s.a.api.createCard(ctx, streamingCard(text))
	if err != nil {
		return fmt.Errorf("create card: %w", err)
	}
	if err := s.a.limiter(s.base.Peer).Wait(ctx); err != nil {
		return fmt.Errorf("send card: %w", err)
	}
	uuid := cardUUID(id, "message")
	if s.trigger.ID != "" {
		uuid = partUUID("card:"+string(s.a.opts.ID)+":"+string(s.trigger.ID), 0)
	}
	sent, err := s.a.post(ctx, s.base, "interactive", cardMessage(id), uuid)
	if err != nil {
		return fmt.Errorf("send card %s: %w", id, err)
	}
	s.ref = cardRef{CardID: id, MessageID: sent.MessageID, ThreadID: sent.ThreadID}
	s.since = postedAt(sent)
	if s.a.sentBefore(ctx, sent.MessageID) {
		if err := s.resume(ctx, text); err != nil {
			return takeOverError{err}
		}
	}
	s.a.recordSent(ctx, sent)
	s.shown, s.ok = text, true
	return nil
}

// takeOverError is a failure to take over the card of an earlier run: the
// card just made shows nowhere, but CardKit served it, so it is no
// refusal of CardKit.
type takeOverError struct{ error }

func (e takeOverError) Unwrap() error { return e.error }

// resume takes over the card of the message s.ref names, which an earlier
// run posted: it streams again, showing text.
func (s *cardStream) resume(ctx context.Context, text string) error {
	id, err := s.a.api.cardIDOf(ctx, s.ref.MessageID)
	if err != nil {
		return fmt.Errorf("card of message %s: %w", s.ref.MessageID, err)
	}
	s.ref.CardID = id
	seq := s.nextSequence()
	if err := s.a.api.setCardStreaming(ctx, id, true, seq, cardUUID(id, fmt.Sprint(seq))); err != nil {
		return fmt.Errorf("stream card %s again: %w", id, err)
	}
	seq = s.nextSequence()
	if err := s.a.api.streamCardText(ctx, id, cardElement, text, seq, cardUUID(id, fmt.Sprint(seq))); err != nil {
		return fmt.Errorf("card %s: %w", id, err)
	}
	s.a.log.Info("Feishu card of a reply cut off by a restart taken over", "message_id", s.ref.MessageID, "card_id", id)
	return nil
}

// sentBefore reports whether the Sent log knows the message id: the bot
// posted it before.
func (a *Account) sentBefore(ctx context.Context, id string) bool {
	if a.opts.Sent == nil || id == "" {
		return false
	}
	known, err := a.opts.Sent.WasSent(ctx, ChannelID, a.opts.ID, msg.MessageID(id))
	if err != nil {
		a.log.Warn("Feishu sent log not read", "message_id", id, "err", err)
	}
	return known
}
