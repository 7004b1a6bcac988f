package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// Gateway configures the HTTP listener that serves the web chat, health and
// metrics.
type Gateway struct {
	// Listen is the host:port to bind.
	Listen string `json:"listen"`
	// Token is required when Listen is not a loopback address; every request
	// must then carry it.
	Token Secret `json:"token"`
	// ShutdownTimeoutMs bounds how long in-flight replies may take to finish
	// after a shutdown signal before they are cut and persisted.
	ShutdownTimeoutMs int `json:"shutdownTimeoutMs"`
	// AllowedHosts lists host names (or IP addresses), without a port,
	// that requests may name in their Host header besides the loopback
	// ones (localhost, *.localhost and loopback addresses such as
	// 127.0.0.1 and [::1]). On a loopback listener every other host is
	// refused, so a web page that rebinds its own name to 127.0.0.1 cannot
	// reach pincer; on other listeners, where the token guards everything,
	// the list applies only when it is set.
	AllowedHosts []string `json:"allowedHosts"`
	// Pprof serves Go's runtime profiles (net/http/pprof) under
	// /debug/pprof/ on the listener, behind Token, which it requires.
	Pprof bool `json:"pprof"`
}

// ShutdownTimeout returns ShutdownTimeoutMs as a duration.
func (g Gateway) ShutdownTimeout() time.Duration { return ms(g.ShutdownTimeoutMs) }

// Loopback reports whether Listen binds only a loopback address.
func (g Gateway) Loopback() bool {
	host, _, err := net.SplitHostPort(g.Listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Validate checks the gateway section.
func (g Gateway) Validate() error {
	var errs []error
	if _, port, err := net.SplitHostPort(g.Listen); err != nil || port == "" {
		errs = append(errs, problem("listen", "want host:port, got %q", g.Listen))
	} else if !g.Loopback() && g.Token == "" {
		errs = append(errs, problem("token", "required when listen (%s) is not a loopback address", g.Listen))
	}
	if g.Pprof && g.Token == "" {
		errs = append(errs, crossProblem("pprof", []string{"token"}, "requires gateway.token, which every /debug/pprof/ request must then carry: set gateway.token (e.g. token: '${PINCER_GATEWAY_TOKEN}') or set gateway.pprof to false"))
	}
	if g.ShutdownTimeoutMs < 0 {
		errs = append(errs, problem("shutdownTimeoutMs", "must not be negative"))
	}
	for i, h := range g.AllowedHosts {
		if !validHostName(h) {
			errs = append(errs, problem(fmt.Sprintf("allowedHosts[%d]", i), "want a host name such as \"pincer.example.com\" (no scheme, port or path), got %q", h))
		}
	}
	return errors.Join(errs...)
}

// validHostName reports whether h is a host name (letters, digits, '-'
// and '_' in dot-separated labels, a final dot allowed) or an IP address,
// an IPv6 one with or without brackets.
func validHostName(h string) bool {
	if ip := strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"); net.ParseIP(ip) != nil {
		return true
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return false
			}
		}
	}
	return true
}

// Log configures logging.
type Log struct {
	// Level is debug, info, warn or error. Message text and prompts are
	// logged only at debug.
	Level string `json:"level"`
	// Format is text or json.
	Format string `json:"format"`
}

// Validate checks the log section.
func (l Log) Validate() error {
	return errors.Join(oneOf("level", l.Level, "debug", "info", "warn", "error"), oneOf("format", l.Format, "text", "json"))
}

// Store configures persistence.
type Store struct {
	// Driver is the store implementation: "sqlite" (a file at Path) or
	// "postgres" (the server DSN names).
	Driver string `json:"driver"`
	// Path is the SQLite database file.
	Path string `json:"path"`
	// DSN names the PostgreSQL database for the postgres driver, as a
	// postgres:// URL or key=value pairs; it may hold a password, so it
	// is a secret (usually "${PINCER_PG_DSN}").
	DSN Secret `json:"dsn"`
	// BusyTimeoutMs is how long a SQLite writer waits for a lock.
	BusyTimeoutMs int `json:"busyTimeoutMs"`
	// KeepMessagesHours is how long the log of received messages (chat
	// history, digests, /summary of the web chat) keeps them; what a
	// buffer still holds stays until it is taken. 0 keeps them forever.
	KeepMessagesHours int `json:"keepMessagesHours"`
}

// KeepMessages returns KeepMessagesHours as a duration.
func (s Store) KeepMessages() time.Duration { return time.Duration(s.KeepMessagesHours) * time.Hour }

// Validate checks the store section.
func (s Store) Validate() error {
	var errs []error
	switch s.Driver {
	case "sqlite":
		if strings.TrimSpace(s.Path) == "" {
			errs = append(errs, problem("path", "must not be empty"))
		}
	case "postgres":
		if strings.TrimSpace(s.DSN.Value()) == "" {
			errs = append(errs, crossProblem("dsn", []string{"driver"}, "required with driver postgres"))
		}
	default:
		errs = append(errs, problem("driver", "want sqlite or postgres, got %q", s.Driver))
	}
	if s.BusyTimeoutMs < 0 {
		errs = append(errs, problem("busyTimeoutMs", "must not be negative"))
	}
	if s.KeepMessagesHours < 0 {
		errs = append(errs, problem("keepMessagesHours", "must not be negative"))
	}
	return errors.Join(errs...)
}

// Models configures model providers, keyed by the provider id used in
// model refs ("openai" in "openai/gpt-4o-mini").
type Models struct {
	Providers map[string]Provider `json:"providers"`
	// Aliases are short names for /model, e.g. {fast: "openai/gpt-4o-mini"}.
	Aliases map[string]string `json:"aliases"`
}

// Validate checks every provider.
func (m Models) Validate() error {
	var errs []error
	for id, p := range m.Providers {
		if id == "" || strings.ContainsAny(id, "/ ") {
			errs = append(errs, problem("providers."+id, "provider id must be non-empty without '/' or spaces"))
			continue
		}
		errs = append(errs, nest("providers."+id, p.Validate()))
	}
	for name, ref := range m.Aliases {
		errs = append(errs, m.checkRef("aliases."+name, ref))
	}
	return errors.Join(errs...)
}

// checkRef reports a model ref that is not provider/model or names a
// provider that is not configured (the built-in preview provider always is).
func (m Models) checkRef(path, ref string) error {
	provider, model, ok := strings.Cut(ref, "/")
	if !ok || provider == "" || model == "" {
		return problem(path, "want provider/model, got %q", ref)
	}
	if _, known := m.Providers[provider]; !known && provider != "preview" {
		return &FieldError{
			Path:   path,
			Msg:    fmt.Sprintf("provider %q is not configured under models.providers", provider),
			rooted: []string{"models.providers." + provider},
		}
	}
	return nil
}

// Provider APIs.
const (
	APIOpenAI    = "openai"
	APIAnthropic = "anthropic"
)

// Provider configures one model endpoint.
type Provider struct {
	// API is the wire protocol: "openai" (any OpenAI-compatible server) or
	// "anthropic". Empty means anthropic for a provider named "anthropic",
	// openai otherwise.
	API string `json:"api"`
	// BaseURL overrides the SDK's default endpoint, e.g.
	// http://127.0.0.1:11434/v1 for Ollama.
	BaseURL string `json:"baseUrl"`
	// APIKey is the key; write it as "${OPENAI_API_KEY}".
	APIKey Secret `json:"apiKey"`
	// TimeoutMs bounds one model call, streaming included.
	TimeoutMs int `json:"timeoutMs"`
	// Headers are extra HTTP headers sent with every request.
	Headers map[string]string `json:"headers"`
	// Models describes models of this provider where their names do not
	// tell enough, e.g. [{id: 'my-vl', input: ['text', 'image']}].
	Models []ModelSpec `json:"models"`
}

// ResolvedAPI returns API, or the API implied by the provider id.
func (p Provider) ResolvedAPI(id string) string {
	if p.API != "" {
		return p.API
	}
	if id == APIAnthropic {
		return APIAnthropic
	}
	return APIOpenAI
}

// Timeout returns TimeoutMs as a duration, with a default of two minutes.
func (p Provider) Timeout() time.Duration {
	if p.TimeoutMs == 0 {
		return 2 * time.Minute
	}
	return ms(p.TimeoutMs)
}

// Validate checks one provider.
func (p Provider) Validate() error {
	var errs []error
	if p.API != "" {
		errs = append(errs, oneOf("api", p.API, APIOpenAI, APIAnthropic))
	}
	if p.BaseURL != "" {
		u, err := url.Parse(p.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, problem("baseUrl", "want an http(s) URL, got %q", p.BaseURL))
		}
	}
	if p.TimeoutMs < 0 {
		errs = append(errs, problem("timeoutMs", "must not be negative"))
	}
	for i, m := range p.Models {
		errs = append(errs, nest(fmt.Sprintf("models[%d]", i), m.validate()))
	}
	return errors.Join(errs...)
}

// Channels configures the chat channels.
type Channels struct {
	Webchat Webchat `json:"webchat"`
	OneBot  OneBot  `json:"onebot"`
	Feishu  Feishu  `json:"feishu"`
}

// Validate checks every channel.
func (c Channels) Validate() error {
	return errors.Join(nest("webchat", c.Webchat.Validate()), nest("onebot", c.OneBot.Validate()), nest("feishu", c.Feishu.Validate()))
}

// Webchat configures the built-in web chat served on gateway.listen.
type Webchat struct {
	Enabled bool `json:"enabled"`
	// Title is shown in the page header.
	Title string `json:"title"`
	// Receive applies the receive modes to the web chat; its bursts are
	// answered at once by default (realtime off).
	Receive Receive `json:"receive"`
}

// DefaultWebchat is the web chat on: the receive defaults, with every
// message answered at once.
func DefaultWebchat() Webchat {
	r := DefaultReceive()
	r.Realtime.Enabled = false
	return Webchat{Enabled: true, Title: "pincer", Receive: r}
}

// Validate checks the web chat section.
func (w Webchat) Validate() error {
	var errs []error
	if w.Enabled && strings.TrimSpace(w.Title) == "" {
		errs = append(errs, crossProblem("title", []string{"enabled"}, "must not be empty"))
	}
	errs = append(errs, nest("receive", w.Receive.Validate()))
	return errors.Join(errs...)
}

// Trace configures the decision traces: why each message was (not)
// answered, shown by the dashboard and `pincer trace`.
type Trace struct {
	// PerAccount is how many recent messages' traces each account keeps
	// in memory.
	PerAccount int `json:"perAccount"`
	// KeepHours is how long the traces of messages something happened to
	// (answered, dropped, commands) are kept in the store; 0 keeps none
	// there.
	KeepHours int `json:"keepHours"`
}

// Keep returns KeepHours as a duration.
func (t Trace) Keep() time.Duration { return time.Duration(t.KeepHours) * time.Hour }

// Validate checks the trace section.
func (t Trace) Validate() error {
	var errs []error
	if t.PerAccount < 1 {
		errs = append(errs, problem("perAccount", "must be at least 1, got %d", t.PerAccount))
	}
	if t.KeepHours < 0 {
		errs = append(errs, problem("keepHours", "must not be negative"))
	}
	return errors.Join(errs...)
}
