package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/pincerbot/pincer/internal/config"
)

// Default endpoints of the two APIs, as their SDKs have them.
const (
	defaultOpenAIBase    = "https://api.openai.com/v1"
	defaultAnthropicBase = "https://api.anthropic.com"
	anthropicVersion     = "2023-06-01"
)

// modelChecks checks every configured provider: it lists the models with
// the configured key (GET {baseUrl}/models for OpenAI-compatible servers,
// GET /v1/models with x-api-key for Anthropic), which costs no tokens.
func modelChecks(cfg config.Config, o Options) []func(context.Context) []Result {
	providers := cfg.Models.Providers
	if len(providers) == 0 {
		return []func(context.Context) []Result{one(func(context.Context) Result {
			return Result{
				Name: "models", Status: Warn,
				Detail: "no model provider configured: the preview agent answers, showing what a model would be sent",
				Hint:   "add one under models.providers (`pincer init` asks for it)",
			}
		})}
	}
	wanted := wantedModels(cfg)
	var checks []func(context.Context) []Result
	for _, id := range slices.Sorted(maps.Keys(providers)) {
		p := providers[id]
		checks = append(checks, one(func(ctx context.Context) Result {
			return checkProvider(ctx, id, p, wanted[id], o)
		}))
	}
	return checks
}

// wantedModels lists, by provider, the model ids the configuration uses.
func wantedModels(cfg config.Config) map[string][]string {
	out := map[string][]string{}
	d := cfg.Agents.Defaults
	refs := append([]string{d.Model.Primary, d.Heartbeat.Model}, d.Model.Fallbacks...)
	for _, ref := range refs {
		if p, m, ok := strings.Cut(ref, "/"); ok && !slices.Contains(out[p], m) {
			out[p] = append(out[p], m)
		}
	}
	return out
}

func checkProvider(ctx context.Context, id string, p config.Provider, wanted []string, o Options) Result {
	res := Result{Name: "model " + id}
	key := "models.providers." + id + "."
	api := p.ResolvedAPI(id)
	base := strings.TrimRight(p.BaseURL, "/")
	var url string
	switch api {
	case config.APIAnthropic:
		if base == "" {
			base = defaultAnthropicBase
		}
		url = base + "/v1/models"
	default:
		if base == "" {
			base = defaultOpenAIBase
		}
		url = base + "/models"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		res.Status, res.Detail = Fail, fmt.Sprintf("%s: %v", url, err)
		return res
	}
	for k, v := range p.Headers {
		req.Header.Set(k, v)
	}
	if k := p.APIKey.Value(); k != "" {
		if api == config.APIAnthropic {
			req.Header.Set("x-api-key", k)
		} else {
			req.Header.Set("Authorization", "Bearer "+k)
		}
	}
	if api == config.APIAnthropic {
		req.Header.Set("anthropic-version", anthropicVersion)
	}
	resp, err := o.Client.Do(req)
	if err != nil {
		return unreachable(res, key+"baseUrl", base, err, o.Timeout, "is the model server running at baseUrl?")
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	switch code := resp.StatusCode; {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		res.Status = Fail
		res.Detail = fmt.Sprintf("%s: the API key is refused (HTTP %d)", base, code)
		if p.APIKey == "" {
			res.Detail = fmt.Sprintf("%s wants an API key (HTTP %d) and none is set", base, code)
		}
		res.Hint = "set " + key + "apiKey, e.g. '${" + envGuess(id) + "}', to a key this server accepts"
		if m := apiMessage(body); m != "" {
			res.Items = []string{m}
		}
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed:
		res.Status = Warn
		res.Detail = fmt.Sprintf("%s answers, but does not list models at %s (HTTP %d), so the key was not checked", base, url, code)
		res.Hint = "is " + key + "baseUrl right? OpenAI-compatible servers usually end it in /v1"
	case code == http.StatusTooManyRequests:
		res.Status = Warn
		res.Detail = fmt.Sprintf("%s: rate limited (HTTP 429); the key was accepted", base)
	case code >= 500:
		res.Status = Warn
		res.Detail = fmt.Sprintf("%s: the server failed (HTTP %d)", base, code)
		res.Hint = "try again later; replies fall back to agents.defaults.model.fallbacks meanwhile"
	case code/100 != 2:
		res.Status = Fail
		res.Detail = fmt.Sprintf("%s answered HTTP %d to %s", base, code, url)
		if m := apiMessage(body); m != "" {
			res.Detail += ": " + m
		}
	default:
		res.Status = OK
		listed := listedModels(body)
		res.Detail = fmt.Sprintf("%s: key accepted", base)
		if p.APIKey == "" {
			res.Detail = fmt.Sprintf("%s: answers without a key", base)
		}
		if listed != nil {
			res.Detail += fmt.Sprintf(", %d models listed", len(listed))
			var missing []string
			for _, m := range wanted {
				if !listed[m] {
					missing = append(missing, m)
				}
			}
			if len(missing) > 0 {
				res.Status = Warn
				res.Detail += "; not among them: " + strings.Join(missing, ", ")
				res.Hint = "check the model id (agents.defaults.model), or pull/deploy the model on the server"
			}
		}
	}
	return res
}

// listedModels reads the ids of a model list ({"data":[{"id":…}]} in both
// APIs, {"models":[{"name"…}]} in Ollama's own); nil when it is neither.
func listedModels(body []byte) map[string]bool {
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		Models []struct {
			Name  string `json:"name"`
			Model string `json:"model"`
		} `json:"models"`
	}
	if json.Unmarshal(body, &list) != nil || list.Data == nil && list.Models == nil {
		return nil
	}
	out := map[string]bool{}
	for _, m := range list.Data {
		out[m.ID] = true
	}
	for _, m := range list.Models {
		out[m.Name], out[m.Model] = true, true
	}
	return out
}

// apiMessage is the error message of an OpenAI or Anthropic error body.
func apiMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil {
		return e.Error.Message
	}
	return ""
}

func envGuess(id string) string {
	return strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(id)) + "_API_KEY"
}
