package config

import (
	"errors"
	"time"
)

// Messages configures how messages are handled around agent turns.
type Messages struct {
	// ResponsePrefix is prepended to every reply; {model}, {provider},
	// {thinkingLevel} and {identity} are filled in.
	ResponsePrefix string `json:"responsePrefix"`
	// Inbound configures the merging of message bursts and the dropping
	// of redelivered messages.
	Inbound Inbound `json:"inbound"`
	// Queue says what happens to messages sent while a reply is running.
	Queue Queue `json:"queue"`
	// Outbox keeps replies until the platform confirmed them.
	Outbox Outbox `json:"outbox"`
}

// Validate checks the messages section.
func (m Messages) Validate() error {
	return errors.Join(nest("inbound", m.Inbound.Validate()), nest("queue", m.Queue.Validate()), nest("outbox", m.Outbox.Validate()))
}

// Queue configures the per-session queue. A session's /queue setting wins
// over ByChannel, which wins over Mode.
type Queue struct {
	// Mode is steer, followup, collect or interrupt.
	Mode string `json:"mode"`
	// Cap bounds the messages waiting per session.
	Cap int `json:"cap"`
	// Drop is what a full queue gives up: old, new or summarize.
	Drop string `json:"drop"`
	// DebounceMs is how long a collect turn waits for quiet.
	DebounceMs int `json:"debounceMs"`
	// ByChannel overrides Mode per channel id.
	ByChannel map[string]string `json:"byChannel"`
}

var queueModes = []string{"steer", "followup", "collect", "interrupt"}

// Validate checks the queue section.
func (q Queue) Validate() error {
	var errs []error
	errs = append(errs, oneOf("mode", q.Mode, queueModes...))
	for ch, m := range q.ByChannel {
		errs = append(errs, oneOf("byChannel."+ch, m, queueModes...))
	}
	if q.Cap < 1 {
		errs = append(errs, problem("cap", "must be at least 1"))
	}
	errs = append(errs, oneOf("drop", q.Drop, "old", "new", "summarize"))
	if q.DebounceMs < 0 {
		errs = append(errs, problem("debounceMs", "must not be negative"))
	}
	return errors.Join(errs...)
}

// Inbound merges a sender's burst of web chat messages into one turn,
// drops messages delivered again, and bounds how much of one message is
// read. Only the web chat is debounced here: QQ and Feishu merge bursts in
// their receive pipelines (channels.<channel>.receive.realtime), whose
// windows are stored before they hold a message.
type Inbound struct {
	// DebounceMs is the web chat's quiet window; 0 turns merging off.
	DebounceMs int `json:"debounceMs"`
	// MaxWaitMs caps a burst from its first message; 0 means 5 x the
	// window.
	MaxWaitMs int `json:"maxWaitMs"`
	// ByChannel overrides DebounceMs per channel id; webchat is the one
	// channel it takes.
	ByChannel map[string]int `json:"byChannel"`
	// DedupTTLMs is how long an inbound message id is remembered, so that
	// a message delivered again is not answered twice. At least 1.
	DedupTTLMs int `json:"dedupTtlMs"`
	// MaxChars is the most characters of one inbound message that reach
	// the agent; the rest is cut and （已截断） appended. At least 1.
	MaxChars int `json:"maxChars"`
	// Queue bounds the inbound messages waiting to be taken in, all chats
	// together. A full queue stops reading from the platform (which
	// buffers) and answers event POSTs 503 (which are retried): nothing is
	// dropped and memory stays flat. At least 16.
	Queue int `json:"queue"`
}

// defaultInboundQueue is the default of Inbound.Queue.
const defaultInboundQueue = 1024

// QueueOrDefault returns Queue, the default of 1024 when it is unset.
func (in Inbound) QueueOrDefault() int {
	if in.Queue == 0 {
		return defaultInboundQueue
	}
	return in.Queue
}

// defaultDedupTTLMs is the default of Inbound.DedupTTLMs: 20 minutes.
const defaultDedupTTLMs = 1200000

// defaultInboundMaxChars is the default of Inbound.MaxChars.
const defaultInboundMaxChars = 20000

// MaxCharsOrDefault returns MaxChars, the default of 20000 when it is
// unset.
func (in Inbound) MaxCharsOrDefault() int {
	if in.MaxChars == 0 {
		return defaultInboundMaxChars
	}
	return in.MaxChars
}

// DedupTTL returns DedupTTLMs as a duration, the default of 20 minutes
// when it is unset.
func (in Inbound) DedupTTL() time.Duration {
	if in.DedupTTLMs == 0 {
		return ms(defaultDedupTTLMs)
	}
	return ms(in.DedupTTLMs)
}

// debouncedChannel is the one channel whose bursts Inbound merges.
const debouncedChannel = "webchat"

// WebchatWindow returns the web chat's quiet window: ByChannel's webchat
// entry, else DebounceMs; 0 when its bursts are not merged.
func (in Inbound) WebchatWindow() time.Duration {
	if v, ok := in.ByChannel[debouncedChannel]; ok {
		return ms(v)
	}
	return ms(in.DebounceMs)
}

// realtimeChannels name, by channel id, the channels that merge bursts in
// their receive pipelines instead.
var realtimeChannels = map[string]string{"onebot": "QQ", "feishu": "Feishu"}

// Validate checks the inbound section.
func (in Inbound) Validate() error {
	var errs []error
	if in.DebounceMs < 0 {
		errs = append(errs, problem("debounceMs", "must not be negative"))
	}
	if in.MaxWaitMs < 0 {
		errs = append(errs, problem("maxWaitMs", "must not be negative"))
	}
	if in.DedupTTLMs < 1 {
		errs = append(errs, problem("dedupTtlMs", "must be at least 1, got %d", in.DedupTTLMs))
	}
	if in.MaxChars < 1 {
		errs = append(errs, problem("maxChars", "must be at least 1, got %d", in.MaxChars))
	}
	if in.Queue < 16 {
		errs = append(errs, problem("queue", "must be at least 16, got %d", in.Queue))
	}
	for ch, v := range in.ByChannel {
		key := "byChannel." + ch
		switch name, ok := realtimeChannels[ch]; {
		case ok:
			errs = append(errs, problem(key, "has no effect: %s merges bursts in channels.%s.receive.realtime (windowMs, maxWindowMs); set those instead", name, ch))
		case ch != debouncedChannel:
			errs = append(errs, problem(key, "unknown channel %q: only webchat is debounced here (QQ and Feishu merge bursts in channels.onebot.receive.realtime and channels.feishu.receive.realtime)", ch))
		case v < 0:
			errs = append(errs, problem(key, "must not be negative"))
		}
	}
	if w := in.WebchatWindow(); in.MaxWaitMs > 0 && w > 0 && ms(in.MaxWaitMs) < w {
		errs = append(errs, crossProblem("maxWaitMs", []string{"debounceMs", "byChannel." + debouncedChannel}, "must not be below the web chat's quiet window (%d)", w.Milliseconds()))
	}
	return errors.Join(errs...)
}

// validateWebchat refuses the debounce settings that do nothing: any of
// them while the web chat is off, and maxWaitMs while its bursts are not
// merged.
func (in Inbound) validateWebchat(w Webchat) error {
	var errs []error
	if !w.Enabled {
		off := func(key string) {
			errs = append(errs, &FieldError{
				Path:   key,
				Msg:    "has no effect while channels.webchat.enabled is false: only the web chat is debounced here (QQ and Feishu merge bursts in channels.<channel>.receive.realtime); remove it or enable the web chat",
				rooted: []string{"channels.webchat.enabled"},
			})
		}
		if in.DebounceMs > 0 {
			off("debounceMs")
		}
		if in.ByChannel[debouncedChannel] > 0 {
			off("byChannel." + debouncedChannel)
		}
		if in.MaxWaitMs > 0 {
			off("maxWaitMs")
		}
		return errors.Join(errs...)
	}
	if in.MaxWaitMs > 0 && in.WebchatWindow() <= 0 {
		errs = append(errs, crossProblem("maxWaitMs", []string{"debounceMs", "byChannel." + debouncedChannel},
			"has no effect: the web chat's bursts are not merged (debounceMs and byChannel.webchat are 0)"))
	}
	return errors.Join(errs...)
}
