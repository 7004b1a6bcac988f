package gateway

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/limits"
	"github.com/pincerbot/pincer/internal/msg"
)

// live is what a running gateway takes from a reloaded config (see
// Options.Reload): the settings in hotKeys apply from the next turn on,
// open windows, digests, history, sessions and the outbox carrying on;
// a change of any other key is named in the log as waiting for a restart,
// and the running value stays until then.
type live struct {
	log    *slog.Logger
	prompt *agent.Prompt
	limits atomic.Pointer[func(msg.Message) limits.Settings]

	mu sync.Mutex
	// running is the config in force: the one pincer started with, with
	// the hot keys of each reload applied.
	running config.Config
}

// hotKeys are the settings a reload applies to a running gateway.
var hotKeys = []string{
	"agents.defaults.systemPrompt",
	"limits",
}

func newLive(cfg config.Config, prompt *agent.Prompt, log *slog.Logger) *live {
	l := &live{log: log, prompt: prompt, running: cfg}
	l.setLimits(cfg.Limits)
	return l
}

// limitSettings are the caps that apply to m under the running config.
func (l *live) limitSettings(m msg.Message) limits.Settings {
	if f := *l.limits.Load(); f != nil {
		return f(m)
	}
	return limits.Settings{}
}

func (l *live) setLimits(c config.Limits) {
	f := limitSettings(c)
	l.limits.Store(&f)
}

// run applies each config from configs until ctx ends.
func (l *live) run(ctx context.Context, configs <-chan config.Config) {
	for {
		select {
		case <-ctx.Done():
			return
		case cfg, ok := <-configs:
			if !ok {
				return
			}
			l.apply(cfg)
		}
	}
}

// apply takes cfg's hot keys and names the other keys that changed.
func (l *live) apply(cfg config.Config) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var hot, cold []string
	for _, k := range config.Changed(l.running, cfg) {
		if isHot(k) {
			hot = append(hot, k)
		} else {
			cold = append(cold, k)
		}
	}
	if len(cold) > 0 {
		l.log.Warn("config changed where only a restart applies it; the running value is kept until then", "keys", strings.Join(cold, ", "))
	}
	if len(hot) == 0 {
		if len(cold) == 0 {
			l.log.Info("config reloaded: nothing changed")
		}
		return
	}
	d := &l.running.Agents.Defaults
	if d.SystemPrompt != cfg.Agents.Defaults.SystemPrompt {
		d.SystemPrompt = cfg.Agents.Defaults.SystemPrompt
		l.prompt.SetBase(d.SystemPrompt)
	}
	if l.running.Limits != cfg.Limits {
		l.running.Limits = cfg.Limits
		l.setLimits(cfg.Limits)
	}
	l.log.Info("config applied", "keys", strings.Join(hot, ", "))
}

func isHot(key string) bool {
	for _, h := range hotKeys {
		if key == h || strings.HasPrefix(key, h+".") {
			return true
		}
	}
	return false
}
