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
	// Inbound configures the merging of message bursts.
	Inbound Inbound `json:"inbound"`
}

// Validate checks the messages section.
func (m Messages) Validate() error { return nest("inbound", m.Inbound.Validate()) }

// Inbound merges a sender's burst of text messages into one turn.
type Inbound struct {
	// DebounceMs is the quiet window; 0 turns merging off.
	DebounceMs int `json:"debounceMs"`
	// MaxWaitMs caps a burst from its first message; 0 means 5 x DebounceMs.
	MaxWaitMs int `json:"maxWaitMs"`
	// ByChannel overrides DebounceMs per channel id.
	ByChannel map[string]int `json:"byChannel"`
}

// Window returns the quiet window of a channel.
func (in Inbound) Window(channel string) time.Duration {
	if v, ok := in.ByChannel[channel]; ok {
		return ms(v)
	}
	return ms(in.DebounceMs)
}

// Enabled reports whether any channel is debounced.
func (in Inbound) Enabled() bool {
	if in.DebounceMs > 0 {
		return true
	}
	for _, v := range in.ByChannel {
		if v > 0 {
			return true
		}
	}
	return false
}

// Validate checks the inbound section.
func (in Inbound) Validate() error {
	var errs []error
	if in.DebounceMs < 0 {
		errs = append(errs, problem("debounceMs", "must not be negative"))
	}
	if in.MaxWaitMs < 0 {
		errs = append(errs, problem("maxWaitMs", "must not be negative"))
	}
	for ch, v := range in.ByChannel {
		if v < 0 {
			errs = append(errs, problem("byChannel."+ch, "must not be negative"))
		}
	}
	return errors.Join(errs...)
}
