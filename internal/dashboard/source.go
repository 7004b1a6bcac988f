package dashboard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// Source gives the dashboard what the decision trace does not hold: the
// state of accounts and queues, the configuration check and a chat's
// buffers and session. The gateway implements it. Its methods are called
// from HTTP handlers, so they must be safe for concurrent use and must not
// block for long; ctx ends with the request.
type Source interface {
	// Status reports how pincer is as a whole.
	Status(ctx context.Context) Status
	// Chat reports what pincer holds about one chat, named as
	// "channel:account:peer" (see ParseChat). A chat pincer knows nothing
	// about is an error wrapping ErrNoChat, answered 404.
	Chat(ctx context.Context, chat string) (ChatView, error)
}

// ErrNoChat is wrapped by Source.Chat for a chat pincer does not know.
var ErrNoChat = errors.New("no such chat")

// Status is how pincer is as a whole.
type Status struct {
	// Version is pincer's version (a tag or a commit).
	Version string `json:"version,omitempty"`
	// Started is when pincer started.
	Started  time.Time `json:"started,omitzero"`
	Accounts []Account `json:"accounts"`
	Queues   []Queue   `json:"queues"`
	// Errors are recent error log lines, newest first (ErrorLog.Lines).
	Errors []ErrorLine `json:"errors"`
	Config ConfigCheck `json:"config"`
	// Tokens is today's model token use; nil when it is not counted.
	Tokens *Tokens `json:"tokens,omitempty"`
}

// Tokens is the model tokens (input and output) spent on one day by the
// people and the chats that spent the most, most first.
type Tokens struct {
	// Day is the day, "2006-01-02" in the envelope's timezone.
	Day string `json:"day"`
	// Users are named "channel:user id", Chats "channel:account:peer".
	Users []TokenCount `json:"users"`
	Chats []TokenCount `json:"chats"`
}

// TokenCount is what one person or chat spent.
type TokenCount struct {
	Key    string `json:"key"`
	Tokens int64  `json:"tokens"`
}

// Account states.
const (
	StateConnected  = "connected"
	StateConnecting = "connecting"
	StateWaiting    = "waiting" // for the platform to call in, or to retry
	StateFailed     = "failed"
	StateStopped    = "stopped"
	// StateRefused: the platform refused the account (its credentials,
	// or too many connections); Hint says what to do.
	StateRefused = "refused"
)

// Account is one account of a channel, as its adapter reports it.
type Account struct {
	Channel string `json:"channel"`
	ID      string `json:"id"`
	// State is one of the State constants, or another word the adapter
	// chose.
	State string `json:"state"`
	// Self is the bot's own user id on the platform; Name its display
	// name.
	Self string `json:"self,omitempty"`
	Name string `json:"name,omitempty"`
	// Implementation and Version name the software on the other end (a
	// OneBot implementation such as NapCat and its version).
	Implementation string `json:"implementation,omitempty"`
	Version        string `json:"version,omitempty"`
	// LastError is the adapter's last error, without secrets, and when it
	// happened.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	// Hint says what the operator can do about the account's state (a
	// refused app's fix); empty when nothing.
	Hint string `json:"hint,omitempty"`
	// LastPong is when the account's connection last answered a ping,
	// where the adapter knows (Feishu's long connection).
	LastPong time.Time `json:"last_pong,omitzero"`
}

// Queue is one of pincer's bounded queues.
type Queue struct {
	Name     string `json:"name"`
	Depth    int    `json:"depth"`
	Capacity int    `json:"capacity"`
}

// ConfigCheck is the result of checking the configuration (pincer check).
type ConfigCheck struct {
	OK       bool     `json:"ok"`
	Warnings []string `json:"warnings"`
	Errors   []string `json:"errors"`
}

// ChatView is what pincer holds about one chat.
type ChatView struct {
	Chat string `json:"chat"`
	// History is the chat's buffered history, oldest first: the lines the
	// agent sees as context on its next trigger.
	History []Line `json:"history"`
	// Window is the open realtime window, nil when none is open.
	Window *Window `json:"window,omitempty"`
	// Session is the agent session of the chat, nil when there is none.
	Session *Session `json:"session,omitempty"`
	// Digests are the chat's recent digests and summaries, newest first.
	Digests []Digest `json:"digests"`
	// Settings are the chat's effective settings, each with the layer of
	// the configuration it came from (as pincer config explain shows
	// them); empty for a chat without such settings (the web chat).
	Settings []Setting `json:"settings"`
}

// Setting is one effective setting of a chat: its key path, its value as
// JSON and the layer that set it.
type Setting struct {
	Path  string `json:"path"`
	Value string `json:"value"`
	Layer string `json:"layer"`
}

// Line is one buffered message.
type Line struct {
	At     time.Time `json:"at"`
	Sender string    `json:"sender"`
	Text   string    `json:"text"`
}

// Window is an open realtime window.
type Window struct {
	Opened time.Time `json:"opened"`
	// Messages is how many messages it holds.
	Messages int `json:"messages"`
	// Closes is when it flushes unless more arrive; zero when unknown.
	Closes time.Time `json:"closes,omitzero"`
}

// Session is an agent session.
type Session struct {
	Key     string    `json:"key"`
	Model   string    `json:"model,omitempty"`
	Turns   int       `json:"turns"`
	Updated time.Time `json:"updated,omitzero"`
}

// Digest is a digest or summary made of a chat.
type Digest struct {
	At   time.Time `json:"at"`
	Text string    `json:"text"`
}

// ParseChat splits a chat name "channel:account:peer" (as trace.ChatOf
// writes it, the peer being "kind:id") into its parts.
func ParseChat(chat string) (msg.ChannelID, msg.AccountID, msg.Peer, error) {
	parts := strings.SplitN(chat, ":", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return "", "", msg.Peer{}, fmt.Errorf("chat %q: want channel:account:kind:id", chat)
	}
	peer, err := msg.ParsePeer(parts[2])
	if err != nil {
		return "", "", msg.Peer{}, fmt.Errorf("chat %q: %w", chat, err)
	}
	return msg.ChannelID(parts[0]), msg.AccountID(parts[1]), peer, nil
}
