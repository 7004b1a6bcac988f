// Package channel defines how chat channels plug into pincer: an Adapter
// decodes its platform's events into msg.Message values and hands them to a
// Sink, and delivers the replies the Sink produces. Capabilities beyond that
// are optional interfaces an adapter may also implement.
package channel

import (
	"context"
	"errors"

	"github.com/pincerbot/pincer/internal/msg"
)

// Errors a Sink returns for messages it does not handle.
var (
	// ErrDuplicate: the message was already dispatched.
	ErrDuplicate = errors.New("duplicate message")
	// ErrClosed: the sink is shutting down.
	ErrClosed = errors.New("shutting down")
	// ErrMerged: the message was answered together with others, in a reply
	// delivered through another message's replier.
	ErrMerged = errors.New("answered together with another message")
	// ErrStopped: the sender said stop before the message was answered.
	ErrStopped = errors.New("stopped by the sender before it was answered")
)

// Replier receives one turn's reply.
type Replier interface {
	// Partial receives visible reply text as the model streams it. Channels
	// that cannot show streaming ignore it; Deliver always follows.
	Partial(delta string)
	// Deliver sends one reply payload and returns the id of the sent
	// message, when the platform gives one.
	Deliver(ctx context.Context, out msg.Outbound) (msg.MessageID, error)
}

// PartialViewer is a Replier that shows streamed text live (the web chat);
// the engine sends it the whole reply at the end instead of blocks.
type PartialViewer interface {
	ShowsPartial() bool
}

// LiveEnder is a PartialViewer that learns when its turn is over, after
// the reply's deliveries, delivered or not: a live view still showing text
// that no delivery took (the turn failed or was stopped, or its reply was
// dropped) can take it down.
type LiveEnder interface {
	EndLive(ctx context.Context)
}

// Typer is a Replier that can show a typing indicator in its chat.
type Typer interface {
	Typing(ctx context.Context, on bool) error
}

// Wrapper is the base of a Replier that wraps another to change how it
// delivers: it passes the wrapped replier's live view and typing indicator
// on, so a chat that streams keeps streaming.
type Wrapper struct{ Replier }

// ShowsPartial implements PartialViewer for the wrapped replier.
func (w Wrapper) ShowsPartial() bool {
	pv, ok := w.Replier.(PartialViewer)
	return ok && pv.ShowsPartial()
}

// EndLive implements LiveEnder for the wrapped replier; a replier without
// a live view ignores it.
func (w Wrapper) EndLive(ctx context.Context) {
	if l, ok := w.Replier.(LiveEnder); ok {
		l.EndLive(ctx)
	}
}

// Typing implements Typer for the wrapped replier; a chat without an
// indicator ignores it.
func (w Wrapper) Typing(ctx context.Context, on bool) error {
	if t, ok := w.Replier.(Typer); ok {
		return t.Typing(ctx, on)
	}
	return nil
}

// Sink takes inbound messages; the engine (later the pipeline) is one.
type Sink interface {
	// Dispatch handles m and replies through r. It returns once the reply,
	// if any, has been delivered.
	Dispatch(ctx context.Context, m msg.Message, r Replier) error
}

// Taker is a Sink that takes a message in at once and reports its outcome
// later. An adapter that calls Take for the messages of one chat one after
// the other, as they arrive, keeps them in order without waiting for any
// reply. done, when not nil, is called once with what Dispatch would have
// returned: at once for a message that waits for nothing, later for one
// whose batch is answered later. It must not block.
type Taker interface {
	Sink
	Take(ctx context.Context, m msg.Message, r Replier, done func(error))
}

// Adapter is one chat channel.
type Adapter interface {
	// Name is the channel id ("onebot", "feishu", "webchat").
	Name() msg.ChannelID
	// Run owns the adapter's connections until ctx ends, feeding inbound
	// messages to sink.
	Run(ctx context.Context, sink Sink) error
	// Send delivers a payload outside any turn (operator sends, heartbeats).
	Send(ctx context.Context, out msg.Outbound) (msg.MessageID, error)
}

// SenderReplier is a Replier that ignores streaming and delivers through an
// adapter's Send; it suits channels that show only whole messages.
type SenderReplier struct {
	Adapter Adapter
}

// Partial implements Replier; whole-message channels ignore it.
func (SenderReplier) Partial(string) {}

// Deliver implements Replier.
func (s SenderReplier) Deliver(ctx context.Context, out msg.Outbound) (msg.MessageID, error) {
	return s.Adapter.Send(ctx, out)
}

// Acker is an adapter that can acknowledge a message it is about to
// answer, with a reaction, when its account is configured to. It is
// best-effort and never fails the turn.
type Acker interface {
	Ack(ctx context.Context, peer msg.Peer, id msg.MessageID)
}

// HistoryQuery asks for recent messages of a chat.
type HistoryQuery struct {
	// Count is how many messages, newest last.
	Count int
	// Before, when set, pages back from this message (included by some
	// platforms; callers drop it by id).
	Before msg.MessageID
}

// ErrHistoryUnsupported is returned (wrapped) by a HistoryFetcher whose
// platform has no way to read a chat's history; callers fall back to what
// pincer saw itself.
var ErrHistoryUnsupported = errors.New("the platform cannot read chat history")

// HistoryFetcher is an adapter that can read a chat's recent messages
// from the platform, for /summary and the agent's history tools.
type HistoryFetcher interface {
	History(ctx context.Context, peer msg.Peer, q HistoryQuery) ([]msg.Message, error)
}

// Fetcher is an adapter that can get what a message refers to: a quoted
// message, the messages of a merged forward.
type Fetcher interface {
	// FetchMessage returns the message with id.
	FetchMessage(ctx context.Context, id msg.MessageID) (msg.Message, error)
	// FetchForward returns the messages of a merged forward, oldest first.
	FetchForward(ctx context.Context, id msg.ForwardID) ([]msg.Message, error)
}

// Blob is downloaded content.
type Blob struct {
	Data []byte
	// MIME is the content type the platform or the content says; may be
	// empty when neither does.
	MIME string
	// Name is the file name, when known.
	Name string
}

// ErrTooLarge reports content over the size a download may take.
var ErrTooLarge = errors.New("content over the size limit")

// Downloader is an adapter that can fetch the content of an inbound
// attachment (an image, a voice note, a file) it decoded, by the URL and
// ids of its segment. Content over limit bytes fails with ErrTooLarge; a
// download never reads more than limit+1 bytes.
type Downloader interface {
	Download(ctx context.Context, a msg.Attachment, limit int64) (Blob, error)
}
