package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/doctor"
)

// initAnswers are what pincer init asks for.
type initAnswers struct {
	wsURL      string
	reverse    bool
	tokenEnv   string
	token      string
	selfID     string
	api        string
	providerID string
	baseURL    string
	keyEnv     string
	key        string
	model      string
	output     string
}

// initCmd runs pincer init: it asks for (or takes as flags) the QQ
// connection and the model, or reads an OpenClaw file with --from, writes
// a commented pincer.json5 and runs doctor on it.
func initCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("init", "init [--non-interactive] [--from openclaw.json] [--force] [flags]", `Writes a commented pincer.json5: asks for the QQ connection and the model
(or takes them from the flags with --non-interactive), or carries an
OpenClaw configuration over with --from, then runs pincer doctor on it.
`, stderr)
	var a initAnswers
	nonInteractive := fs.Bool("non-interactive", false, "take every answer from the flags, ask nothing")
	force := fs.Bool("force", false, "overwrite the output file")
	from := fs.String("from", "", "an OpenClaw openclaw.json to carry the settings over from")
	noDoctor := fs.Bool("no-doctor", false, "do not run pincer doctor on the written file")
	fs.StringVar(&a.output, "output", config.DefaultFile, "the file to write")
	fs.StringVar(&a.wsURL, "onebot-ws", "", "the QQ implementation's forward WebSocket, e.g. ws://127.0.0.1:3001")
	fs.BoolVar(&a.reverse, "onebot-reverse", false, "let the QQ implementation connect to pincer (reverse WebSocket)")
	fs.StringVar(&a.tokenEnv, "onebot-token-env", "", "environment variable holding the OneBot access token")
	fs.StringVar(&a.token, "onebot-token", "", "the OneBot access token itself (prefer --onebot-token-env)")
	fs.StringVar(&a.selfID, "onebot-self-id", "", "the bot's QQ number (asked from the implementation when empty)")
	fs.StringVar(&a.api, "provider", "", "model API: openai (any OpenAI-compatible server) or anthropic")
	fs.StringVar(&a.providerID, "provider-id", "", "the provider's id in model refs (default: openai or anthropic)")
	fs.StringVar(&a.baseURL, "base-url", "", "the model API's base URL (default: the provider's own)")
	fs.StringVar(&a.keyEnv, "api-key-env", "", "environment variable holding the API key")
	fs.StringVar(&a.key, "api-key", "", "the API key itself (prefer --api-key-env)")
	fs.StringVar(&a.model, "model", "", "the model id, e.g. gpt-4o-mini")
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pincer init: unexpected arguments %q\n", fs.Args())
		return 2
	}
	var d *config.Draft
	switch {
	case *from != "":
		if err := refuseOverwrite(a.output, *force); err != nil {
			fmt.Fprintf(stderr, "pincer init: %v\n", err)
			return 1
		}
		data, err := os.ReadFile(*from)
		if err != nil {
			fmt.Fprintf(stderr, "pincer init: %v\n", err)
			return 1
		}
		home, _ := os.UserHomeDir()
		if d, err = config.FromOpenClaw(data, home); err != nil {
			fmt.Fprintf(stderr, "pincer init: %s: %v\n", *from, err)
			return 1
		}
	case *nonInteractive:
		if err := a.check(); err != nil {
			fmt.Fprintf(stderr, "pincer init: %v\n", err)
			return 2
		}
		if err := refuseOverwrite(a.output, *force); err != nil {
			fmt.Fprintf(stderr, "pincer init: %v\n", err)
			return 1
		}
		d = a.draft()
	default:
		// Refused before the questions rather than after them.
		if err := refuseOverwrite(a.output, *force); err != nil {
			fmt.Fprintf(stderr, "pincer init: %v\n", err)
			return 1
		}
		if err := a.ask(bufio.NewReader(stdin), stdout, *force); err != nil {
			fmt.Fprintf(stderr, "pincer init: %v\n", err)
			return 1
		}
		d = a.draft()
	}
	if err := writeNew(a.output, d.JSON5(), *force); err != nil {
		fmt.Fprintf(stderr, "pincer init: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s\n", a.output)
	if len(d.Notes) > 0 {
		fmt.Fprintf(stdout, "not carried over from %s (also listed at the top of %s):\n", *from, a.output)
		for _, n := range d.Notes {
			fmt.Fprintf(stdout, "  - %s\n", n)
		}
	}
	for _, name := range []string{a.tokenEnv, a.keyEnv} {
		if _, set := os.LookupEnv(name); name != "" && !set {
			fmt.Fprintf(stdout, "note: %s is not set in this shell; export it before pincer serve\n", name)
		}
	}
	if *noDoctor {
		return 0
	}
	fmt.Fprintln(stdout)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	printReport(stdout, doctor.Run(ctx, a.output, doctor.Options{}))
	return 0 // doctor's failures are shown, not init's
}

func refuseOverwrite(path string, force bool) error {
	if force {
		return nil
	}
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%s exists; pass --force to overwrite it", path)
	}
	return nil
}

// writeNew writes data to path, readable by its owner only (it may hold
// secrets), refusing to replace a file unless force.
func writeNew(path string, data []byte, force bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if !force {
		flags |= os.O_EXCL
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists; pass --force to overwrite it", path)
	}
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Checks of single answers; each returns a message or "".
func checkWS(s string) string {
	if s == "" {
		return ""
	}
	if u, err := url.Parse(s); err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return fmt.Sprintf("want a ws:// or wss:// URL such as ws://127.0.0.1:3001, got %q", s)
	}
	return ""
}

func checkHTTP(s string) string {
	if s == "" {
		return ""
	}
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("want an http:// or https:// URL, got %q", s)
	}
	return ""
}

func checkEnvName(s string) string {
	if s == "" || envNamePattern.MatchString(s) {
		return ""
	}
	return fmt.Sprintf("want an environment variable name such as OPENAI_API_KEY, got %q", s)
}

func checkAPI(s string) string {
	if s == "" || s == config.APIOpenAI || s == config.APIAnthropic {
		return ""
	}
	return fmt.Sprintf("want openai or anthropic, got %q", s)
}

func checkSelfID(s string) string {
	if s == "" {
		return ""
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return fmt.Sprintf("want a QQ number, got %q", s)
		}
	}
	return ""
}

func checkProviderID(s string) string {
	if strings.ContainsAny(s, "/ ") {
		return fmt.Sprintf("want an id without '/' or spaces, got %q", s)
	}
	return ""
}

// check validates the flags of a non-interactive run.
func (a *initAnswers) check() error {
	var errs []error
	for _, c := range []struct{ flag, msg string }{
		{"--onebot-ws", checkWS(a.wsURL)},
		{"--onebot-token-env", checkEnvName(a.tokenEnv)},
		{"--onebot-self-id", checkSelfID(a.selfID)},
		{"--provider", checkAPI(a.api)},
		{"--provider-id", checkProviderID(a.providerID)},
		{"--base-url", checkHTTP(a.baseURL)},
		{"--api-key-env", checkEnvName(a.keyEnv)},
	} {
		if c.msg != "" {
			errs = append(errs, fmt.Errorf("%s: %s", c.flag, c.msg))
		}
	}
	if a.tokenEnv != "" && a.token != "" {
		errs = append(errs, errors.New("give --onebot-token-env or --onebot-token, not both"))
	}
	if a.keyEnv != "" && a.key != "" {
		errs = append(errs, errors.New("give --api-key-env or --api-key, not both"))
	}
	if (a.api != "" || a.baseURL != "" || a.keyEnv != "" || a.key != "") && a.model == "" {
		errs = append(errs, errors.New("--model is required with a model provider"))
	}
	if a.output == "" {
		errs = append(errs, errors.New("--output must not be empty"))
	}
	return errors.Join(errs...)
}

// ask fills the answers from a terminal conversation; flags already
// given are taken as defaults. An output file that exists is refused
// unless force.
func (a *initAnswers) ask(in *bufio.Reader, out io.Writer, force bool) error {
	q := asker{in: in, out: out}
	fmt.Fprintln(out, "pincer init: a few questions, then pincer.json5 is written and checked.")
	fmt.Fprintln(out, "Press Enter to take the [default].")
	fmt.Fprintln(out)
	fmt.Fprintln(out, "QQ, through a OneBot v11 implementation (NapCat, SnowLuma, LLOneBot, Lagrange):")
	conn := q.ask("  its forward WebSocket address, \"reverse\" to let it connect to pincer, or \"none\"", firstNonEmpty(a.wsURL, "ws://127.0.0.1:3001"), func(s string) string {
		if s == "reverse" || s == "none" {
			return ""
		}
		return checkWS(s)
	})
	switch conn {
	case "reverse":
		a.wsURL, a.reverse = "", true
	case "none":
		a.wsURL = ""
	default:
		a.wsURL = conn
	}
	if a.wsURL != "" || a.reverse {
		tok := q.ask("  environment variable holding its access token (\"none\" for no token)", firstNonEmpty(a.tokenEnv, "ONEBOT_ACCESS_TOKEN"), func(s string) string {
			if s == "none" {
				return ""
			}
			return checkEnvName(s)
		})
		a.tokenEnv, a.token = tok, ""
		if tok == "none" {
			a.tokenEnv = ""
		}
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "The model provider:")
	for i, p := range presets {
		fmt.Fprintf(out, "  %d. %s\n", i+1, p.name)
	}
	var preset provider
	q.ask("  number or name", defaultPreset(a.api).name, func(s string) string {
		p, ok := findPreset(s)
		if !ok {
			return fmt.Sprintf("want a number from 1 to %d or a name above, got %q", len(presets), s)
		}
		preset = p
		return ""
	})
	if preset.id == "" {
		preset = defaultPreset(a.api) // no usable answer: q.err says why
	}
	a.api = preset.api
	if a.providerID == "" && preset.id != preset.api {
		a.providerID = preset.id
	}
	defBase, defKey, defModel := preset.baseURL, preset.keyEnv, preset.model
	a.baseURL = q.ask("  base URL", firstNonEmpty(a.baseURL, defBase), checkHTTP)
	key := q.ask("  environment variable holding the API key (\"none\" for no key)", firstNonEmpty(a.keyEnv, defKey), func(s string) string {
		if s == "none" {
			return ""
		}
		return checkEnvName(s)
	})
	a.keyEnv, a.key = key, ""
	if key == "none" {
		a.keyEnv = ""
	}
	a.model = q.ask("  model id", firstNonEmpty(a.model, defModel), func(s string) string {
		if strings.TrimSpace(s) == "" {
			return "a model id is needed"
		}
		return ""
	})
	fmt.Fprintln(out)
	a.output = q.ask("Write the configuration to", firstNonEmpty(a.output, config.DefaultFile), func(s string) string {
		if strings.TrimSpace(s) == "" {
			return "a file name is needed"
		}
		if err := refuseOverwrite(s, force); err != nil {
			return err.Error() + ", or give another name"
		}
		return ""
	})
	return q.err
}

// provider is a model provider the interactive init offers, with the
// defaults of its questions.
type provider struct {
	// name is shown; id is the provider's id in model refs, and an answer
	// that picks it as the name does.
	name, id string
	// aliases are other answers that pick it.
	aliases                     []string
	api, baseURL, keyEnv, model string
}

// presets are the providers the interactive init lists, by number.
var presets = []provider{
	{name: "OpenAI", id: "openai", api: config.APIOpenAI, baseURL: "https://api.openai.com/v1", keyEnv: "OPENAI_API_KEY", model: "gpt-4o-mini"},
	{name: "DeepSeek", id: "deepseek", aliases: []string{"深度求索"}, api: config.APIOpenAI, baseURL: "https://api.deepseek.com/v1", keyEnv: "DEEPSEEK_API_KEY", model: "deepseek-chat"},
	{name: "Qwen (通义千问, DashScope)", id: "qwen", aliases: []string{"通义千问", "dashscope", "tongyi"}, api: config.APIOpenAI, baseURL: "https://dashscope.aliyuncs.com/compatible-mode/v1", keyEnv: "DASHSCOPE_API_KEY", model: "qwen-plus"},
	{name: "Anthropic (Claude)", id: "anthropic", aliases: []string{"claude"}, api: config.APIAnthropic, baseURL: "https://api.anthropic.com", keyEnv: "ANTHROPIC_API_KEY", model: "claude-sonnet-4-5"},
	{name: "Ollama (local)", id: "ollama", api: config.APIOpenAI, baseURL: "http://127.0.0.1:11434/v1", keyEnv: "none", model: "qwen2.5"},
	{name: "another OpenAI-compatible server (vLLM, LM Studio, …)", id: "openai", aliases: []string{"other", "openai-compatible", "vllm"}, api: config.APIOpenAI, baseURL: "http://127.0.0.1:8000/v1", keyEnv: "OPENAI_API_KEY", model: "gpt-4o-mini"},
}

// findPreset returns the provider an answer picks: its number in the list,
// its id, its name (whole, or before the parenthesis) or an alias, in any
// case.
func findPreset(answer string) (provider, bool) {
	answer = strings.TrimSpace(answer)
	if n, err := strconv.Atoi(answer); err == nil {
		if n >= 1 && n <= len(presets) {
			return presets[n-1], true
		}
		return provider{}, false
	}
	for _, p := range presets {
		short, _, _ := strings.Cut(p.name, " (")
		for _, name := range append([]string{p.id, p.name, short}, p.aliases...) {
			if strings.EqualFold(answer, name) {
				return p, true
			}
		}
	}
	return provider{}, false
}

// defaultPreset is the provider offered by default: Anthropic for
// --provider anthropic, else OpenAI.
func defaultPreset(api string) provider {
	if api == config.APIAnthropic {
		return presets[3]
	}
	return presets[0]
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// asker asks questions on a terminal, or of a script on standard input.
type asker struct {
	in  *bufio.Reader
	out io.Writer
	err error
}

// ask prints prompt, reads one line and returns it, or def for an empty
// line or the end of the input. An answer check refuses is asked again,
// three times at most.
func (q *asker) ask(prompt, def string, check func(string) string) string {
	for range 3 {
		if q.err != nil {
			return def
		}
		fmt.Fprintf(q.out, "%s [%s]: ", prompt, def)
		line, err := q.in.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			q.err = fmt.Errorf("read the answer: %w", err)
			return def
		}
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(q.out)
			if line == "" {
				return def
			}
		}
		ans := strings.TrimSpace(line)
		if ans == "" {
			ans = def
		}
		if msg := check(ans); msg != "" {
			fmt.Fprintf(q.out, "  %s\n", msg)
			if errors.Is(err, io.EOF) {
				q.err = errors.New(msg)
				return def
			}
			continue
		}
		return ans
	}
	q.err = fmt.Errorf("no usable answer to %q", prompt)
	return def
}

// draft renders the answers as a configuration.
func (a *initAnswers) draft() *config.Draft {
	d := config.NewDraft()
	d.Header = []string{
		"pincer configuration, written by `pincer init`.",
		"JSON5: comments, trailing commas and unquoted keys are fine. Keys not written",
		"here keep their defaults; `pincer config example` shows every key with its",
		"default. ${NAME} is read from the environment when pincer starts.",
		"Check it with `pincer config check`, and the whole setup with `pincer doctor`.",
	}
	d.Set("127.0.0.1:18789", "", "gateway", "listen")
	if a.api != "" || a.model != "" {
		api := firstNonEmpty(a.api, config.APIOpenAI)
		id := firstNonEmpty(a.providerID, api)
		d.Set(api, "", "models", "providers", id, "api")
		if a.baseURL != "" {
			d.Set(a.baseURL, "", "models", "providers", id, "baseUrl")
		}
		switch {
		case a.keyEnv != "":
			d.Set(config.EnvRef(a.keyEnv), "", "models", "providers", id, "apiKey")
		case a.key != "":
			d.Set(a.key, "The API key, written here as given: better move it to the environment\nand write '${NAME}' instead.", "models", "providers", id, "apiKey")
		}
		d.Set(id+"/"+a.model, "", "agents", "defaults", "model", "primary")
	}
	if a.wsURL != "" || a.reverse {
		if a.wsURL != "" {
			d.Set(a.wsURL, "", "channels", "onebot", "wsUrl")
		}
		switch {
		case a.tokenEnv != "":
			d.Set(config.EnvRef(a.tokenEnv), "", "channels", "onebot", "accessToken")
		case a.token != "":
			d.Set(a.token, "", "channels", "onebot", "accessToken")
		}
		if a.selfID != "" {
			d.Set(a.selfID, "", "channels", "onebot", "selfId")
		}
		if a.reverse {
			d.Set(true, "", "channels", "onebot", "reverseWs", "enabled")
			d.Set(config.DefaultReverseWSPath, "Point the implementation's reverse WebSocket at ws://127.0.0.1:18789"+config.DefaultReverseWSPath+".", "channels", "onebot", "reverseWs", "path")
		}
	}
	return d
}

// describeOpenClaw tells, for an OpenClaw openclaw.json given to pincer
// config check, what pincer init --from would carry over and leave out,
// and reports whether path was one.
func describeOpenClaw(path string, w io.Writer) bool {
	if path == "" {
		return false
	}
	data, err := os.ReadFile(path)
	if err != nil || !config.LooksLikeOpenClaw(data) {
		return false
	}
	home, _ := os.UserHomeDir()
	d, err := config.FromOpenClaw(data, home)
	if err != nil {
		return false
	}
	fmt.Fprintf(w, "%s is an OpenClaw configuration, not a pincer one.\n", path)
	fmt.Fprintf(w, "`pincer init --from %s` would write %s with:\n", path, config.DefaultFile)
	for _, k := range d.Keys() {
		fmt.Fprintf(w, "  + %s\n", k)
	}
	if len(d.Notes) > 0 {
		fmt.Fprintln(w, "and leave out:")
		for _, n := range d.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
	return true
}
