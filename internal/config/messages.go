package config

// Messages configures how messages are handled around agent turns.
type Messages struct {
	// ResponsePrefix is prepended to every reply; {model}, {provider},
	// {thinkingLevel} and {identity} are filled in.
	ResponsePrefix string `json:"responsePrefix"`
}

// Validate checks the messages section.
func (m Messages) Validate() error { return nil }
