package config

import "errors"

// Session configures session lifetimes.
type Session struct {
	// IdleResetMs starts a new session when a chat was quiet this long;
	// 0 never does.
	IdleResetMs int `json:"idleResetMs"`
	// AutoCompact summarizes older turns when a transcript nears the
	// model's context budget, instead of silently dropping them.
	AutoCompact bool `json:"autoCompact"`
	// DMScope is per-peer (each direct chat its own session) or main (all
	// direct chats share the agent's main session).
	DMScope string `json:"dmScope"`
	// GroupScope is per-group or main.
	GroupScope string `json:"groupScope"`
}

// Validate checks the session section.
func (s Session) Validate() error {
	var errs []error
	if s.IdleResetMs < 0 {
		errs = append(errs, problem("idleResetMs", "must not be negative"))
	}
	errs = append(errs, oneOf("dmScope", s.DMScope, "per-peer", "main"), oneOf("groupScope", s.GroupScope, "per-group", "main"))
	return errors.Join(errs...)
}
