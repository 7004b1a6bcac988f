package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/titanous/json5"
)

// Draft is a new configuration file as pincer init writes it: only the
// settings it was given, each with a comment saying what it does, in a
// stable order; everything else keeps its default. Notes list what could
// not be carried over and why; they head the file as comments.
type Draft struct {
	// Header lines open the file as comments.
	Header []string
	// Notes are the settings left out, rendered after the header.
	Notes []Note
	root  *draftObject
}

// Note is one setting of a source file that a Draft does not carry over.
type Note struct {
	// Key is the setting's key path in the source file.
	Key string
	// Reason says why it was left out, or what to do instead.
	Reason string
}

func (n Note) String() string { return n.Key + ": " + n.Reason }

// EnvRef is a value written as a reference to an environment variable,
// ${NAME}, read when pincer starts.
type EnvRef string

// Verbatim is a string value written exactly as given: ${NAME} in it is
// an environment reference, as in a value copied from a file of the same
// syntax.
type Verbatim string

type draftEntry struct {
	key     string
	comment string
	value   any // scalar, []any, map[string]any or *draftObject
}

type draftObject struct{ entries []*draftEntry }

func (o *draftObject) find(key string) *draftEntry {
	for _, e := range o.entries {
		if e.key == key {
			return e
		}
	}
	return nil
}

// NewDraft returns an empty draft.
func NewDraft() *Draft { return &Draft{root: &draftObject{}} }

// Set writes value at the key path keys, creating the objects on the way,
// with comment above it (the key's usual explanation when comment is
// empty). A string value is written literally: "${" in it is escaped.
// Use EnvRef for an environment reference and Verbatim for a value that
// already uses pincer's ${NAME} syntax.
func (d *Draft) Set(value any, comment string, keys ...string) {
	if len(keys) == 0 {
		return
	}
	o := d.object(keys[:len(keys)-1])
	last := keys[len(keys)-1]
	if comment == "" {
		comment = keyDoc(keys)
	}
	if e := o.find(last); e != nil {
		e.value = value
		if comment != "" {
			e.comment = comment
		}
		return
	}
	o.entries = append(o.entries, &draftEntry{key: last, comment: comment, value: value})
}

// Comment puts comment above the object at keys, creating it.
func (d *Draft) Comment(comment string, keys ...string) {
	if len(keys) == 0 {
		return
	}
	d.object(keys)
	parent := d.object(keys[:len(keys)-1])
	parent.find(keys[len(keys)-1]).comment = comment
}

// Has reports whether the draft sets the key path keys.
func (d *Draft) Has(keys ...string) bool { return d.lookup(keys) != nil }

// Delete removes the setting at keys, reporting whether there was one.
func (d *Draft) Delete(keys ...string) bool {
	if len(keys) == 0 {
		return false
	}
	var o *draftObject
	if len(keys) == 1 {
		o = d.root
	} else if e := d.lookup(keys[:len(keys)-1]); e != nil {
		o, _ = e.value.(*draftObject)
	}
	if o == nil {
		return false
	}
	n := len(o.entries)
	o.entries = slices.DeleteFunc(o.entries, func(e *draftEntry) bool { return e.key == keys[len(keys)-1] })
	return len(o.entries) < n
}

func (d *Draft) lookup(keys []string) *draftEntry {
	o := d.root
	for i, k := range keys {
		e := o.find(k)
		if e == nil {
			return nil
		}
		if i == len(keys)-1 {
			return e
		}
		next, ok := e.value.(*draftObject)
		if !ok {
			return nil
		}
		o = next
	}
	return nil
}

// object returns the object at keys, creating it (and replacing a
// scalar there).
func (d *Draft) object(keys []string) *draftObject {
	if d.root == nil {
		d.root = &draftObject{}
	}
	o := d.root
	for i, k := range keys {
		e := o.find(k)
		if e == nil {
			e = &draftEntry{key: k, comment: keyDoc(keys[:i+1])}
			o.entries = append(o.entries, e)
		}
		next, ok := e.value.(*draftObject)
		if !ok {
			next = &draftObject{}
			e.value = next
		}
		o = next
	}
	return o
}

// JSON5 renders the draft as a commented JSON5 document.
func (d *Draft) JSON5() []byte {
	var b bytes.Buffer
	for _, h := range d.Header {
		writeComment(&b, "", h)
	}
	if len(d.Notes) > 0 {
		if len(d.Header) > 0 {
			b.WriteString("//\n")
		}
		b.WriteString("// Not carried over:\n")
		for _, n := range d.Notes {
			writeComment(&b, "", "  - "+n.String())
		}
	}
	b.WriteString("{\n")
	if d.root != nil {
		writeObjectBody(&b, d.root, "  ")
	}
	b.WriteString("}\n")
	return b.Bytes()
}

func writeComment(b *bytes.Buffer, indent, text string) {
	for line := range strings.SplitSeq(text, "\n") {
		b.WriteString(strings.TrimRight(indent+"// "+line, " ") + "\n")
	}
}

var bareKey = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

func renderKey(k string) string {
	if bareKey.MatchString(k) {
		return k
	}
	return jsonString(k)
}

func writeObjectBody(b *bytes.Buffer, o *draftObject, indent string) {
	for i, e := range o.entries {
		if e.comment != "" {
			if i > 0 {
				b.WriteString("\n")
			}
			writeComment(b, indent, e.comment)
		}
		b.WriteString(indent + renderKey(e.key) + ": ")
		writeValue(b, e.value, indent)
		b.WriteString(",\n")
	}
}

func writeValue(b *bytes.Buffer, v any, indent string) {
	switch x := v.(type) {
	case *draftObject:
		if len(x.entries) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		writeObjectBody(b, x, indent+"  ")
		b.WriteString(indent + "}")
	case map[string]any:
		if len(x) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for _, k := range slices.Sorted(maps.Keys(x)) {
			b.WriteString(indent + "  " + renderKey(k) + ": ")
			writeValue(b, x[k], indent+"  ")
			b.WriteString(",\n")
		}
		b.WriteString(indent + "}")
	case []any:
		b.WriteString("[")
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, e, indent)
		}
		b.WriteString("]")
	case []string:
		b.WriteString("[")
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, e, indent)
		}
		b.WriteString("]")
	case EnvRef:
		b.WriteString(jsonString("${" + string(x) + "}"))
	case Verbatim:
		b.WriteString(jsonString(string(x)))
	case Secret:
		b.WriteString(jsonString(strings.ReplaceAll(x.Value(), "${", "$${")))
	case string:
		b.WriteString(jsonString(strings.ReplaceAll(x, "${", "$${")))
	case nil:
		b.WriteString("null")
	default:
		raw, err := json.Marshal(x)
		if err != nil {
			raw = []byte("null")
		}
		b.Write(raw)
	}
}

func jsonString(s string) string {
	raw, _ := json.Marshal(s) // a string always encodes
	return string(raw)
}

// keyDocs explains the keys pincer init writes, by key path; * stands
// for any one key (a provider or account id).
var keyDocs = map[string]string{
	"gateway":                           "The HTTP listener: the web chat, /healthz, /metrics, and the endpoints QQ\nimplementations and Feishu connect to in reverse and webhook modes.",
	"gateway.listen":                    "host:port to serve on. A non-loopback address needs gateway.token.",
	"gateway.token":                     "Required when listen is not a loopback address; clients send it as\n\"Authorization: Bearer <token>\" or ?token=<token>.",
	"models":                            "Model providers, keyed by the id used in model refs (\"<id>/<model>\").",
	"models.providers.*.api":            "Wire protocol: openai (any OpenAI-compatible server) | anthropic.",
	"models.providers.*.baseUrl":        "Where the API is served (OpenAI-compatible servers end it in /v1).",
	"models.providers.*.apiKey":         "The API key. ${NAME} reads it from the environment when pincer starts.",
	"models.providers.*.headers":        "Extra HTTP headers sent with every request.",
	"models.aliases":                    "Short names for /model: \"/model fast\".",
	"agents":                            "What every agent starts from.",
	"channels":                          "The chat channels. The web chat is on by default at http://<gateway.listen>/.",
	"agents.defaults.model.primary":     "The model that answers, as provider/model.",
	"agents.defaults.model.fallbacks":   "Tried in order when the primary fails (errors, rate limits, overload).",
	"agents.defaults.workspace":         "SYSTEM.md and AGENTS.md found here are added to the system prompt.",
	"agents.defaults.maxConcurrent":     "Agent runs at once across all chats.",
	"agents.defaults.contextTokens":     "The transcript sent to the model is trimmed to fit this budget.",
	"agents.defaults.turnTimeoutMs":     "One reply may take this long, its model calls and tools together.",
	"agents.defaults.heartbeat":         "Scheduled check-ins in the conversation last heard from.",
	"agents.defaults.humanDelay":        "Pause between streamed blocks: off | natural | custom (minMs-maxMs).",
	"agents.defaults.envelope":          "Timestamps the agent sees: local | utc | user (userTimezone) | an IANA zone.",
	"messages.responsePrefix":           "Prepended to every reply; {model}, {provider}, {identity} are filled in.",
	"messages.queue":                    "Messages sent while a reply is being written: steer | followup | collect | interrupt.",
	"messages.inbound":                  "The web chat merges a sender's burst of messages into one turn (debounceMs\n0 = off); QQ and Feishu merge bursts in channels.<channel>.receive.realtime.",
	"session.dmScope":                   "per-peer: every direct chat has its own session; main: they all share one.",
	"session.idleResetMs":               "Start a new session when a chat was quiet this long (0 = never).",
	"log.level":                         "debug | info | warn | error (message text only at debug).",
	"channels.onebot":                   "QQ through a OneBot v11 implementation (NapCat, SnowLuma, LLOneBot,\nLagrange, go-cqhttp). These keys are the default account.",
	"channels.onebot.wsUrl":             "The implementation's forward WebSocket server (its \"/\" endpoint);\npincer dials it and reconnects on loss.",
	"channels.onebot.httpUrl":           "The implementation's HTTP API, used for actions while no WebSocket is up.",
	"channels.onebot.accessToken":       "The implementation's access token, sent as \"Bearer <token>\" and required\nfrom it when it connects to pincer.",
	"channels.onebot.selfId":            "The bot's QQ number; asked from the implementation when empty.",
	"channels.onebot.reverseWs":         "Let the implementation dial pincer at ws://<gateway.listen><path>\n(its \"reverse WebSocket\" / \"WebSocket client\"); the access token is checked.",
	"channels.onebot.httpPost":          "Receive the events the implementation POSTs to http://<gateway.listen><path>.",
	"channels.onebot.accounts":          "More QQ accounts; each starts from the settings above except the connection.",
	"channels.feishu":                   "Feishu / Lark through a self-built app with the bot ability.\nThese keys are the default app.",
	"channels.feishu.appId":             "The app's credentials, from the developer console.",
	"channels.feishu.domain":            "feishu | lark | a base URL (private deployments).",
	"channels.feishu.mode":              "websocket: pincer opens Feishu's long connection (no public address needed);\nwebhook: Feishu POSTs events to <gateway.listen><webhook.path>.",
	"channels.feishu.verificationToken": "From the app's \"Events and Callbacks\" page (webhook mode).",
	"channels.feishu.accounts":          "More Feishu apps; each starts from the settings above except its credentials.",
	"channels.onebot.allowFrom":         "Peers answered: '*', 'group:<id>', 'private:<qq>'. Empty admits everyone.",
	"channels.feishu.allowFrom":         "Chats and users answered: '*', 'chat:oc_…', 'user:ou_…'. Empty admits everyone.",
}

func keyDoc(keys []string) string {
	if d, ok := keyDocs[strings.Join(keys, ".")]; ok {
		return d
	}
	for p, d := range keyDocs {
		if strings.Contains(p, "*") {
			if ok, _ := path.Match(strings.ReplaceAll(p, ".", "/"), strings.Join(keys, "/")); ok {
				return d
			}
		}
	}
	return ""
}

// Cleaned drops from d every setting pincer would refuse, each with a
// note naming its problem, so that the written file passes `pincer config
// check`. A setting whose value references the environment is kept: it
// can be judged only once the variable is set, when the file is loaded.
// It returns an error when the rendered draft does not parse at all.
func (d *Draft) Cleaned() error {
	anyEnv := func(string) (string, bool) { return "", true }
	for range 20 {
		_, err := Parse(d.JSON5(), anyEnv)
		if err == nil {
			return nil
		}
		dropped := false
		for _, p := range Problems(err) {
			var fe *FieldError
			if !errors.As(p, &fe) {
				return fmt.Errorf("config: the written configuration does not parse: %w", p)
			}
			keys := strings.Split(fe.Path, ".")
			for i, k := range keys {
				if j := strings.IndexByte(k, '['); j >= 0 {
					keys = keys[:i+1]
					keys[i] = k[:j]
					break
				}
			}
			full := len(keys)
			for len(keys) > 0 && !d.Has(keys...) {
				keys = keys[:len(keys)-1]
			}
			if len(keys) == 0 {
				continue
			}
			e := d.lookup(keys)
			if _, section := e.value.(*draftObject); section && len(keys) < full && !entity(keys) {
				continue // about a default, not about what the draft wrote
			}
			if refersToEnv(e.value) {
				continue
			}
			d.Delete(keys...)
			dropped = true
			d.Notes = append(d.Notes, Note{Key: strings.Join(keys, "."), Reason: "pincer refuses the value (" + fe.Msg + ")"})
		}
		if !dropped {
			return nil // what is left depends on the environment
		}
	}
	return errors.New("config: the written configuration is still refused after dropping settings")
}

// entity reports whether keys name a provider or a named account, which
// is dropped whole when it lacks something it needs.
func entity(keys []string) bool {
	n := len(keys)
	return n >= 2 && (keys[n-2] == "accounts" || keys[n-2] == "providers")
}

// refersToEnv reports whether a draft value holds an environment
// reference.
func refersToEnv(v any) bool {
	switch x := v.(type) {
	case EnvRef:
		return true
	case Verbatim:
		return strings.Contains(strings.ReplaceAll(string(x), "$${", ""), "${")
	case map[string]any:
		for _, e := range x {
			if refersToEnv(e) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(x, refersToEnv)
	}
	return false
}

// OpenClaw import.

// openClawOnly are keys of an OpenClaw openclaw.json that a pincer file
// never has, as key paths; * is any one key.
var openClawOnly = []string{
	"meta", "wizard", "auth", "plugins", "skills", "hooks", "browser", "env", "bindings",
	"ui.seamColor", "ui.assistant",
	"tools", "cron", "talk", "broadcast", "discovery", "canvasHost", "update", "diagnostics",
	"logging", "$include", "$schema", "approvals", "memory",
	"gateway.port", "gateway.bind", "gateway.auth", "gateway.mode", "gateway.controlUi",
	"gateway.tailscale", "gateway.remote", "gateway.reload",
	"models.mode", "agents.list", "agents.defaults.models",
	"channels.snowluma", "channels.telegram", "channels.whatsapp", "channels.discord",
	"channels.slack", "channels.signal", "channels.imessage", "channels.qqbot",
	"channels.feishu.connectionMode", "channels.feishu.dmPolicy", "channels.feishu.groupPolicy",
}

// LooksLikeOpenClaw reports whether data is an OpenClaw configuration
// (openclaw.json): a JSON5 object with keys only OpenClaw has.
func LooksLikeOpenClaw(data []byte) bool {
	tree, err := decodeJSON5(data)
	if err != nil {
		return false
	}
	for _, p := range openClawOnly {
		if hasKeyPath(tree, strings.Split(p, ".")) {
			return true
		}
	}
	return false
}

func hasKeyPath(v any, keys []string) bool {
	if len(keys) == 0 {
		return true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	if keys[0] == "*" {
		for _, c := range m {
			if hasKeyPath(c, keys[1:]) {
				return true
			}
		}
		return false
	}
	c, ok := m[keys[0]]
	return ok && hasKeyPath(c, keys[1:])
}

// decodeJSON5 decodes a JSON5 document with its numbers as int64 or
// float64.
func decodeJSON5(data []byte) (map[string]any, error) {
	dec := json5.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("openclaw: %w", err)
	}
	m, ok := normalize(tree).(map[string]any)
	if !ok {
		return nil, errors.New("openclaw: the document is not an object")
	}
	return m, nil
}

func normalize(v any) any {
	switch x := v.(type) {
	case json5.Number:
		if i, err := strconv.ParseInt(x.String(), 0, 64); err == nil {
			return i
		}
		if f, err := strconv.ParseFloat(x.String(), 64); err == nil {
			return f
		}
		return x.String()
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	}
	return v
}

// knownProvider is a provider OpenClaw has built in, reached through
// pincer's openai or anthropic API with its key in the environment.
type knownProvider struct {
	api, baseURL, keyEnv string
}

var builtinProviders = map[string]knownProvider{
	"openai":     {APIOpenAI, "https://api.openai.com/v1", "OPENAI_API_KEY"},
	"anthropic":  {APIAnthropic, "https://api.anthropic.com", "ANTHROPIC_API_KEY"},
	"openrouter": {APIOpenAI, "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"},
	"deepseek":   {APIOpenAI, "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"},
	"moonshot":   {APIOpenAI, "https://api.moonshot.ai/v1", "MOONSHOT_API_KEY"},
	"groq":       {APIOpenAI, "https://api.groq.com/openai/v1", "GROQ_API_KEY"},
	"mistral":    {APIOpenAI, "https://api.mistral.ai/v1", "MISTRAL_API_KEY"},
	"xai":        {APIOpenAI, "https://api.x.ai/v1", "XAI_API_KEY"},
	"ollama":     {APIOpenAI, "http://127.0.0.1:11434/v1", ""},
}

// openClawAPIs maps OpenClaw's provider api names to pincer's.
var openClawAPIs = map[string]string{
	"":                   APIOpenAI,
	"openai":             APIOpenAI,
	"openai-completions": APIOpenAI,
	"openai-responses":   APIOpenAI,
	"anthropic":          APIAnthropic,
	"anthropic-messages": APIAnthropic,
}

var envName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// importer builds a Draft from an OpenClaw tree.
type importer struct {
	d    *Draft
	home string
	// providers are the provider ids carried over.
	providers map[string]bool
	// used lists the source keys read, so the rest can be noted.
	used map[string]bool
}

func (im *importer) note(key, reason string) {
	im.d.Notes = append(im.d.Notes, Note{Key: key, Reason: reason})
}

func (im *importer) use(keys ...string) { im.used[strings.Join(keys, ".")] = true }

// FromOpenClaw maps an OpenClaw openclaw.json onto a pincer configuration:
// model providers and their keys, the default model and its fallbacks,
// the agent defaults pincer shares, the QQ (OneBot: snowluma) and Feishu
// channels' credentials and settings, and the gateway's port and token.
// Every other key is listed in the draft's notes with the reason it was
// left out. home replaces a leading ~ in paths. The draft passes
// Cleaned.
func FromOpenClaw(data []byte, home string) (*Draft, error) {
	tree, err := decodeJSON5(data)
	if err != nil {
		return nil, err
	}
	im := &importer{d: NewDraft(), home: home, providers: map[string]bool{}, used: map[string]bool{}}
	im.d.Header = []string{
		"pincer configuration, imported from an OpenClaw openclaw.json by `pincer init --from`.",
		"JSON5: comments and trailing commas are fine. Keys not written here keep their",
		"defaults; `pincer config example` shows them all. ${NAME} reads the environment.",
	}
	im.gateway(obj(tree["gateway"]))
	im.models(obj(tree["models"]))
	im.agents(obj(tree["agents"]))
	im.messages(obj(tree["messages"]))
	im.session(obj(tree["session"]))
	if lg := obj(tree["logging"]); lg != nil {
		if lvl, ok := lg["level"].(string); ok && slices.Contains([]string{"debug", "info", "warn", "error"}, lvl) {
			im.d.Set(lvl, "", "log", "level")
			im.use("logging", "level")
		}
	}
	channels := obj(tree["channels"])
	im.qq(channels)
	im.feishu(obj(channels["feishu"]))
	im.inboundDebounce(obj(obj(tree["messages"])["inbound"]))
	im.leftovers(tree, "")
	if err := im.d.Cleaned(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(im.d.Notes, func(a, b Note) int { return strings.Compare(a.Key, b.Key) })
	return im.d, nil
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// reasons explains, by OpenClaw key path, why a section is not carried
// over; * is any one key.
var reasons = map[string]string{
	"meta":                      "OpenClaw's own bookkeeping",
	"wizard":                    "OpenClaw's own bookkeeping",
	"auth":                      "auth profiles and OAuth logins: pincer takes API keys from models.providers.<id>.apiKey",
	"env":                       "pincer reads its process environment: export these variables before pincer serve",
	"plugins":                   "pincer has QQ (OneBot) and Feishu built in and no plugins",
	"skills":                    "pincer has no skills",
	"tools":                     "pincer's tools are built in (QQ history and members, Feishu downloads)",
	"hooks":                     "pincer has no hooks",
	"browser":                   "pincer has no browser tool",
	"bindings":                  "pincer has one agent; routing bindings do not apply",
	"agents.list":               "pincer has one agent, configured by agents.defaults",
	"models.mode":               "pincer uses exactly the providers configured",
	"models.providers.*.models": "pincer needs no model catalog: the model id is the part of the ref after the provider; only a model's input list (whether it sees images) is carried over",
	"gateway.auth.mode":         "pincer's gateway authenticates with a token only",
	"gateway.mode":              "pincer always runs the gateway locally",
	"gateway.controlUi":         "pincer's web chat is at the gateway's root",
	"channels.*.dmPolicy":       "pincer has no pairing: use allowFrom / denyFrom",
	"channels.*.groupPolicy":    "use allowFrom / denyFrom and receive.mention",
	"channels.telegram":         "pincer has no Telegram channel",
	"channels.whatsapp":         "pincer has no WhatsApp channel",
	"channels.discord":          "pincer has no Discord channel",
	"channels.slack":            "pincer has no Slack channel",
	"channels.signal":           "pincer has no Signal channel",
	"channels.imessage":         "pincer has no iMessage channel",
	"channels.qqbot":            "pincer reaches QQ through OneBot v11 (channels.onebot), not the official bot API",
	"commands":                  "pincer's commands are configured differently (commands.allowFrom, ownerAllowFrom)",
	"$include":                  "pincer reads one file: merge the included files into openclaw.json first",
}

func reasonFor(key string) string {
	if r, ok := reasons[key]; ok {
		return r
	}
	for p, r := range reasons {
		if strings.Contains(p, "*") {
			if ok, _ := path.Match(strings.ReplaceAll(p, ".", "/"), strings.ReplaceAll(key, ".", "/")); ok {
				return r
			}
		}
	}
	return noSuchSetting
}

const noSuchSetting = "pincer has no such setting"

// leftovers notes every setting of v that the import did not read: a
// whole section when nothing in it was read or it has a reason of its
// own, else each of its keys in turn.
func (im *importer) leftovers(v any, prefix string) {
	m, isObj := v.(map[string]any)
	if prefix != "" {
		if im.used[prefix] {
			return
		}
		if !isObj || len(m) == 0 || hasReason(prefix) || !im.anyUsedUnder(prefix) {
			im.note(prefix, reasonFor(prefix))
			return
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		im.leftovers(m[k], join(prefix, k))
	}
}

func hasReason(key string) bool { return reasonFor(key) != noSuchSetting }

func (im *importer) anyUsedUnder(prefix string) bool {
	for k := range im.used {
		if within(k, prefix) {
			return true
		}
	}
	return false
}

func (im *importer) gateway(g map[string]any) {
	if g == nil {
		return
	}
	host := "127.0.0.1"
	if bind, ok := g["bind"].(string); ok {
		im.use("gateway", "bind")
		switch bind {
		case "loopback":
		case "lan":
			host = "0.0.0.0"
		case "custom":
			if h, ok := g["customBindHost"].(string); ok && h != "" {
				host = h
				im.use("gateway", "customBindHost")
			}
		default:
			im.note("gateway.bind", fmt.Sprintf("%q has no pincer equivalent; pincer listens on 127.0.0.1", bind))
		}
	}
	var token any
	if auth := obj(g["auth"]); auth != nil {
		if t, ok := auth["token"].(string); ok && t != "" {
			token = Verbatim(t)
			im.use("gateway", "auth", "token")
			if mode, _ := auth["mode"].(string); mode == "" || mode == "token" {
				im.use("gateway", "auth", "mode")
			}
		}
	}
	if host != "127.0.0.1" && token == nil {
		im.note("gateway.bind", "pincer needs gateway.token to listen beyond loopback; it listens on 127.0.0.1")
		host = "127.0.0.1"
	}
	port := int64(18789)
	if p, ok := g["port"].(int64); ok {
		port = p
		im.use("gateway", "port")
	}
	if port != 18789 || host != "127.0.0.1" {
		im.d.Set(host+":"+strconv.FormatInt(port, 10), "", "gateway", "listen")
	}
	if token != nil {
		im.d.Set(token, "", "gateway", "token")
	}
}

func (im *importer) models(m map[string]any) {
	provs := obj(m["providers"])
	for _, id := range slices.Sorted(maps.Keys(provs)) {
		p := obj(provs[id])
		key := "models.providers." + id
		if p == nil {
			continue
		}
		apiName, _ := p["api"].(string)
		api, ok := openClawAPIs[apiName]
		if !ok {
			im.note(key, fmt.Sprintf("api %q: pincer speaks openai (chat completions) and anthropic only", apiName))
			im.use("models", "providers", id)
			continue
		}
		im.use("models", "providers", id, "api")
		im.providers[id] = true
		im.d.Set(api, "", "models", "providers", id, "api")
		base, _ := p["baseUrl"].(string)
		if base != "" {
			im.use("models", "providers", id, "baseUrl")
		} else if k, ok := builtinProviders[id]; ok {
			base = k.baseURL
		}
		if base != "" {
			im.d.Set(base, "", "models", "providers", id, "baseUrl")
		}
		switch key := p["apiKey"].(type) {
		case string:
			im.use("models", "providers", id, "apiKey")
			if envName.MatchString(key) {
				im.d.Set(EnvRef(key), "The API key, from the environment variable OpenClaw named.", "models", "providers", id, "apiKey")
			} else {
				im.d.Set(Verbatim(key), "", "models", "providers", id, "apiKey")
			}
		default:
			if k, ok := builtinProviders[id]; ok && k.keyEnv != "" {
				im.d.Set(EnvRef(k.keyEnv), "", "models", "providers", id, "apiKey")
			}
		}
		if h := obj(p["headers"]); len(h) > 0 {
			hs := map[string]any{}
			for k, v := range h {
				if s, ok := v.(string); ok {
					hs[k] = Verbatim(s)
				}
			}
			im.d.Set(hs, "", "models", "providers", id, "headers")
			im.use("models", "providers", id, "headers")
		}
		im.modelInputs(id, p["models"])
	}
}

// modelInputs carries over what the models of provider id read (their
// input lists); the rest of OpenClaw's model catalog pincer does not need.
func (im *importer) modelInputs(id string, v any) {
	list, _ := v.([]any)
	var specs []any
	for _, item := range list {
		m := obj(item)
		mid, _ := m["id"].(string)
		in, _ := m["input"].([]any)
		if mid == "" || len(in) == 0 {
			continue
		}
		inputs := []any{}
		for _, x := range in {
			if s, ok := x.(string); ok && (s == InputText || s == InputImage) {
				inputs = append(inputs, s)
			}
		}
		specs = append(specs, map[string]any{"id": mid, "input": inputs})
	}
	if len(specs) > 0 {
		im.use("models", "providers", id, "models")
		im.d.Set(specs, "Which models see images (input), from OpenClaw's model list.", "models", "providers", id, "models")
	}
}

// provider returns the provider of ref, adding an OpenClaw built-in one
// when it is not configured yet; "" when pincer cannot reach it.
func (im *importer) provider(ref string) string {
	id, model, ok := strings.Cut(ref, "/")
	if !ok || id == "" || model == "" {
		return ""
	}
	if im.providers[id] {
		return id
	}
	k, ok := builtinProviders[id]
	if !ok {
		return ""
	}
	im.providers[id] = true
	im.d.Set(k.api, "", "models", "providers", id, "api")
	im.d.Set(k.baseURL, "", "models", "providers", id, "baseUrl")
	if k.keyEnv != "" {
		im.d.Set(EnvRef(k.keyEnv), "The API key, from the environment (OpenClaw's built-in provider reads it there too).", "models", "providers", id, "apiKey")
	}
	return id
}

// modelChoice carries over agents.defaults.<key> (a ref, or primary and
// fallbacks), each ref through resolve (aliases) and only when pincer can
// reach its provider.
func (im *importer) modelChoice(d map[string]any, key string, resolve func(string) string) {
	var primary string
	var fallbacks []any
	switch m := d[key].(type) {
	case string:
		primary = m
		im.use("agents", "defaults", key)
	case map[string]any:
		if p, ok := m["primary"].(string); ok {
			primary = p
			im.use("agents", "defaults", key, "primary")
		}
		if fs, ok := m["fallbacks"].([]any); ok {
			im.use("agents", "defaults", key, "fallbacks")
			for i, f := range fs {
				ref, _ := f.(string)
				ref = resolve(ref)
				if im.provider(ref) == "" {
					im.note(fmt.Sprintf("agents.defaults.%s.fallbacks[%d]", key, i), fmt.Sprintf("%q: its provider is not configured and not one pincer knows", ref))
					continue
				}
				fallbacks = append(fallbacks, ref)
			}
		}
	}
	if primary != "" {
		primary = resolve(primary)
		if im.provider(primary) == "" {
			im.note("agents.defaults."+key+".primary", fmt.Sprintf("%q: its provider is not configured and not one pincer knows; configure it under models.providers", primary))
		} else {
			im.d.Set(primary, "", "agents", "defaults", key, "primary")
		}
	}
	if len(fallbacks) > 0 && im.d.Has("agents", "defaults", key, "primary") {
		im.d.Set(fallbacks, "", "agents", "defaults", key, "fallbacks")
	}
}

func (im *importer) agents(a map[string]any) {
	d := obj(a["defaults"])
	if d == nil {
		return
	}
	aliases := map[string]string{}
	if ms := obj(d["models"]); ms != nil {
		for ref, v := range ms {
			if alias, ok := obj(v)["alias"].(string); ok && alias != "" {
				aliases[alias] = ref
			}
		}
	}
	resolve := func(ref string) string {
		if r, ok := aliases[ref]; ok {
			return r
		}
		return ref
	}
	im.modelChoice(d, "model", resolve)
	im.modelChoice(d, "imageModel", resolve)
	if len(aliases) > 0 {
		im.use("agents", "defaults", "models")
		for _, alias := range slices.Sorted(maps.Keys(aliases)) {
			if ref := aliases[alias]; im.provider(ref) != "" {
				im.d.Set(ref, "", "models", "aliases", alias)
			} else {
				im.note("agents.defaults.models."+ref, "its provider is not configured and not one pincer knows")
			}
		}
	}
	if ws, ok := d["workspace"].(string); ok && ws != "" {
		im.use("agents", "defaults", "workspace")
		if rest, ok := strings.CutPrefix(ws, "~/"); ok && im.home != "" {
			ws = im.home + "/" + rest
		}
		im.d.Set(ws, "", "agents", "defaults", "workspace")
	}
	for _, k := range []string{"maxConcurrent", "contextTokens"} {
		if n, ok := d[k].(int64); ok {
			im.use("agents", "defaults", k)
			im.d.Set(n, "", "agents", "defaults", k)
		}
	}
	if s, ok := d["timeoutSeconds"].(int64); ok {
		im.use("agents", "defaults", "timeoutSeconds")
		im.d.Set(s*1000, "", "agents", "defaults", "turnTimeoutMs")
	}
	if hb := obj(d["heartbeat"]); hb != nil {
		if every, ok := hb["every"].(string); ok {
			im.use("agents", "defaults", "heartbeat", "every")
			if dur, err := parseOpenClawDuration(every); err == nil {
				im.d.Set(dur.Milliseconds(), "", "agents", "defaults", "heartbeat", "everyMs")
			} else {
				im.note("agents.defaults.heartbeat.every", fmt.Sprintf("%q is not a duration pincer reads", every))
			}
		}
		if p, ok := hb["prompt"].(string); ok {
			im.use("agents", "defaults", "heartbeat", "prompt")
			im.d.Set(p, "", "agents", "defaults", "heartbeat", "prompt")
		}
		if m, ok := hb["model"].(string); ok {
			im.use("agents", "defaults", "heartbeat", "model")
			if im.provider(m) != "" {
				im.d.Set(m, "", "agents", "defaults", "heartbeat", "model")
			} else {
				im.note("agents.defaults.heartbeat.model", fmt.Sprintf("%q: its provider is not configured", m))
			}
		}
	}
	if hd := obj(d["humanDelay"]); hd != nil {
		im.use("agents", "defaults", "humanDelay")
		im.d.Set(known(hd, reflect.TypeFor[HumanDelay]()), "", "agents", "defaults", "humanDelay")
	}
	if tz, ok := d["envelopeTimezone"].(string); ok {
		im.use("agents", "defaults", "envelopeTimezone")
		im.d.Set(tz, "", "agents", "defaults", "envelope", "timezone")
	}
	if tz, ok := d["userTimezone"].(string); ok {
		im.use("agents", "defaults", "userTimezone")
		im.d.Set(tz, "", "agents", "defaults", "envelope", "userTimezone")
	}
}

// parseOpenClawDuration reads "30m", "1h", "0m" or plain milliseconds.
func parseOpenClawDuration(s string) (time.Duration, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Duration(n) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", s, err)
	}
	return d, nil
}

// known returns the parts of v that decode into t, by pincer's keys.
func known(v map[string]any, t reflect.Type) map[string]any {
	out := map[string]any{}
	fields := jsonFields(t)
	for k, e := range v {
		f, ok := fields[k]
		if !ok {
			continue
		}
		if sub, isObj := e.(map[string]any); isObj && f.Type.Kind() == reflect.Struct {
			out[k] = known(sub, f.Type)
			continue
		}
		if s, ok := e.(string); ok {
			e = Verbatim(s)
		}
		out[k] = e
	}
	return out
}

// unknownKeys lists the keys of v (key paths under prefix) that t does
// not have.
func unknownKeys(v map[string]any, t reflect.Type, prefix string) []string {
	var out []string
	fields := jsonFields(t)
	for _, k := range slices.Sorted(maps.Keys(v)) {
		f, ok := fields[k]
		if !ok {
			out = append(out, join(prefix, k))
			continue
		}
		if sub, isObj := v[k].(map[string]any); isObj && f.Type.Kind() == reflect.Struct {
			out = append(out, unknownKeys(sub, f.Type, join(prefix, k))...)
		}
	}
	return out
}

func (im *importer) messages(m map[string]any) {
	if m == nil {
		return
	}
	if p, ok := m["responsePrefix"].(string); ok {
		im.use("messages", "responsePrefix")
		im.d.Set(p, "", "messages", "responsePrefix")
	}
	for _, sec := range []struct {
		key string
		t   reflect.Type
	}{{"queue", reflect.TypeFor[Queue]()}, {"inbound", reflect.TypeFor[Inbound]()}} {
		q := obj(m[sec.key])
		if q == nil {
			continue
		}
		k := known(q, sec.t)
		if sec.key == "inbound" {
			// Burst merging is carried over by the channel it acts on,
			// once the channels are (see inboundDebounce).
			delete(k, "debounceMs")
			delete(k, "maxWaitMs")
			delete(k, "byChannel")
		}
		for _, name := range slices.Sorted(maps.Keys(k)) {
			im.use("messages", sec.key, name)
			im.d.Set(k[name], "", "messages", sec.key, name)
		}
	}
}

// inboundDebounce carries over OpenClaw's messages.inbound burst merging
// to what does the same in pincer. OpenClaw debounces the channels that
// ask for it, byChannel.<channel> over debounceMs, a batch capped at 5 x
// its window. pincer's messages.inbound debounces the web chat alone: the
// keys stay for it. Feishu (which OpenClaw debounces) merges bursts in
// channels.feishu.receive.realtime, so its window goes there, with
// OpenClaw's cap as maxWindowMs. OpenClaw's QQ plugin never read these
// keys (it merges in its own receive.realtime, carried over with the
// channel), and pincer has no other channel they could act on.
func (im *importer) inboundDebounce(in map[string]any) {
	if in == nil {
		return
	}
	const src = "messages.inbound"
	global, hasGlobal := in["debounceMs"].(int64)
	if _, ok := in["debounceMs"]; ok {
		im.use("messages", "inbound", "debounceMs")
		if hasGlobal {
			im.d.Set(global, "", "messages", "inbound", "debounceMs")
		} else {
			im.note(src+".debounceMs", "not a whole number of milliseconds")
		}
	}
	if v, ok := in["maxWaitMs"]; ok {
		im.use("messages", "inbound", "maxWaitMs")
		im.d.Set(v, "", "messages", "inbound", "maxWaitMs")
	}
	by := obj(in["byChannel"])
	if _, ok := in["byChannel"]; ok {
		im.use("messages", "inbound", "byChannel")
	}
	for _, ch := range slices.Sorted(maps.Keys(by)) {
		key := src + ".byChannel." + ch
		switch ch {
		case debouncedChannel:
			im.d.Set(by[ch], "", "messages", "inbound", "byChannel", ch)
		case "feishu":
		case "snowluma", "onebot":
			im.note(key, "OpenClaw's QQ plugin never read it: it merges bursts in its own receive.realtime windows, "+
				"as pincer does in channels.onebot.receive.realtime (windowMs, maxWindowMs), carried over with the channel")
		default:
			reason := reasonFor("channels." + ch)
			if reason == noSuchSetting {
				reason = "pincer has no such channel"
			}
			im.note(key, reason+"; pincer debounces the web chat alone")
		}
	}
	window, set := by["feishu"].(int64)
	key := src + ".byChannel.feishu"
	if _, explicit := by["feishu"]; !explicit {
		window, set, key = global, hasGlobal, src+".debounceMs"
	} else if !set {
		im.note(key, "not a whole number of milliseconds")
		return
	}
	if !set || !im.d.Has("channels", "feishu") {
		if set && key != src+".debounceMs" {
			im.note(key, "no Feishu channel is carried over")
		}
		return
	}
	if window <= 0 {
		if key != src+".debounceMs" {
			im.note(key, "0 (off): pincer merges Feishu bursts in channels.feishu.receive.realtime, on by default "+
				"(windowMs 800, maxWindowMs 3000); set its enabled: false to answer every message alone")
		}
		return
	}
	im.d.Set(window, "A sender's burst merges into one turn until this long of quiet\n(OpenClaw's "+key+").",
		"channels", "feishu", "receive", "realtime", "windowMs")
	im.d.Set(5*window, "At most this long from its first message (OpenClaw's cap: 5 x the window).",
		"channels", "feishu", "receive", "realtime", "maxWindowMs")
}

func (im *importer) session(s map[string]any) {
	if s == nil {
		return
	}
	if scope, ok := s["dmScope"].(string); ok {
		im.use("session", "dmScope")
		switch scope {
		case "main", "per-peer":
			im.d.Set(scope, "", "session", "dmScope")
		default:
			im.d.Set("per-peer", "", "session", "dmScope")
			im.note("session.dmScope", fmt.Sprintf("%q: pincer has main and per-peer; per-peer keeps every direct chat apart", scope))
		}
	}
	if g, ok := s["groupScope"].(string); ok && (g == "main" || g == "per-group") {
		im.use("session", "groupScope")
		im.d.Set(g, "", "session", "groupScope")
	}
	idle, ok := s["idleMinutes"].(int64)
	if ok {
		im.use("session", "idleMinutes")
	} else if r := obj(s["reset"]); r != nil {
		if idle, ok = r["idleMinutes"].(int64); ok {
			im.use("session", "reset", "idleMinutes")
			if mode, _ := r["mode"].(string); mode == "idle" {
				im.use("session", "reset", "mode")
			}
		}
	}
	if ok {
		im.d.Set(idle*60000, "", "session", "idleResetMs")
	}
}

// qq carries over the OneBot channel of the snowluma plugin (or an
// "onebot" channel of the same shape): its keys are pincer's.
func (im *importer) qq(channels map[string]any) {
	for _, name := range []string{"snowluma", "onebot"} {
		c := obj(channels[name])
		if c == nil {
			continue
		}
		if im.d.Has("channels", "onebot") {
			im.note("channels."+name, "only one OneBot channel is carried over (channels.snowluma first)")
			im.use("channels", name)
			continue
		}
		src := "channels." + name
		t := reflect.TypeFor[OneBotAccount]()
		top := known(c, t)
		delete(top, "groups")
		delete(top, "direct")
		im.groups(c["groups"], src+".groups", []string{"channels", "onebot", "groups"}, qqNumber)
		for _, k := range unknownKeys(c, t, src) {
			if k == src+".accounts" {
				continue
			}
			im.note(k, reasonFor(strings.Replace(k, src, "channels.*", 1)))
		}
		im.use("channels", name)
		im.d.Comment(keyDoc([]string{"channels", "onebot"}), "channels", "onebot")
		for _, k := range slices.Sorted(maps.Keys(top)) {
			im.d.Set(top[k], "", "channels", "onebot", k)
		}
		accts := obj(c["accounts"])
		for _, id := range slices.Sorted(maps.Keys(accts)) {
			a := obj(accts[id])
			if a == nil {
				continue
			}
			for _, k := range unknownKeys(a, t, src+".accounts."+id) {
				im.note(k, noSuchSetting)
			}
			target := id
			settings := known(a, t)
			delete(settings, "groups")
			delete(settings, "direct")
			if id == "default" {
				// pincer's default account is the top-level keys.
				for k, v := range settings {
					im.d.Set(v, "", "channels", "onebot", k)
				}
				im.groups(a["groups"], src+".accounts.default.groups", []string{"channels", "onebot", "groups"}, qqNumber)
				continue
			}
			im.d.Set(settings, "", "channels", "onebot", "accounts", target)
			im.groups(a["groups"], src+".accounts."+id+".groups", []string{"channels", "onebot", "accounts", target, "groups"}, qqNumber)
		}
		if !im.d.Has("channels", "onebot", "wsUrl") && !im.d.Has("channels", "onebot", "httpUrl") {
			im.note(src+".wsUrl", "not set: OpenClaw read SNOWLUMA_WS_URL; pincer does not, so set channels.onebot.wsUrl (or reverseWs)")
		}
	}
}

// feishuKeys maps the Feishu plugin's account keys onto pincer's.
var feishuKeys = map[string][]string{
	"enabled":           {"enabled"},
	"name":              {"name"},
	"appId":             {"appId"},
	"appSecret":         {"appSecret"},
	"domain":            {"domain"},
	"connectionMode":    {"mode"},
	"verificationToken": {"verificationToken"},
	"encryptKey":        {"encryptKey"},
	"webhookPath":       {"webhook", "path"},
	"textChunkLimit":    {"textChunkLimit"},
}

func (im *importer) feishu(f map[string]any) {
	if f == nil {
		return
	}
	im.d.Comment(keyDoc([]string{"channels", "feishu"}), "channels", "feishu")
	im.feishuAccount(f, "channels.feishu", []string{"channels", "feishu"})
	accts := obj(f["accounts"])
	for _, id := range slices.Sorted(maps.Keys(accts)) {
		a := obj(accts[id])
		if a == nil {
			continue
		}
		src := "channels.feishu.accounts." + id
		im.use("channels", "feishu", "accounts", id)
		if id == "default" {
			im.feishuAccount(a, src, []string{"channels", "feishu"})
			continue
		}
		im.feishuAccount(a, src, []string{"channels", "feishu", "accounts", id})
	}
	im.use("channels", "feishu", "accounts")
}

func (im *importer) feishuAccount(a map[string]any, src string, dst []string) {
	for _, k := range slices.Sorted(maps.Keys(a)) {
		v := a[k]
		if k == "accounts" {
			continue
		}
		if to, ok := feishuKeys[k]; ok {
			if s, isStr := v.(string); isStr {
				v = Verbatim(s)
			}
			im.d.Set(v, "", append(slices.Clone(dst), to...)...)
			im.used[src+"."+k] = true
			continue
		}
		if k == "groups" {
			im.used[src+"."+k] = true
			im.groups(v, src+".groups", append(slices.Clone(dst), "groups"), feishuID)
			continue
		}
		if k == "allowFrom" || k == "denyFrom" {
			im.used[src+"."+k] = true
			list, _ := v.([]any)
			var out []any
			for _, e := range list {
				s, _ := e.(string)
				switch {
				case s == "*":
					out = append(out, s)
				case strings.HasPrefix(s, "ou_"):
					out = append(out, "user:"+s)
				case strings.HasPrefix(s, "oc_"):
					out = append(out, "chat:"+s)
				case strings.HasPrefix(s, "user:"), strings.HasPrefix(s, "chat:"):
					out = append(out, s)
				default:
					im.note(src+"."+k, fmt.Sprintf("%q is neither an open_id (ou_…) nor a chat id (oc_…)", s))
				}
			}
			im.d.Set(out, "", append(slices.Clone(dst), k)...)
			continue
		}
		im.used[src+"."+k] = true
		im.note(src+"."+k, reasonFor("channels.*."+k))
	}
}

// Keys lists the key paths of the settings the draft writes, in the
// order they are written.
func (d *Draft) Keys() []string {
	var out []string
	var walk func(o *draftObject, prefix string)
	walk = func(o *draftObject, prefix string) {
		for _, e := range o.entries {
			if sub, ok := e.value.(*draftObject); ok {
				walk(sub, join(prefix, e.key))
				continue
			}
			out = append(out, join(prefix, e.key))
		}
	}
	if d.root != nil {
		walk(d.root, "")
	}
	return out
}

// groups carries OpenClaw's per-group settings (channels.<channel>.groups,
// src) over to pincer's chat entries at dst: enabled, requireMention,
// systemPrompt, allowFrom and the tool lists. What has no counterpart in
// a chat entry is noted.
func (im *importer) groups(v any, src string, dst []string, chatID func(string) bool) {
	groups := obj(v)
	for _, id := range slices.Sorted(maps.Keys(groups)) {
		from := src + "." + id
		g := obj(groups[id])
		if g == nil {
			im.note(from, "a group's settings are an object")
			continue
		}
		if id != "*" && !chatID(id) {
			im.note(from, fmt.Sprintf("%q is not a group id pincer knows (want '*' or the group's id)", id))
			continue
		}
		entry := map[string]any{}
		for _, k := range slices.Sorted(maps.Keys(g)) {
			val := g[k]
			switch k {
			case "enabled":
				if b, ok := val.(bool); ok {
					entry["enabled"] = b
					continue
				}
			case "requireMention":
				if b, ok := val.(bool); ok {
					entry["receive"] = map[string]any{"mention": map[string]any{"requireMentionInGroup": b}}
					continue
				}
			case "systemPrompt":
				if s, ok := val.(string); ok {
					entry["systemPrompt"] = Verbatim(s)
					continue
				}
			case "allowFrom":
				if list, ok := val.([]any); ok {
					var out []any
					for _, e := range list {
						s := strings.TrimSpace(fmt.Sprint(e))
						if s == "*" || chatID(s) {
							out = append(out, s)
						} else {
							im.note(from+".allowFrom", fmt.Sprintf("%q is not a sender id pincer knows", s))
						}
					}
					entry["allowFrom"] = out
					continue
				}
			case "tools":
				tools := obj(val)
				if tools == nil {
					break
				}
				out := map[string]any{}
				for _, list := range []string{"allow", "deny"} {
					names, _ := tools[list].([]any)
					var kept []any
					for _, n := range names {
						if s, ok := n.(string); ok && toolNamePattern.MatchString(s) {
							kept = append(kept, s)
						} else {
							im.note(from+".tools."+list, fmt.Sprintf("%v is not a tool name pincer knows (its tools are named like onebot_get_history)", n))
						}
					}
					if names != nil {
						out[list] = kept
					}
				}
				for _, k := range slices.Sorted(maps.Keys(tools)) {
					if k != "allow" && k != "deny" {
						im.note(from+".tools."+k, noSuchSetting)
					}
				}
				entry["tools"] = out
				im.note(from+".tools", "carried over by name: OpenClaw's tools are not pincer's, so check that the names are pincer's (pincer config explain shows them in effect)")
				continue
			case "historyLimit":
				im.note(from+"."+k, "pincer bounds the history per account: receive.history.maxMessages")
				continue
			default:
				im.note(from+"."+k, noSuchSetting)
				continue
			}
			im.note(from+"."+k, fmt.Sprintf("%v is not a value pincer takes here", val))
		}
		if len(entry) > 0 {
			im.d.Set(entry, "", append(slices.Clone(dst), id)...)
		}
	}
}
