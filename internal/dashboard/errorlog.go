package dashboard

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// ErrorLine is one log record kept by ErrorLog.
type ErrorLine struct {
	At      time.Time `json:"at"`
	Level   string    `json:"level"`
	Message string    `json:"message"`
	// Attrs are the record's attributes as "key=value" separated by
	// spaces, keys of groups joined by dots, the values of keys that look
	// secret replaced by Redacted.
	Attrs string `json:"attrs,omitempty"`
}

// Redacted replaces the values of secret-looking attributes.
const Redacted = "[redacted]"

// ErrorLogOptions configure an ErrorLog.
type ErrorLogOptions struct {
	// Size is how many lines are kept; DefaultErrorLines when zero.
	Size int
	// Level is the lowest level kept; slog.LevelWarn when nil.
	Level slog.Leveler
}

// DefaultErrorLines is the size of an ErrorLog's ring.
const DefaultErrorLines = 100

// maxValueRunes bounds one rendered attribute value.
const maxValueRunes = 200

// ErrorLog is a slog.Handler that passes every record on to the handler it
// wraps and keeps the last records at Warn or Error (ErrorLogOptions.Level)
// for the dashboard.
type ErrorLog struct {
	next   slog.Handler
	ring   *lineRing
	level  slog.Leveler
	prefix string // the open groups, "a.b."
	attrs  string // attributes added by WithAttrs, rendered
}

type lineRing struct {
	mu    sync.Mutex
	lines []ErrorLine // oldest first, wrapping at next once full
	next  int
	size  int
}

// NewErrorLog wraps next.
func NewErrorLog(next slog.Handler, o ErrorLogOptions) *ErrorLog {
	if o.Size <= 0 {
		o.Size = DefaultErrorLines
	}
	if o.Level == nil {
		o.Level = slog.LevelWarn
	}
	return &ErrorLog{next: next, ring: &lineRing{size: o.Size}, level: o.Level}
}

// Enabled implements slog.Handler: a record is wanted when the wrapped
// handler wants it or it is to be kept.
func (l *ErrorLog) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= l.level.Level() || l.next.Enabled(ctx, level)
}

// Handle implements slog.Handler.
func (l *ErrorLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= l.level.Level() {
		var b strings.Builder
		b.WriteString(l.attrs)
		r.Attrs(func(a slog.Attr) bool {
			render(&b, l.prefix, a)
			return true
		})
		l.ring.add(ErrorLine{At: r.Time, Level: r.Level.String(), Message: r.Message, Attrs: b.String()})
	}
	if l.next.Enabled(ctx, r.Level) {
		return l.next.Handle(ctx, r)
	}
	return nil
}

// WithAttrs implements slog.Handler.
func (l *ErrorLog) WithAttrs(as []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(l.attrs)
	for _, a := range as {
		render(&b, l.prefix, a)
	}
	c := *l
	c.next = l.next.WithAttrs(as)
	c.attrs = b.String()
	return &c
}

// WithGroup implements slog.Handler.
func (l *ErrorLog) WithGroup(name string) slog.Handler {
	if name == "" {
		return l
	}
	c := *l
	c.next = l.next.WithGroup(name)
	c.prefix = l.prefix + name + "."
	return &c
}

// Lines returns the kept lines, newest first.
func (l *ErrorLog) Lines() []ErrorLine {
	r := l.ring
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]ErrorLine, 0, len(r.lines))
	for i := range r.lines {
		out = append(out, r.lines[(r.next-1-i+2*len(r.lines))%len(r.lines)])
	}
	return out
}

func (r *lineRing) add(line ErrorLine) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.lines) < r.size {
		r.lines = append(r.lines, line)
		r.next = len(r.lines) % r.size
		return
	}
	r.lines[r.next] = line
	r.next = (r.next + 1) % r.size
}

// render appends a as " key=value", groups flattened into dotted keys.
func render(b *strings.Builder, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range v.Group() {
			render(b, p, g)
		}
		return
	}
	if a.Key == "" && v.Any() == nil {
		return // an empty attribute, which handlers ignore
	}
	key := prefix + a.Key
	text := v.String()
	if secretKey(a.Key) || looksSecret(text) {
		text = Redacted
	} else if utf8.RuneCountInString(text) > maxValueRunes {
		text = string([]rune(text)[:maxValueRunes]) + "…"
	}
	if strings.ContainsAny(text, " \t\n\"=") || text == "" {
		text = quote(text)
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	b.WriteString(key)
	b.WriteByte('=')
	b.WriteString(text)
}

// secretKey reports whether an attribute's key names a secret.
func secretKey(key string) bool {
	k := strings.ToLower(key)
	for _, word := range []string{"token", "secret", "password", "passwd", "authorization", "cookie", "credential"} {
		if strings.Contains(k, word) {
			return true
		}
	}
	return strings.HasSuffix(k, "key") || strings.HasSuffix(k, "keys")
}

// looksSecret reports whether a value carries a credential whatever its
// key: an Authorization header's value.
func looksSecret(v string) bool {
	return strings.Contains(v, "Bearer ")
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
