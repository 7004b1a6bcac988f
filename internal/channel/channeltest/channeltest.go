// Package channeltest is the conformance suite every chat channel adapter
// must pass: what a user sends on the platform reaches the sink
// normalized, once, and in order per chat; what the sink answers reaches
// the right chat on the platform, once, cut into chunks the adapter's
// limit allows; and an adapter says so with the documented error when it
// lacks a capability or is asked to send where it cannot.
//
// The suite drives an adapter through a Harness, which runs it against a
// simulated platform over the platform's real transport, and the Platform
// the harness returns, which plays the users' side and records what the
// bot sent. A platform that truly lacks something the suite asks for (the
// web chat has no groups and never redelivers) wraps ErrUnsupported, and
// the subtests that need it are skipped with that reason.
package channeltest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

// ErrUnsupported is wrapped by the Platform methods a platform cannot
// perform; the subtests that need them are skipped with the error's text
// as the reason.
var ErrUnsupported = errors.New("channeltest: the platform has no such capability")

// Harness runs one adapter against its platform's simulator.
type Harness interface {
	// Start runs the adapter against a fresh simulated platform, feeding
	// sink, and returns the platform once the adapter takes messages. The
	// adapter and the platform stop when the test ends.
	Start(t *testing.T, sink channel.Taker) Platform
}

// KnownDefects is a Harness whose adapter fails some of the suite's
// subtests for defects not fixed yet: Run skips each subtest it names
// with "known defect: " and the reason, so the rest of the suite goes on
// guarding the adapter. A name is the subtest's path below the test that
// calls Run: "CapabilityErrors/Unreachable/direct:".
type KnownDefects interface {
	Harness
	KnownDefects() map[string]string
}

// Platform is one adapter's simulated platform: its users' side, and what
// it received from the bot. Its methods are safe for concurrent use.
type Platform interface {
	// Adapter is the adapter under test.
	Adapter() channel.Adapter
	// Account is the account the adapter was configured with.
	Account() msg.AccountID
	// Bot is the bot's user id as the adapter lists it in
	// msg.Message.Mentions; empty on a platform without mentions.
	Bot() msg.UserID
	// ChunkLimit is the most characters the adapter was configured to put
	// in one message, at least 20 (the suite's short texts fit whole); 0
	// when it sends a reply of any length whole.
	ChunkLimit() int
	// Chats makes n new chats of kind, each with a user of its own. It
	// wraps ErrUnsupported when the platform has no chats of that kind.
	Chats(ctx context.Context, kind msg.PeerKind, n int) ([]Chat, error)
	// Inject makes in.Chat's user send in, and returns once the platform
	// has handed it to the adapter: a message injected after another in
	// the same chat reaches the adapter after it.
	Inject(ctx context.Context, in Inbound) (Posted, error)
	// Redeliver delivers p again in each way the platform's retries do,
	// and returns once those deliveries have been handed to the adapter.
	// It wraps ErrUnsupported when the platform never delivers a message
	// twice.
	Redeliver(ctx context.Context, p Posted) error
	// Sent returns the text of each message the platform received from
	// the bot in chat so far, oldest first, and a channel closed when more
	// arrive.
	Sent(chat Chat) (texts []string, more <-chan struct{})
	// Unreachable lists peers the adapter must refuse to send to: chats
	// the platform does not have, and ids no chat of it can have.
	Unreachable() []msg.Peer
}

// Dropper is a Platform that can drop the adapter's connection, as a
// platform that restarts its gateway does; the Reconnect subtest is
// skipped for a platform that is not one.
type Dropper interface {
	// Drop closes the adapter's connection and returns once the adapter
	// has connected again.
	Drop(ctx context.Context) error
}

// Chat is a conversation on the platform and the user who speaks in it.
type Chat struct {
	// Peer is the chat as the adapter names it.
	Peer msg.Peer
	// User is the user who speaks in it, as the adapter names senders.
	User msg.UserID
	// History reports whether the adapter can read the chat's history
	// from the platform; when it cannot, an adapter that is a
	// channel.HistoryFetcher must say so with
	// channel.ErrHistoryUnsupported.
	History bool
}

// Inbound is a message a user sends.
type Inbound struct {
	Chat Chat
	Text string
	// MentionBot puts a mention of the bot before Text, as the
	// platform's clients do.
	MentionBot bool
}

// Posted is a message the platform handed to the adapter.
type Posted struct {
	Inbound
	// ID is the platform's id of the message, as the adapter reports it.
	ID msg.MessageID
	// Ref is what the platform needs to deliver the message again.
	Ref any
}

// Run runs the conformance suite against the adapter h starts; each
// subtest starts it afresh.
func Run(t *testing.T, h Harness) {
	if kd, ok := h.(KnownDefects); ok {
		h = marked{Harness: h, base: t.Name(), defects: kd.KnownDefects()}
	}
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"Normalize", testNormalize},
		{"Dedup", testDedup},
		{"OrderPerChat", testOrder},
		{"Deliver", testDeliver},
		{"Chunk", testChunk},
		{"CapabilityErrors", testCapabilities},
		{"Reconnect", testReconnect},
	}
	for _, tt := range tests {
		subtest(t, h, tt.name, func(t *testing.T) { tt.fn(t, h) })
	}
}

// marked is a harness with its known defects, by subtest path below
// base, the test that called Run.
type marked struct {
	Harness
	base    string
	defects map[string]string
}

// subtest runs fn as the subtest name of t, unless h marks it as failing
// for a known defect.
func subtest(t *testing.T, h Harness, name string, fn func(*testing.T)) {
	t.Run(name, func(t *testing.T) {
		if m, ok := h.(marked); ok {
			if why, ok := m.defects[strings.TrimPrefix(t.Name(), m.base+"/")]; ok {
				t.Skip("known defect: " + why)
			}
		}
		fn(t)
	})
}
