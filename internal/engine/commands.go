package engine

import (
	"cmp"
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
	"github.com/pincerbot/pincer/internal/texts"
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
	t := e.opts.Locale
	return []struct {
		spec *command.Spec
		run  handler
	}{
		{&command.Spec{Name: "help", Description: t.Text(texts.DescHelp)}, e.cmdHelp},
		{&command.Spec{Name: "commands", Description: t.Text(texts.DescCommands)}, e.cmdCommands},
		{&command.Spec{Name: "status", Description: t.Text(texts.DescStatus)}, e.cmdStatus},
		{&command.Spec{Name: "whoami", Description: t.Text(texts.DescWhoami)}, e.cmdWhoami},
		{&command.Spec{Name: "new", Aliases: []string{"reset"}, Args: "[message]", AcceptsArgs: true, Description: t.Text(texts.DescNew)}, e.cmdNew},
		{&command.Spec{Name: "stop", Description: t.Text(texts.DescStop)}, e.cmdStop},
		{&command.Spec{Name: "model", Args: "[status|list|default|<provider/model>|<alias>]", AcceptsArgs: true, OwnerOnly: true, Description: t.Text(texts.DescModel)}, e.cmdModel},
		{&command.Spec{Name: "models", Description: t.Text(texts.DescModels)}, e.cmdModels},
		{&command.Spec{Name: "think", Args: "[off|minimal|low|medium|high|xhigh]", AcceptsArgs: true, OwnerOnly: true, Description: t.Text(texts.DescThink)}, e.cmdThink},
		{&command.Spec{Name: "elevate", Args: "[on|off|status]", AcceptsArgs: true, Description: t.Text(texts.DescElevate)}, e.cmdElevate},
		{&command.Spec{Name: "context", Description: t.Text(texts.DescContext)}, e.cmdContext},
		{&command.Spec{Name: "compact", Description: t.Text(texts.DescCompact)}, e.cmdCompact},
		{&command.Spec{Name: "export", OwnerOnly: true, Description: t.Text(texts.DescExport)}, e.cmdExport},
		{&command.Spec{Name: "queue", Args: queueUsage, AcceptsArgs: true, OwnerOnly: true, Description: t.Text(texts.DescQueue)}, e.cmdQueue},
	}
}

// queueUsage is /queue's arguments.
const queueUsage = "[steer|followup|collect|interrupt] [cap:N] [drop:old|new|summarize] [debounce:500ms] | reset"

// helpCommands are the commands /help introduces, in its order.
var helpCommands = []string{"status", "new", "stop", "model", "think", "context", "whoami"}

// command runs mc as a command or abort word when it is one and the sender
// may run it. handled is false for everything else, which goes to the agent
// as plain text, unauthorized commands included. A /new (or /reset) with a
// message after it starts the session over and leaves the message, in
// place of the command in *mc, to be answered in the new session, with no
// notice of the reset: handled is false then too.
func (e *Engine) command(ctx context.Context, mc *MsgContext) (reply string, handled bool, err error) {
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
	if call.Spec.Name == "new" && call.Args != "" {
		if err := e.newSession(ctx, mc.SessionKey); err != nil {
			return "", true, err
		}
		*mc = mc.withText(call.Args)
		return "", false, nil
	}
	reply, err = e.handlers[call.Spec.Name](ctx, *mc, call.Args)
	return reply, true, err
}

func (e *Engine) cmdHelp(context.Context, MsgContext, string) (string, error) {
	t := e.opts.Locale
	var b strings.Builder
	b.WriteString(t.Text(texts.HelpIntro))
	specs := e.registry.Specs()
	for _, name := range helpCommands {
		if i := slices.IndexFunc(specs, func(s *command.Spec) bool { return s.Name == name }); i >= 0 {
			fmt.Fprintf(&b, "\n/%s — %s", name, specs[i].Description)
		}
	}
	b.WriteString("\n" + t.Text(texts.HelpOutro))
	return b.String(), nil
}

func (e *Engine) cmdCommands(_ context.Context, mc MsgContext, _ string) (string, error) {
	t := e.opts.Locale
	var b strings.Builder
	b.WriteString(t.Text(texts.CommandsHeader))
	for _, s := range e.registry.Specs() {
		fmt.Fprintf(&b, "\n/%s", s.Name)
		if s.Args != "" {
			b.WriteString(" " + s.Args)
		}
		b.WriteString(" — " + s.Description)
		if len(s.Aliases) > 0 {
			b.WriteString(t.Format(texts.CommandsAliases, "/"+strings.Join(s.Aliases, ", /")))
		}
		if s.OwnerOnly && !mc.Owner {
			b.WriteString(t.Text(texts.CommandsOwnerOnly))
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
	if chain := e.chain(sess, e.chatOf(msg.Message{Channel: ch, Peer: peer}).Models); len(chain) > 0 {
		return chain[0].String()
	}
	return ""
}

// chain returns the session's model chain: its override first, then the
// fallbacks of models, the chat's chain (the configured one when empty).
func (e *Engine) chain(sess store.Session, models []llm.Ref) []llm.Ref {
	if len(models) == 0 {
		models = e.opts.Models
	}
	if sess.ModelOverride == "" {
		return models
	}
	ref, err := llm.ParseRef(sess.ModelOverride)
	if err != nil {
		return models
	}
	chain := []llm.Ref{ref}
	for _, r := range models[1:] {
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
	t := e.opts.Locale
	cs := e.chatOf(mc.Message)
	chain := e.chain(sess, cs.Models)
	source := t.Text(texts.StatusModelDefault)
	if sess.ModelOverride != "" {
		source = t.Text(texts.StatusModelOverride)
	}
	think := thinkingLevel(sess, cs)
	lines := []string{
		t.Format(texts.StatusSession, mc.SessionKey),
		t.Format(texts.StatusModel, chain[0], source),
	}
	if len(chain) > 1 {
		lines = append(lines, t.Format(texts.StatusFallbacks, joinRefs(chain[1:])))
	}
	lines = append(lines, t.Format(texts.StatusThinking, think))
	if sess.Options[optElevated] != "" {
		lines = append(lines, t.Text(texts.StatusElevated))
	}
	lines = append(lines, t.Format(texts.StatusTranscript, len(tr), transcriptTokens(tr), e.opts.ContextTokens))
	if e.opts.Limits != nil {
		// The rest of the status is worth more than this line: a failed
		// read leaves it out.
		if use, err := e.opts.Limits.Today(ctx, mc.Message); err != nil {
			e.log.Warn("/status: token use not read", "err", err)
		} else {
			count := func(n, budget int64) string {
				if budget > 0 {
					return t.Format(texts.StatusTokensOf, n, budget)
				}
				return strconv.FormatInt(n, 10)
			}
			lines = append(lines, t.Format(texts.StatusTokens, count(use.Chat, use.ChatBudget), count(use.User, use.UserBudget)))
		}
	}
	if e.isActive(mc.SessionKey) {
		lines = append(lines, t.Text(texts.StatusBusy))
	}
	return strings.Join(lines, "\n"), nil
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
	t := e.opts.Locale
	m := mc.Message
	access := t.Text(texts.WhoamiAllowed)
	if mc.Owner {
		access = t.Text(texts.WhoamiOwner)
	}
	return t.Format(texts.Whoami, m.Channel, m.Sender.ID, m.Sender.Name, m.Peer, access), nil
}

func (e *Engine) cmdNew(ctx context.Context, mc MsgContext, _ string) (string, error) {
	if err := e.newSession(ctx, mc.SessionKey); err != nil {
		return "", err
	}
	return e.opts.Locale.Text(texts.NewSession), nil
}

// newSession starts session key over, once a running reply is done, so
// its turn lands in the old transcript.
func (e *Engine) newSession(ctx context.Context, key string) error {
	unlock := e.lock(key)
	defer unlock()
	if _, err := e.session(ctx, key); err != nil {
		return err
	}
	_, err := e.opts.Store.ResetSession(ctx, key, "/new")
	return err
}

// withText is mc with its own text replaced by text (the message after a
// /new): what the agent reads keeps the context around it.
func (mc MsgContext) withText(text string) MsgContext {
	if i := strings.LastIndex(mc.BodyForAgent, mc.BodyForCommands); i >= 0 {
		mc.BodyForAgent = mc.BodyForAgent[:i] + text + mc.BodyForAgent[i+len(mc.BodyForCommands):]
	} else {
		mc.BodyForAgent = text
	}
	mc.RawBody, mc.CommandBody, mc.BodyForCommands = text, text, text
	return mc
}

func (e *Engine) cmdStop(_ context.Context, mc MsgContext, _ string) (string, error) {
	return e.abort(mc.SessionKey), nil
}

func (e *Engine) cmdModel(ctx context.Context, mc MsgContext, args string) (string, error) {
	t := e.opts.Locale
	sess, err := e.session(ctx, mc.SessionKey)
	if err != nil {
		return "", err
	}
	switch strings.ToLower(args) {
	case "", "status":
		models := e.chain(store.Session{}, e.chatOf(mc.Message).Models)
		current := e.chain(sess, models)[0]
		if sess.ModelOverride == "" {
			return t.Format(texts.ModelDefault, current), nil
		}
		return t.Format(texts.ModelOverride, current, models[0]), nil
	case "list":
		return e.cmdModels(ctx, mc, "")
	case "default", "reset", "clear":
		if err := e.opts.Store.SetModelOverride(ctx, mc.SessionKey, ""); err != nil {
			return "", err
		}
		return t.Format(texts.ModelReset, e.chain(store.Session{}, e.chatOf(mc.Message).Models)[0]), nil
	}
	ref, problem := e.resolveModel(args)
	if problem != "" {
		return problem, nil
	}
	if err := e.opts.Store.SetModelOverride(ctx, mc.SessionKey, ref.String()); err != nil {
		return "", err
	}
	return t.Format(texts.ModelSet, ref), nil
}

// resolveModel finds the model arg names, a ref or an alias; problem
// says why the session cannot use it, "" when it can.
func (e *Engine) resolveModel(arg string) (ref llm.Ref, problem string) {
	if target, ok := e.opts.Aliases[strings.ToLower(arg)]; ok {
		arg = target
	}
	ref, err := llm.ParseRef(arg)
	if err != nil {
		return llm.Ref{}, e.opts.Locale.Format(texts.ModelNotRef, arg)
	}
	if !e.opts.Runner.HasProvider(ref.Provider) {
		return llm.Ref{}, e.opts.Locale.Format(texts.ModelNoProvider, ref.Provider)
	}
	return ref, ""
}

func (e *Engine) cmdModels(_ context.Context, mc MsgContext, _ string) (string, error) {
	t := e.opts.Locale
	var b strings.Builder
	b.WriteString(t.Format(texts.ModelsChain, joinRefs(e.chain(store.Session{}, e.chatOf(mc.Message).Models))))
	if len(e.opts.Aliases) > 0 {
		names := make([]string, 0, len(e.opts.Aliases))
		for name := range e.opts.Aliases {
			names = append(names, name)
		}
		sort.Strings(names)
		b.WriteString("\n" + t.Text(texts.ModelsAliases))
		for _, n := range names {
			fmt.Fprintf(&b, "\n  %s → %s", n, e.opts.Aliases[n])
		}
	}
	return b.String(), nil
}

// thinkingLevel is a session's reasoning level: its own (/think), else
// its chat's, else off.
func thinkingLevel(sess store.Session, cs *ChatSettings) string {
	return cmp.Or(sess.Options[optThink], cs.Thinking, "off")
}

// requestLevel is a reasoning level as a model request carries it: none
// for off.
func requestLevel(level string) string {
	if level == "off" {
		return ""
	}
	return level
}

func (e *Engine) cmdThink(ctx context.Context, mc MsgContext, args string) (string, error) {
	t := e.opts.Locale
	level := strings.ToLower(args)
	if level == "" {
		sess, err := e.session(ctx, mc.SessionKey)
		if err != nil {
			return "", err
		}
		return t.Format(texts.ThinkShow, thinkingLevel(sess, e.chatOf(mc.Message)), strings.Join(llm.ThinkingLevels, ", ")), nil
	}
	if !slices.Contains(llm.ThinkingLevels, level) {
		return t.Format(texts.ThinkUnknown, args, strings.Join(llm.ThinkingLevels, ", ")), nil
	}
	if _, err := e.session(ctx, mc.SessionKey); err != nil {
		return "", err
	}
	// "off" is stored as it is: it overrides a level the chat sets.
	if err := e.opts.Store.SetSessionOption(ctx, mc.SessionKey, optThink, level); err != nil {
		return "", err
	}
	return t.Format(texts.ThinkSet, level), nil
}

func (e *Engine) cmdContext(ctx context.Context, mc MsgContext, _ string) (string, error) {
	tr, err := e.opts.Store.Transcript(ctx, mc.SessionKey)
	if err != nil {
		return "", err
	}
	system := agent.EstimateTokens(systemFor(e.chatOf(mc.Message), mc.Message))
	used := transcriptTokens(tr)
	budget := e.opts.ContextTokens
	return e.opts.Locale.Format(texts.ContextReport, system, len(tr), used, budget, (system+used)*100/max(budget, 1)), nil
}

func (e *Engine) cmdExport(ctx context.Context, mc MsgContext, _ string) (string, error) {
	tr, err := e.opts.Store.Transcript(ctx, mc.SessionKey)
	if err != nil {
		return "", err
	}
	if len(tr) == 0 {
		return e.opts.Locale.Text(texts.ExportEmpty), nil
	}
	var b strings.Builder
	b.WriteString(e.opts.Locale.Format(texts.ExportHeader, mc.SessionKey, len(tr)) + "\n")
	for _, t := range tr {
		fmt.Fprintf(&b, "\n[%s %s]\n%s\n", t.At.Format("2006-01-02 15:04:05"), t.Role, t.Text)
	}
	return b.String(), nil
}

func (e *Engine) cmdQueue(ctx context.Context, mc MsgContext, args string) (string, error) {
	t := e.opts.Locale
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
				return t.Format(texts.QueueCapInvalid, value), nil
			}
			set[optQueueCap] = value
		case name == "drop" && (value == string(DropOld) || value == string(DropNew) || value == string(DropSummarize)):
			set[optQueueDrop] = value
		case name == "debounce" && hasValue:
			d, err := time.ParseDuration(value)
			if err != nil || d < 0 {
				return t.Format(texts.QueueDebounceInvalid, value), nil
			}
			set[optQueueDebounce] = strconv.FormatInt(d.Milliseconds(), 10)
		default:
			return t.Format(texts.QueueUnknown, f, queueUsage), nil
		}
	}
	for name, value := range set {
		if err := e.opts.Store.SetSessionOption(ctx, key, name, value); err != nil {
			return "", err
		}
	}
	qs := e.queueSettingsFor(ctx, key, mc.Message.Channel, e.chatOf(mc.Message))
	shown := texts.QueueShow
	if len(set) > 0 {
		shown = texts.QueueSetShow
	}
	return t.Format(shown, qs.Mode, qs.Cap, qs.Drop, qs.Debounce), nil
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
	compacted, err := e.compact(ctx, e.log, sess, e.chatOf(mc.Message).Models, tr)
	if errors.Is(err, agent.ErrNothingToCompact) {
		return e.opts.Locale.Text(texts.CompactNothing), nil
	}
	if err != nil {
		return "", err
	}
	return e.opts.Locale.Format(texts.CompactDone, len(tr)-len(compacted)+1, before, transcriptTokens(compacted)), nil
}

// compact summarizes the older turns of a session with its model chain and
// stores the result; it returns the new transcript.
func (e *Engine) compact(ctx context.Context, log *slog.Logger, sess store.Session, models []llm.Ref, tr []store.Turn) ([]store.Turn, error) {
	summary, keep, err := e.opts.Runner.Compact(ctx, e.chain(sess, models), tr, agent.KeepRecent)
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
	t := e.opts.Locale
	allowed := command.Policy{OwnerAllowFrom: e.opts.ElevatedAllowFrom}.Owner(string(mc.Message.Channel), string(mc.Message.Sender.ID))
	if !allowed {
		return t.Text(texts.ElevateDenied), nil
	}
	sess, err := e.session(ctx, mc.SessionKey)
	if err != nil {
		return "", err
	}
	// A bare /elevate elevates, as the command says; status shows.
	switch strings.ToLower(args) {
	case "status":
		if sess.Options[optElevated] != "" {
			return t.Text(texts.ElevateIsOn), nil
		}
		return t.Text(texts.ElevateIsOff), nil
	case "", "on":
		return t.Text(texts.ElevateOn), e.opts.Store.SetSessionOption(ctx, mc.SessionKey, optElevated, "on")
	case "off":
		return t.Text(texts.ElevateOff), e.opts.Store.SetSessionOption(ctx, mc.SessionKey, optElevated, "")
	}
	return t.Text(texts.ElevateUsage), nil
}
