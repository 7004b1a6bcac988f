// Package command recognises chat commands ("/status", "/model gpt-4o")
// and abort words ("stop", "停止"), and decides who may run them. It knows
// nothing of what the commands do; the engine registers their handlers.
package command

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Spec describes one command.
type Spec struct {
	// Name is the canonical name without the slash ("model").
	Name string
	// Aliases are further names ("reset" for "new").
	Aliases []string
	// Args is the usage of the arguments, e.g. "[ref|list|status]".
	Args string
	// AcceptsArgs lets "/name args" match; without it only the bare
	// command matches and "/name something" is plain text.
	AcceptsArgs bool
	Description string
	// OwnerOnly restricts the command to commands.ownerAllowFrom.
	OwnerOnly bool
}

// Call is one invocation.
type Call struct {
	Spec *Spec
	// Args is the text after the command word, trimmed.
	Args string
}

// Registry holds the known commands.
type Registry struct {
	specs   []*Spec
	byAlias map[string]*Spec
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{byAlias: map[string]*Spec{}} }

// Register adds s; a name already taken is an error.
func (r *Registry) Register(s *Spec) error {
	names := append([]string{s.Name}, s.Aliases...)
	for _, n := range names {
		if n == "" || strings.ContainsFunc(n, unicode.IsSpace) || n != strings.ToLower(n) {
			return fmt.Errorf("command %q: invalid name %q", s.Name, n)
		}
		if _, taken := r.byAlias[n]; taken {
			return fmt.Errorf("command %q: name %q is taken", s.Name, n)
		}
	}
	for _, n := range names {
		r.byAlias[n] = s
	}
	r.specs = append(r.specs, s)
	return nil
}

// Specs lists the commands in registration order.
func (r *Registry) Specs() []*Spec { return slices.Clone(r.specs) }

// Parse recognises a command: the whole text, trimmed, must start with
// "/" and a registered name (case-insensitive), either alone (exact match)
// or followed by whitespace and arguments when the command accepts them
// (prefix match). "!" works as well as "/".
func (r *Registry) Parse(text string) (Call, bool) {
	t := strings.TrimSpace(text)
	if len(t) < 2 || (t[0] != '/' && t[0] != '!') {
		return Call{}, false
	}
	word, rest, _ := strings.Cut(t[1:], " ")
	if i := strings.IndexFunc(word, unicode.IsSpace); i >= 0 { // a tab or newline after the name
		word, rest = word[:i], word[i:]+" "+rest
	}
	s, ok := r.byAlias[strings.ToLower(word)]
	if !ok {
		return Call{}, false
	}
	args := strings.TrimSpace(rest)
	if args != "" && !s.AcceptsArgs {
		return Call{}, false
	}
	return Call{Spec: s, Args: args}, true
}

// IsControl reports whether text is a command or an abort word; such
// messages skip debouncing.
func (r *Registry) IsControl(text string) bool {
	_, ok := r.Parse(text)
	return ok || IsAbort(text)
}

var inlineToken = regexp.MustCompile(`(?i)(?:^|\s)[/!][a-z]`)

// HasInlineTokens is a cheap precheck for command-like tokens anywhere in
// text ("hey /status"): channels use it to decide whether to work out
// command authorization at all.
func HasInlineTokens(text string) bool { return inlineToken.MatchString(text) }

// AbortWords stop the running turn when sent alone.
var AbortWords = []string{"stop", "cancel", "abort", "停止", "取消", "/stop"}

// IsAbort reports whether text, trimmed and without trailing punctuation,
// is an abort word (case-insensitive).
func IsAbort(text string) bool {
	t := strings.ToLower(strings.TrimRightFunc(strings.TrimSpace(text), func(r rune) bool {
		return unicode.IsPunct(r) || unicode.IsSpace(r)
	}))
	return slices.Contains(AbortWords, t)
}
