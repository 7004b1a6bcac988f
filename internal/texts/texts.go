// Package texts holds the texts pincer shows a person — command answers in
// chats, a direct chat's failure notices, the web chat page and the
// dashboard — once per locale, in one table each (zh.go, en.go). Callers
// name a text by its Key and get it in the Locale the configuration chose
// (ui.locale); Chinese is the default.
//
// The texts the agent sees, which the specifications fix, are not here:
// they belong to the packages that build prompts and stay as they are.
package texts

import (
	"encoding/json"
	"fmt"
)

// Locale names a language the texts come in.
type Locale string

// The locales pincer speaks.
const (
	ZhCN Locale = "zh-CN"
	EN   Locale = "en"
)

// Default is the locale of a configuration that names none.
const Default = ZhCN

// Locales lists the supported locales, the default first.
func Locales() []Locale { return []Locale{ZhCN, EN} }

// Key names one text. Its value is the name pages use for it.
type Key string

var tables = map[Locale]map[Key]string{ZhCN: zh, EN: en}

// Valid reports whether l is a supported locale. The zero Locale is not
// valid, but it reads as Default everywhere else.
func (l Locale) Valid() bool {
	_, ok := tables[l]
	return ok
}

// Tag is l as an HTML lang attribute: Default's for an unknown or empty
// locale.
func (l Locale) Tag() string {
	if !l.Valid() {
		return string(Default)
	}
	return string(l)
}

// Text returns the text of k in l.
func (l Locale) Text(k Key) string {
	if s, ok := tables[Locale(l.Tag())][k]; ok {
		return s
	}
	return string(k) // not reached: a test holds every table to every key
}

// Format returns the text of k in l with args in place of its verbs, as
// fmt.Sprintf does.
func (l Locale) Format(k Key, args ...any) string {
	return fmt.Sprintf(l.Text(k), args...)
}

// Lookup returns the text named name in l, for pages that name their
// texts in markup.
func (l Locale) Lookup(name string) (string, bool) {
	s, ok := tables[Locale(l.Tag())][Key(name)]
	return s, ok
}

// PageFields answers the fields of a page in l (see package htmlpage):
// those in fields first, then Lang (l's tag), Texts (the texts of script,
// as JSON) and any text by its key.
func (l Locale) PageFields(fields map[string]string, script ...Key) func(name string) (string, bool) {
	return func(name string) (string, bool) {
		if v, ok := fields[name]; ok {
			return v, true
		}
		switch name {
		case "Lang":
			return l.Tag(), true
		case "Texts":
			return l.JSON(script...), true
		}
		return l.Lookup(name)
	}
}

// JSON returns the texts of keys in l as a JSON object keyed by their
// names, for a page's script.
func (l Locale) JSON(keys ...Key) string {
	m := make(map[Key]string, len(keys))
	for _, k := range keys {
		m[k] = l.Text(k)
	}
	b, _ := json.Marshal(m) // a map of strings always encodes
	return string(b)
}
