package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/command"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/store"
)

// Session option names.
const (
	optThink    = "think"
	optElevated = "elevated"
)

// handler runs one command for a turn and returns the reply.
type handler func(ctx context.Context, mc MsgContext, args string) (string, error)

// builtins registers the built-in commands.
func (e *Engine) builtins() []struct {
	spec *command.Spec
	run  handler
} {
	return []struct {
		spec *command.Spec
		run  handler
	}{
		{&command.Spec{Name: "help", Description: "how to talk to pincer and the main commands"}, e.cmdHelp},
		{&command.Spec{Name: "commands", Description: "every command with its arguments"}, e.cmdCommands},
		{&command.Spec{Name: "status", Description: "this session: model, thinking level, transcript size"}, e.cmdStatus},
		{&command.Spec{Name: "whoami", Description: "who pincer thinks you are, and what you may run"}, e.cmdWhoami},
		{&command.Spec{Name: "new", Aliases: []string{"reset"}, Description: "start a new session (the transcript so far is kept aside)"}, e.cmdNew},
		{&command.Spec{Name: "stop", Description: "stop the reply being written (also: stop, cancel, 停止)"}, e.cmdStop},
		{&command.Spec{Name: "model", Args: "[status|list|default|<provider/model>|<alias>]", AcceptsArgs: true, OwnerOnly: true, Description: "show or set this session's model"}, e.cmdModel},
		{&command.Spec{Name: "models", Description: "the configured providers and model chain"}, e.cmdModels},
		{&command.Spec{Name: "think", Args: "[off|minimal|low|medium|high|xhigh]", AcceptsArgs: true, OwnerOnly: true, Description: "show or set the reasoning level"}, e.cmdThink},
		{&command.Spec{Name: "elevate", Args: "[on|off]", AcceptsArgs: true, Description: "show or switch elevated mode, which unlocks stronger tools (allow-listed senders only)"}, e.cmdElevate},
		{&command.Spec{Name: "context", Description: "how much of the context budget the session uses"}, e.cmdContext},
		{&command.Spec{Name: "compact", Description: "summarize older turns to free context"}, e.cmdCompact},
		{&command.Spec{Name: "export", OwnerOnly: true, Description: "the session transcript as text"}, e.cmdExport},
		{&command.Spec{Name: "queue", Args: "[steer|followup|collect|interrupt] [cap:N] [drop:old|new|summarize] [debounce:500ms] | reset", AcceptsArgs: true, OwnerOnly: true, Description: "show or set what happens to messages sent while a reply is being written"}, e.cmdQueue},
	}
}

// command runs mc as a command or abort word when it is one and the sender
// may run it. handled is false for everything else, which goes to the agent
// as plain text, unauthorized commands included.
func (e *Engine) command(ctx context.Context, mc MsgContext) (reply string, handled bool, err error) {
	if !mc.CommandAuthorized {
		return "", false, nil
	}
	if command.IsAbort(mc.BodyForCommands) {
		return e.abort(mc.SessionKey), true, nil
	}
	call, ok := e.registry.Parse(mc.BodyForCommands)
	if !ok || !mc.allowed(call.Spec) {
		return "", false, nil
	}
	reply, err = e.handlers[call.Spec.Name](ctx, mc, call.Args)
	return reply, true, err
}

func (e *Engine) cmdHelp(context.Context, MsgContext, string) (string, error) {
	return "Talk to me in plain words; I answer with the configured model.\n" +
		"Commands: /status /new /stop /model /think /context /whoami — /commands lists them all.\n" +
		"Send stop (or 停止) to interrupt a reply.", nil
}

func (e *Engine) cmdCommands(_ context.Context, mc MsgContext, _ string) (string, error) {
	var b strings.Builder
	b.WriteString("Commands:")
	for _, s := range e.registry.Specs() {
		fmt.Fprintf(&b, "\n/%s", s.Name)
		if s.Args != "" {
			b.WriteString(" " + s.Args)
		}
		b.WriteString(" — " + s.Description)
		if len(s.Aliases) > 0 {
			b.WriteString(" (also /" + strings.Join(s.Aliases, ", /") + ")")
		}
		if s.OwnerOnly && !mc.Owner {
			b.WriteString(" [owner only]")
		}
	}
	return b.String(), nil
}

// Model names the model that answers peer of channel ch first: the
// session's override (/model) or the configured primary; "" when none is
// configured.
func (e *Engine) Model(ctx context.Context, ch msg.ChannelID, peer msg.Peer) string {
	key := e.SessionKey(msg.Message{Channel: ch, Peer: peer})
	sess, err := e.opts.Store.Session(ctx, key)
	if err != nil {
		sess = store.Session{} // a new session answers with the configured chain
	}
	if chain := e.chain(sess); len(chain) > 0 {
		return chain[0].String()
	}
	return ""
}

// chain returns the session's model chain: its override first, then the
// configured fallbacks.
func (e *Engine) chain(sess store.Session) []llm.Ref {
	if sess.ModelOverride == "" {
		return e.opts.Models
	}
	ref, err := llm.ParseRef(sess.ModelOverride)
	if err != nil {
		return e.opts.Models
	}
	chain := []llm.Ref{ref}
	for _, r := range e.opts.Models[1:] {
		if r != ref {
			chain = append(chain, r)
		}
	}
	return chain
}

func (e *Engine) session(ctx context.Context, key string) (store.Session, error) {
	sess, _, err := e.opts.Store.OpenSession(ctx, key, e.opts.AgentID)
	return sess, err
}

func (e *Engine) cmdStatus(ctx context.Context, mc MsgContext, _ string) (string, error) {
	sess, err := e.session(ctx, mc.SessionKey)
	if err != nil {
		return "", err
	}
	tr, err := e.opts.Store.Transcript(ctx, mc.SessionKey)
	if err != nil {
		return "", err
	}
	chain := e.chain(sess)
	source := "default"
	if sess.ModelOverride != "" {
		source = "set for this session"
	}
	think := sess.Options[optThink]
	if think == "" {
		think = "off"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Session: %s\n", mc.SessionKey)
	fmt.Fprintf(&b, "Model: %s (%s)\n", chain[0], source)
	if len(chain) > 1 {
		fmt.Fprintf(&b, "Fallbacks: %s\n", joinRefs(chain[1:]))
	}
	fmt.Fprintf(&b, "Thinking: %s\n", think)
	if sess.Options[optElevated] != "" {
		b.WriteString("Elevated: on\n")
	}
	fmt.Fprintf(&b, "Transcript: %d turns, about %d of %d tokens", len(tr), transcriptTokens(tr), e.opts.ContextTokens)
	if e.isActive(mc.SessionKey) {
		b.WriteString("\nA reply is being written now.")
	}
	return b.String(), nil
}

func joinRefs(refs []llm.Ref) string {
	s := make([]string, len(refs))
	for i, r := range refs {
		s[i] = r.String()
	}
	return strings.Join(s, ", ")
}

func transcriptTokens(tr []store.Turn) int {
	n := 0
	for _, m := range agent.Messages(tr) {
		n += agent.EstimateTokens(m.Text)
	}
	return n
}

func (e *Engine) cmdWhoami(_ context.Context, mc MsgContext, _ string) (string, error) {
	m := mc.Message
	access := "commands allowed"
	if mc.Owner {
		access = "owner: all commands allowed"
	}
	return fmt.Sprintf("Channel: %s\nYou: %s (%s)\nChat: %s\nAccess: %s", m.Channel, m.Sender.ID, m.Sender.Name, m.Peer, access), nil
}

func (e *Engine) cmdNew(ctx context.Context, mc MsgContext, _ string) (string, error) {
	// Wait for a running reply, so its turn lands in the old transcript.
	unlock := e.lock(mc.SessionKey)
	defer unlock()
	if _, err := e.session(ctx, mc.SessionKey); err != nil {
		return "", err
	}
	if _, err := e.opts.Store.ResetSession(ctx, mc.SessionKey, "/new"); err != nil {
		return "", err
	}
	return "New session started. The earlier conversation is no longer sent to the model.", nil
}

func (e *Engine) cmdStop(_ context.Context, mc MsgContext, _ string) (string, error) {
	return e.abort(mc.SessionKey), nil
}

func (e *Engine) cmdModel(ctx context.Context, mc MsgContext, args string) (string, error) {
	sess, err := e.session(ctx, mc.SessionKey)
	if err != nil {
		return "", err
	}
	switch strings.ToLower(args) {
	case "", "status":
		current := e.chain(sess)[0]
		if sess.ModelOverride == "" {
			return fmt.Sprintf("Model: %s (default). Set one with /model <provider/model>.", current), nil
		}
		return fmt.Sprintf("Model: %s (set for this session; /model default goes back to %s).", current, e.opts.Models[0]), nil
	case "list":
		return e.cmdModels(ctx, mc, "")
	case "default", "reset", "clear":
		if err := e.opts.Store.SetModelOverride(ctx, mc.SessionKey, ""); err != nil {
			return "", err
		}
		return fmt.Sprintf("Model back to the default, %s.", e.opts.Models[0]), nil
	}
	ref, err := e.resolveModel(args)
	if err != nil {
		return err.Error(), nil
	}
	if err := e.opts.Store.SetModelOverride(ctx, mc.SessionKey, ref.String()); err != nil {
		return "", err
	}
	return fmt.Sprintf("Model set to %s for this session.", ref), nil
}

// errUnknownModel explains a model the session cannot use.
var errUnknownModel = errors.New("unknown model")

func (e *Engine) resolveModel(arg string) (llm.Ref, error) {
	if target, ok := e.opts.Aliases[strings.ToLower(arg)]; ok {
		arg = target
	}
	ref, err := llm.ParseRef(arg)
	if err != nil {
		return llm.Ref{}, fmt.Errorf("%w: %q is neither provider/model nor an alias; /models lists what is configured", errUnknownModel, arg)
	}
	if !e.opts.Runner.HasProvider(ref.Provider) {
		return llm.Ref{}, fmt.Errorf("%w: provider %q is not configured; /models lists what is", errUnknownModel, ref.Provider)
	}
	return ref, nil
}

func (e *Engine) cmdModels(context.Context, MsgContext, string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Default chain: %s", joinRefs(e.opts.Models))
	if len(e.opts.Aliases) > 0 {
		names := make([]string, 0, len(e.opts.Aliases))
		for name := range e.opts.Aliases {
			names = append(names, name)
		}
		sort.Strings(names)
		b.WriteString("\nAliases:")
		for _, n := range names {
			fmt.Fprintf(&b, "\n  %s → %s", n, e.opts.Aliases[n])
		}
	}
	return b.String(), nil
}

func (e *Engine) cmdThink(ctx context.Context, mc MsgContext, args string) (string, error) {
	level := strings.ToLower(args)
	if level == "" {
		sess, err := e.session(ctx, mc.SessionKey)
		if err != nil {
			return "", err
		}
		current := sess.Options[optThink]
		if current == "" {
			current = "off"
		}
		return fmt.Sprintf("Thinking: %s. Levels: %s.", current, strings.Join(llm.ThinkingLevels, ", ")), nil
	}
	if !slices.Contains(llm.ThinkingLevels, level) {
		return fmt.Sprintf("Unknown level %q. Levels: %s.", args, strings.Join(llm.ThinkingLevels, ", ")), nil
	}
	if _, err := e.session(ctx, mc.SessionKey); err != nil {
		return "", err
	}
	value := level
	if level == "off" {
		value = ""
	}
	if err := e.opts.Store.SetSessionOption(ctx, mc.SessionKey, optThink, value); err != nil {
		return "", err
	}
	return fmt.Sprintf("Thinking set to %s.", level), nil
}

func (e *Engine) cmdContext(ctx context.Context, mc MsgContext, _ string) (string, error) {
	tr, err := e.opts.Store.Transcript(ctx, mc.SessionKey)
	if err != nil {
		return "", err
	}
	system := agent.EstimateTokens(e.opts.System())
	used := transcriptTokens(tr)
	budget := e.opts.ContextTokens
	return fmt.Sprintf("Context: system prompt about %d tokens, transcript %d turns about %d tokens; budget %d tokens (%d%% used). Older turns are dropped from what the model sees when the budget is reached.",
		system, len(tr), used, budget, (system+used)*100/max(budget, 1)), nil
}

func (e *Engine) cmdExport(ctx context.Context, mc MsgContext, _ string) (string, error) {
	tr, err := e.opts.Store.Transcript(ctx, mc.SessionKey)
	if err != nil {
		return "", err
	}
	if len(tr) == 0 {
		return "The session is empty.", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Transcript of %s (%d turns)\n", mc.SessionKey, len(tr))
	for _, t := range tr {
		fmt.Fprintf(&b, "\n[%s %s]\n%s\n", t.At.Format("2006-01-02 15:04:05"), t.Role, t.Text)
	}
	return b.String(), nil
}

func (e *Engine) cmdQueue(ctx context.Context, mc MsgContext, args string) (string, error) {
	key := mc.SessionKey
	if _, err := e.session(ctx, key); err != nil {
		return "", err
	}
	set := map[string]string{}
	for _, f := range strings.Fields(strings.ToLower(args)) {
		name, value, hasValue := strings.Cut(f, ":")
		switch {
		case f == "reset":
			for _, o := range []string{optQueueMode, optQueueCap, optQueueDrop, optQueueDebounce} {
				set[o] = ""
			}
		case !hasValue && slices.Contains(QueueModes, QueueMode(f)):
			set[optQueueMode] = f
		case name == "cap" && hasValue:
			n, err := strconv.Atoi(value)
			if err != nil || n < 1 {
				return fmt.Sprintf("cap must be a positive number, got %q.", value), nil
			}
			set[optQueueCap] = value
		case name == "drop" && (value == string(DropOld) || value == string(DropNew) || value == string(DropSummarize)):
			set[optQueueDrop] = value
		case name == "debounce" && hasValue:
			d, err := time.ParseDuration(value)
			if err != nil || d < 0 {
				return fmt.Sprintf("debounce must be a duration such as 500ms or 1.5s, got %q.", value), nil
			}
			set[optQueueDebounce] = strconv.FormatInt(d.Milliseconds(), 10)
		default:
			return fmt.Sprintf("Unknown setting %q. Usage: /queue %s", f, "[steer|followup|collect|interrupt] [cap:N] [drop:old|new|summarize] [debounce:500ms] | reset"), nil
		}
	}
	for name, value := range set {
		if err := e.opts.Store.SetSessionOption(ctx, key, name, value); err != nil {
			return "", err
		}
	}
	qs := e.queueSettingsFor(ctx, key, mc.Message.Channel)
	prefix := "Queue"
	if len(set) > 0 {
		prefix = "Queue set"
	}
	return fmt.Sprintf("%s: %s, cap %d, drop %s, debounce %s.", prefix, qs.Mode, qs.Cap, qs.Drop, qs.Debounce), nil
}

func (e *Engine) cmdCompact(ctx context.Context, mc MsgContext, _ string) (string, error) {
	unlock := e.lock(mc.SessionKey)
	defer unlock()
	sess, err := e.session(ctx, mc.SessionKey)
	if err != nil {
		return "", err
	}
	tr, err := e.opts.Store.Transcript(ctx, mc.SessionKey)
	if err != nil {
		return "", err
	}
	before := transcriptTokens(tr)
	compacted, err := e.compact(ctx, e.log, sess, tr)
	if errors.Is(err, agent.ErrNothingToCompact) {
		return "Nothing to compact yet.", nil
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Compacted %d turns into a summary: about %d tokens before, %d now.", len(tr)-len(compacted)+1, before, transcriptTokens(compacted)), nil
}

// compact summarizes the older turns of a session with its model chain and
// stores the result; it returns the new transcript.
func (e *Engine) compact(ctx context.Context, log *slog.Logger, sess store.Session, tr []store.Turn) ([]store.Turn, error) {
	summary, keep, err := e.opts.Runner.Compact(ctx, e.chain(sess), tr, agent.KeepRecent)
	if err != nil {
		return nil, err
	}
	if _, err := e.opts.Store.CompactSession(ctx, sess.Key, summary, keep); err != nil {
		return nil, err
	}
	log.Info("session compacted", "session", sess.Key, "turns_before", len(tr), "kept", len(keep))
	return e.opts.Store.Transcript(ctx, sess.Key)
}

func (e *Engine) cmdElevate(ctx context.Context, mc MsgContext, args string) (string, error) {
	allowed := command.Policy{OwnerAllowFrom: e.opts.ElevatedAllowFrom}.Owner(string(mc.Message.Channel), string(mc.Message.Sender.ID))
	if !allowed {
		return "Elevated mode is not available to you (commands.elevatedAllowFrom).", nil
	}
	sess, err := e.session(ctx, mc.SessionKey)
	if err != nil {
		return "", err
	}
	switch strings.ToLower(args) {
	case "":
		if sess.Options[optElevated] != "" {
			return "Elevated mode is on. /elevate off turns it off.", nil
		}
		return "Elevated mode is off. /elevate on turns it on.", nil
	case "on":
		return "Elevated mode is on for this session.", e.opts.Store.SetSessionOption(ctx, mc.SessionKey, optElevated, "on")
	case "off":
		return "Elevated mode is off.", e.opts.Store.SetSessionOption(ctx, mc.SessionKey, optElevated, "")
	}
	return "Usage: /elevate [on|off]", nil
}
