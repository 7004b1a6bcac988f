package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/store"
)

// CompactionPrompt is the system prompt of a compaction call.
const CompactionPrompt = "You compress conversations. Summarize the conversation below for your own later use: " +
	"keep facts, names, decisions, open questions, commitments and the user's preferences; drop small talk. " +
	"Write plain prose or short bullet points, in the conversation's language, at most about 400 words. " +
	"Output only the summary."

// KeepRecent is how many of the newest turns compaction keeps word for
// word.
const KeepRecent = 4

// ErrNothingToCompact is returned when the transcript is too short to
// compact.
var ErrNothingToCompact = errors.New("agent: nothing to compact")

// Compact summarizes all but the newest keepRecent turns of tr with the
// model. It returns the summary and the turns to keep after it.
func (r *Runner) Compact(ctx context.Context, models []llm.Ref, tr []store.Turn, keepRecent int) (string, []store.Turn, error) {
	if keepRecent < 0 {
		keepRecent = 0
	}
	cut := len(tr) - keepRecent
	// Never start the kept part with an assistant reply without its question.
	for cut > 0 && cut < len(tr) && tr[cut].Role != store.RoleUser {
		cut--
	}
	if cut <= 1 {
		return "", nil, ErrNothingToCompact
	}
	var b strings.Builder
	for _, t := range tr[:cut] {
		switch t.Role {
		case store.RoleUser, store.RoleAssistant, store.RoleSummary:
			fmt.Fprintf(&b, "%s: %s\n\n", t.Role, t.Text)
		}
	}
	out, err := r.Run(ctx, Input{
		Models:     models,
		System:     CompactionPrompt,
		Transcript: []store.Turn{{Role: store.RoleUser, Text: b.String()}},
	})
	if err != nil {
		return "", nil, fmt.Errorf("compact: %w", err)
	}
	summary := strings.TrimSpace(out.Text)
	if summary == "" {
		return "", nil, errors.New("compact: the model returned an empty summary")
	}
	return summary, tr[cut:], nil
}

// NeedsCompaction reports whether a transcript has grown past 80% of the
// room the context budget leaves beside the system prompt and the reply.
func (r *Runner) NeedsCompaction(system string, tr []store.Turn) bool {
	room := r.opts.ContextTokens - r.opts.MaxTokens - EstimateTokens(system)
	used := 0
	for _, m := range Messages(tr) {
		used += EstimateTokens(m.Text) + perMessageTokens
	}
	return used*10 > room*8
}
