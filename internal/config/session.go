package config

// Session configures session lifetimes.
type Session struct {
	// IdleResetMs starts a new session when a chat was quiet this long;
	// 0 never does.
	IdleResetMs int `json:"idleResetMs"`
	// AutoCompact summarizes older turns when a transcript nears the
	// model's context budget, instead of silently dropping them.
	AutoCompact bool `json:"autoCompact"`
}

// Validate checks the session section.
func (s Session) Validate() error {
	if s.IdleResetMs < 0 {
		return problem("idleResetMs", "must not be negative")
	}
	return nil
}
