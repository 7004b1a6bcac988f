// Package preview is the llm.Provider pincer uses when no model is
// configured: it streams back a labelled rendering of exactly what the agent
// would have sent a model, so the whole pipeline can be seen without a key.
package preview

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/pincerbot/pincer/internal/llm"
)

// ID is the provider id of the preview agent; its model ref is
// "preview/echo".
const ID = "preview"

// Ref is the model ref the preview agent answers to.
var Ref = llm.Ref{Provider: ID, Model: "echo"}

// Provider is the preview llm.Provider.
type Provider struct{}

var _ llm.Provider = Provider{}

// ID implements llm.Provider.
func (Provider) ID() string { return ID }

// Stream implements llm.Provider: it yields Render(req) line by line.
func (Provider) Stream(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		text := Render(req)
		for line := range strings.Lines(text) {
			if err := ctx.Err(); err != nil {
				yield(llm.Event{}, llm.Transport(ID, req.Model, ctx, err))
				return
			}
			if !yield(llm.Event{Kind: llm.EventText, Text: line}, nil) {
				return
			}
		}
		yield(llm.Event{Kind: llm.EventDone, StopReason: "preview"}, nil)
	}
}

// Render returns the labelled preview of req.
func Render(req llm.Request) string {
	var b strings.Builder
	b.WriteString("[pincer preview] No model is configured, so here is exactly what the agent would have been sent.\n")
	section(&b, "System prompt")
	if req.System == "" {
		b.WriteString("(empty)\n")
	} else {
		b.WriteString(req.System)
		newline(&b)
	}
	history, current := req.Messages, llm.Message{}
	if n := len(history); n > 0 && history[n-1].Role == llm.RoleUser {
		history, current = history[:n-1], history[n-1]
	}
	section(&b, fmt.Sprintf("Context: %d earlier %s", len(history), plural(len(history), "message", "messages")))
	for _, m := range history {
		fmt.Fprintf(&b, "%s: %s", m.Role, m.Text)
		newline(&b)
		images(&b, m)
	}
	section(&b, "User message")
	b.WriteString(current.Text)
	newline(&b)
	images(&b, current)
	section(&b, "End of preview")
	b.WriteString("To get real replies, configure a provider under models.providers and set agents.defaults.model.primary (see `pincer config example`).\n")
	return b.String()
}

// images writes a line for each image a user message shows the model.
func images(b *strings.Builder, m llm.Message) {
	if m.Role != llm.RoleUser {
		return
	}
	for _, img := range m.Images {
		fmt.Fprintf(b, "[image %s, %d bytes]\n", img.MIME, len(img.Data))
	}
}

func section(b *strings.Builder, title string) {
	fmt.Fprintf(b, "\n=== %s ===\n", title)
}

func newline(b *strings.Builder) {
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
