package config

import (
	"encoding/json"
	"log/slog"
)

// Secret is a string that never prints: fmt, slog and JSON output show
// "[redacted]" (or nothing when empty). Use Value to read it.
type Secret string

const redacted = "[redacted]"

// Value returns the secret itself.
func (s Secret) Value() string { return string(s) }

// String hides the secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString hides the secret from %#v.
func (s Secret) GoString() string { return `config.Secret("` + s.String() + `")` }

// LogValue hides the secret from slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON hides the secret from JSON output.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads the secret; MarshalJSON's redaction is one-way.
func (s *Secret) UnmarshalJSON(b []byte) error {
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = Secret(v)
	return nil
}
