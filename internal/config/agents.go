package config

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Agents configures agents; only defaults exist so far.
type Agents struct {
	Defaults AgentDefaults `json:"defaults"`
}

// Validate checks agent settings against the configured providers.
func (a Agents) Validate(models *Models) error {
	return nest("defaults", a.Defaults.Validate(models))
}

// ModelChoice names the primary model and its fallbacks as provider/model
// refs.
type ModelChoice struct {
	Primary   string   `json:"primary"`
	Fallbacks []string `json:"fallbacks"`
}

// AgentDefaults are the settings every agent starts from.
type AgentDefaults struct {
	// Model is the model chain. An empty primary selects the preview agent,
	// which shows what a model would have been sent.
	Model ModelChoice `json:"model"`
	// ImageModel describes pictures in text for a model that cannot see
	// them (primary, then fallbacks); empty: such a model is told there is
	// a picture it cannot see. Models that see images never use it.
	ImageModel ModelChoice `json:"imageModel"`
	// FirstTokenTimeoutMs is how long a model call may go without producing
	// anything (no text, reasoning or tool call) before it is abandoned and
	// the next attempt or model of the chain is tried. At least 1000.
	FirstTokenTimeoutMs int `json:"firstTokenTimeoutMs"`
	// TurnTimeoutMs bounds one reply: its model calls, retries, fallbacks
	// and tools together. At least 1000.
	TurnTimeoutMs int `json:"turnTimeoutMs"`
	// Workspace is the agent's directory; SYSTEM.md and AGENTS.md there are
	// added to the system prompt.
	Workspace string `json:"workspace"`
	// SystemPrompt is prepended to the workspace files.
	SystemPrompt string `json:"systemPrompt"`
	// Identity is the agent's name, used by the {identity} reply prefix.
	Identity string `json:"identity"`
	// MaxTokens caps one model reply.
	MaxTokens int `json:"maxTokens"`
	// ContextTokens is the model context budget the transcript is fitted to.
	ContextTokens int `json:"contextTokens"`
	// HumanDelay paces streamed blocks.
	HumanDelay HumanDelay `json:"humanDelay"`
	// BlockStreaming sends long replies as several messages while the
	// model is still writing, on channels that do not show live text.
	BlockStreaming BlockStreaming `json:"blockStreaming"`
	// Envelope sets how message timestamps are shown to the agent.
	Envelope Envelope `json:"envelope"`
	// MaxConcurrent bounds agent runs across all sessions.
	MaxConcurrent int `json:"maxConcurrent"`
	// Heartbeat schedules check-in turns in the conversation last heard
	// from.
	Heartbeat Heartbeat `json:"heartbeat"`
}

// Heartbeat configures check-in turns.
type Heartbeat struct {
	// EveryMs is the interval; 0 (the default) turns interval heartbeats
	// off.
	EveryMs int `json:"everyMs"`
	// Cron, instead of EveryMs, is a five-field cron schedule such as
	// "0 9 * * 1-5", in the envelope timezone.
	Cron string `json:"cron"`
	// Prompt replaces the built-in heartbeat message.
	Prompt string `json:"prompt"`
	// Model, as provider/model, runs heartbeats on a model of their own.
	Model string `json:"model"`
}

// Validate checks the heartbeat against the configured providers.
func (h Heartbeat) Validate(models *Models) error {
	var errs []error
	if h.EveryMs < 0 {
		errs = append(errs, problem("everyMs", "must not be negative"))
	} else if h.EveryMs > 0 && h.EveryMs < 60000 {
		errs = append(errs, problem("everyMs", "must be at least 60000 (one minute), got %d", h.EveryMs))
	}
	if h.Cron != "" {
		if h.EveryMs > 0 {
			errs = append(errs, problem("cron", "set either everyMs or cron, not both"))
		}
		if _, err := cron.ParseStandard(h.Cron); err != nil {
			errs = append(errs, problem("cron", "%v", err))
		}
	}
	if h.Model != "" {
		errs = append(errs, models.checkRef("model", h.Model))
	}
	return errors.Join(errs...)
}

// defaultFirstTokenTimeoutMs is the default of
// AgentDefaults.FirstTokenTimeoutMs.
const defaultFirstTokenTimeoutMs = 30000

// FirstTokenTimeout returns FirstTokenTimeoutMs as a duration, the default
// of 30 s when it is unset.
func (d AgentDefaults) FirstTokenTimeout() time.Duration {
	if d.FirstTokenTimeoutMs == 0 {
		return ms(defaultFirstTokenTimeoutMs)
	}
	return ms(d.FirstTokenTimeoutMs)
}

// defaultTurnTimeoutMs is the default of AgentDefaults.TurnTimeoutMs.
const defaultTurnTimeoutMs = 600000

// TurnTimeout returns TurnTimeoutMs as a duration, 10 min when unset.
func (d AgentDefaults) TurnTimeout() time.Duration {
	if d.TurnTimeoutMs == 0 {
		return ms(defaultTurnTimeoutMs)
	}
	return ms(d.TurnTimeoutMs)
}

// Validate checks model refs and limits.
func (d AgentDefaults) Validate(models *Models) error {
	var errs []error
	check := func(path, ref string) { errs = append(errs, models.checkRef(path, ref)) }
	if d.Model.Primary != "" {
		check("model.primary", d.Model.Primary)
	} else if len(d.Model.Fallbacks) > 0 {
		errs = append(errs, problem("model.primary", "required when fallbacks are set"))
	}
	for i, ref := range d.Model.Fallbacks {
		check(fmt.Sprintf("model.fallbacks[%d]", i), ref)
	}
	if d.ImageModel.Primary != "" {
		check("imageModel.primary", d.ImageModel.Primary)
	} else if len(d.ImageModel.Fallbacks) > 0 {
		errs = append(errs, problem("imageModel.primary", "required when fallbacks are set"))
	}
	for i, ref := range d.ImageModel.Fallbacks {
		check(fmt.Sprintf("imageModel.fallbacks[%d]", i), ref)
	}
	if strings.TrimSpace(d.Workspace) == "" {
		errs = append(errs, problem("workspace", "must not be empty"))
	}
	if d.MaxTokens <= 0 {
		errs = append(errs, problem("maxTokens", "must be positive"))
	}
	if d.ContextTokens <= d.MaxTokens {
		errs = append(errs, crossProblem("contextTokens", []string{"maxTokens"}, "must exceed maxTokens (%d)", d.MaxTokens))
	}
	if d.MaxConcurrent < 1 {
		errs = append(errs, problem("maxConcurrent", "must be at least 1"))
	}
	if d.FirstTokenTimeoutMs < 1000 {
		errs = append(errs, problem("firstTokenTimeoutMs", "must be at least 1000 (one second), got %d", d.FirstTokenTimeoutMs))
	}
	if d.TurnTimeoutMs < 1000 {
		errs = append(errs, problem("turnTimeoutMs", "must be at least 1000 (one second), got %d", d.TurnTimeoutMs))
	}
	errs = append(errs,
		nest("heartbeat", d.Heartbeat.Validate(models)),
		nest("humanDelay", d.HumanDelay.Validate()),
		nest("blockStreaming", d.BlockStreaming.Validate()),
		nest("envelope", d.Envelope.Validate()))
	return errors.Join(errs...)
}

// HumanDelay is the pause between streamed blocks.
type HumanDelay struct {
	// Mode is off, natural (800–2500 ms) or custom (minMs–maxMs).
	Mode  string `json:"mode"`
	MinMs int    `json:"minMs"`
	MaxMs int    `json:"maxMs"`
}

// Range returns the delay range the mode selects; zero for off.
func (h HumanDelay) Range() (lo, hi time.Duration) {
	switch h.Mode {
	case "natural":
		return 800 * time.Millisecond, 2500 * time.Millisecond
	case "custom":
		return ms(h.MinMs), ms(h.MaxMs)
	}
	return 0, 0
}

// Validate checks the human delay.
func (h HumanDelay) Validate() error {
	var errs []error
	errs = append(errs, oneOf("mode", h.Mode, "off", "natural", "custom"))
	if h.MinMs < 0 || h.MaxMs < h.MinMs {
		errs = append(errs, crossProblem("maxMs", []string{"minMs"}, "want 0 <= minMs <= maxMs, got %d and %d", h.MinMs, h.MaxMs))
	}
	return errors.Join(errs...)
}

// BlockStreaming cuts a streaming reply into several messages.
type BlockStreaming struct {
	Enabled bool `json:"enabled"`
	// MinChars is the smallest block sent before the reply ends.
	MinChars int `json:"minChars"`
	// MaxChars is the largest block.
	MaxChars int `json:"maxChars"`
	// BreakOn is the preferred cut: paragraph, newline or sentence.
	BreakOn string `json:"breakOn"`
	// IdleMs sends buffered text once the model pauses this long.
	IdleMs int `json:"idleMs"`
}

// Validate checks block streaming.
func (b BlockStreaming) Validate() error {
	var errs []error
	if b.MinChars < 1 || b.MaxChars < b.MinChars {
		errs = append(errs, crossProblem("maxChars", []string{"minChars"}, "want 1 <= minChars <= maxChars, got %d and %d", b.MinChars, b.MaxChars))
	}
	errs = append(errs, oneOf("breakOn", b.BreakOn, "paragraph", "newline", "sentence"))
	if b.IdleMs < 0 {
		errs = append(errs, problem("idleMs", "must not be negative"))
	}
	return errors.Join(errs...)
}

// Envelope sets the timezone of envelope timestamps.
type Envelope struct {
	// Timezone is local, utc, user (UserTimezone) or an IANA name such as
	// Asia/Shanghai.
	Timezone string `json:"timezone"`
	// UserTimezone is the IANA zone of the "user" mode.
	UserTimezone string `json:"userTimezone"`
}

// Location resolves the envelope's timezone.
func (e Envelope) Location() (*time.Location, error) {
	switch e.Timezone {
	case "", "local":
		return time.Local, nil
	case "utc":
		return time.UTC, nil
	case "user":
		if e.UserTimezone == "" {
			return nil, errors.New("timezone user needs userTimezone")
		}
		return time.LoadLocation(e.UserTimezone)
	}
	return time.LoadLocation(e.Timezone)
}

// Validate checks that the timezone resolves.
func (e Envelope) Validate() error {
	if _, err := e.Location(); err != nil {
		return crossProblem("timezone", []string{"userTimezone"}, "%v", err)
	}
	return nil
}
