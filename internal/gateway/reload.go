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
	"github.com/pincerbot/pincer/internal/pipeline"
)

// live is what a running gateway takes from a reloaded config (see
// Options.Reload): the keys hotKeys names apply from the next message and
// turn on, while open windows, digests, history, sessions and the outbox
// carry on; a change of any other key is named in the log as waiting for
// a restart, and its running value stays until then (the chats' settings
// are derived from the running config, which takes only the hot keys).
type live struct {
	log    *slog.Logger
	prompt *agent.Prompt
	chats  *chats
	// pipes are the receive pipelines, whose open digest windows take a
	// chat's new interval; set before run starts.
	pipes []*pipeline.Pipeline
	// limits are the top-level limits in force, for the messages of a
	// channel without chat settings (the web chat).
	limits atomic.Pointer[limits.Settings]

	mu sync.Mutex
	// running is the config in force: the one pincer started with, with
	// the hot keys of each reload taken.
	running config.Config
}

// hotKeys are the keys a reload applies to a running gateway; "*" stands
// for any one key (an account's id), a key stands for everything under it.
var hotKeys = func() []string {
	keys := []string{"agents.defaults.systemPrompt", "limits"}
	for _, ch := range []string{"onebot", "feishu"} {
		for _, acct := range []string{"channels." + ch, "channels." + ch + ".accounts.*"} {
			keys = append(keys, acct+".groups", acct+".direct")
			// What the chats' views take from the account (see
			// pipeline.ChatRules); the buffers' bounds stay as they are.
			for _, k := range []string{"mention", "realtime", "history.enabled", "digest.enabled", "digest.intervalMs", "digest.prompt", "summary.enabled", "summary.prompt"} {
				keys = append(keys, acct+".receive."+k)
			}
		}
	}
	return keys
}()

func newLive(cfg config.Config, prompt *agent.Prompt, chats *chats, log *slog.Logger) *live {
	l := &live{log: log, prompt: prompt, chats: chats, running: cfg}
	l.setLimits(cfg.Limits)
	return l
}

// limitSettings are the caps that apply to m under the running config:
// its chat's, layered as its other settings are.
func (l *live) limitSettings(m msg.Message) limits.Settings {
	if s := l.chats.of(m.Channel, m.Account, m.Peer); s != nil {
		return s.limits
	}
	return *l.limits.Load()
}

func (l *live) setLimits(c config.Limits) {
	s := limitsOf(c)
	l.limits.Store(&s)
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

// apply takes cfg's hot keys into the running config, puts it in force,
// and names the other keys that changed.
func (l *live) apply(cfg config.Config) {
	l.mu.Lock()
	defer l.mu.Unlock()
	next := l.running
	var hot, cold []string
	for _, k := range config.Changed(l.running, cfg) {
		if !isHot(k) {
			cold = append(cold, k)
			continue
		}
		// A chat entry goes whole: it knows which of its keys it sets.
		k = chatEntry(k)
		if err := config.Take(&next, cfg, k); err != nil {
			l.log.Error("config reload: a changed key could not be applied", "key", k, "err", err)
			cold = append(cold, k)
			continue
		}
		if len(hot) == 0 || hot[len(hot)-1] != k {
			hot = append(hot, k)
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
	l.prompt.SetBase(next.Agents.Defaults.SystemPrompt)
	if l.chats != nil {
		if err := l.chats.swap(next); err != nil {
			l.prompt.SetBase(l.running.Agents.Defaults.SystemPrompt)
			l.log.Error("config reload: the chats' settings were not applied; the running ones are kept", "err", err)
			return
		}
	}
	l.running = next
	l.setLimits(next.Limits)
	for _, p := range l.pipes {
		p.RescheduleDigests()
	}
	l.log.Info("config applied", "keys", strings.Join(hot, ", "))
}

// isHot reports whether key is one of hotKeys or under one.
func isHot(key string) bool {
	parts := strings.Split(key, ".")
	for _, h := range hotKeys {
		hp := strings.Split(h, ".")
		if len(parts) < len(hp) {
			continue
		}
		match := true
		for i := range hp {
			if hp[i] != "*" && hp[i] != parts[i] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// chatEntry shortens a key inside a chat entry to the entry's own path
// (channels.onebot.groups.123.systemPrompt → channels.onebot.groups.123).
func chatEntry(key string) string {
	parts := strings.Split(key, ".")
	for i, p := range parts {
		if (p == "groups" || p == "direct") && i >= 2 && parts[0] == "channels" && i+1 < len(parts) {
			return strings.Join(parts[:i+2], ".")
		}
	}
	return key
}
