package config

import "github.com/pincerbot/pincer/internal/texts"

// UI configures what pincer shows a person.
type UI struct {
	// Locale is the language of command answers in chats, a direct chat's
	// failure notices, the web chat page and the dashboard: "zh-CN" (the
	// default) or "en". What the agent sees does not change with it.
	Locale string `json:"locale"`
}

// Validate checks the ui section.
func (u UI) Validate() error {
	locales := texts.Locales()
	allowed := make([]string, len(locales))
	for i, l := range locales {
		allowed[i] = string(l)
	}
	return oneOf("locale", u.Locale, allowed...)
}

// TextLocale is the configured locale, for the components that show texts.
func (u UI) TextLocale() texts.Locale { return texts.Locale(u.Locale) }
