package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"

	"github.com/pincerbot/pincer/internal/config"
)

// Feishu's token endpoint for self-built apps, and the bot's own info.
const (
	tenantTokenPath = "/open-apis/auth/v3/tenant_access_token/internal"
	botInfoPath     = "/open-apis/bot/v3/info"
)

// feishuHints explain the codes the token endpoint and the bot info
// answer with when the app is misconfigured.
var feishuHints = map[int]string{
	10003:    "the platform does not know this appId: copy it from the developer console (Credentials & Basic Info), and check domain (feishu or lark)",
	10014:    "the appSecret is wrong: copy it again from the developer console (Credentials & Basic Info); reset secrets invalidate the old one",
	10015:    "the appSecret is wrong (or was reset): copy it again from the developer console",
	99991663: "the tenant token was refused: check appId and appSecret",
	99991400: "rate limited by the platform: try again in a minute",
	230006:   "the app has no bot ability: add \"Bot\" under Features in the developer console and publish a version",
}

// feishuChecks checks every enabled Feishu app: a tenant_access_token is
// fetched with its appId and appSecret from its domain, then the bot's
// info with that token.
func feishuChecks(cfg config.Config, o Options) []func(context.Context) []Result {
	var checks []func(context.Context) []Result
	all := cfg.Channels.Feishu.All()
	for _, id := range slices.Sorted(maps.Keys(all)) {
		a := all[id]
		if !a.Active() {
			continue
		}
		key := accountKey("channels.feishu", id)
		checks = append(checks, one(func(ctx context.Context) Result {
			res := checkFeishu(ctx, "feishu "+id, key, a, o)
			if res.Status == OK && a.Mode == config.FeishuWebhookMode {
				u := inboundURL("http", cfg.Gateway.Listen, a.Webhook.Path)
				res.Detail += "; events arrive by webhook at " + u
				res.Hint = "set " + u + " (reachable from the platform) as the Request URL under Events and Callbacks"
			}
			return res
		}))
	}
	return checks
}

// platformAnswer is the open platform's JSON envelope.
type platformAnswer struct {
	Code  int    `json:"code"`
	Msg   string `json:"msg"`
	Token string `json:"tenant_access_token"`
	Bot   struct {
		AppName string `json:"app_name"`
		OpenID  string `json:"open_id"`
	} `json:"bot"`
}

func checkFeishu(ctx context.Context, name, key string, a config.FeishuAccount, o Options) Result {
	res := Result{Name: name}
	base := a.BaseURL()
	body, _ := json.Marshal(map[string]string{"app_id": a.AppID, "app_secret": a.AppSecret.Value()})
	ans, status, err := platformCall(ctx, o.Client, http.MethodPost, base+tenantTokenPath, "", body)
	if err != nil {
		return unreachable(res, key+"domain", base, err, o.Timeout, "is domain right (feishu, lark or your deployment's URL)?")
	}
	if ans.Code != 0 || ans.Token == "" {
		res.Status = Fail
		res.Detail = fmt.Sprintf("%s refused app %s: code %d %s", base, a.AppID, ans.Code, ans.Msg)
		if ans.Code == 0 {
			res.Detail = fmt.Sprintf("%s answered HTTP %d without a tenant token", base, status)
		}
		res.Hint = feishuHints[ans.Code]
		if res.Hint == "" {
			res.Hint = "check " + key + "appId and " + key + "appSecret against the developer console"
		}
		return res
	}
	res.Status = OK
	res.Detail = fmt.Sprintf("%s: app %s has a tenant token", base, a.AppID)
	info, _, err := platformCall(ctx, o.Client, http.MethodGet, base+botInfoPath, ans.Token, nil)
	switch {
	case err != nil:
		res.Status, res.Detail = Warn, res.Detail+"; bot info: "+err.Error()
	case info.Code != 0:
		res.Status = Warn
		res.Detail += fmt.Sprintf("; bot info refused: code %d %s", info.Code, info.Msg)
		res.Hint = firstOf(feishuHints[info.Code], "does the app have the bot ability?")
	case info.Bot.AppName != "":
		res.Detail += fmt.Sprintf(", bot %q (%s)", info.Bot.AppName, info.Bot.OpenID)
	}
	if a.Mode != config.FeishuWebhookMode && res.Status != Fail {
		checkLongConn(ctx, &res, key, a, o)
	}
	return res
}

// wsEndpointPath is where the long connection's client asks for its
// WebSocket URL.
const wsEndpointPath = "/callback/ws/endpoint"

// checkLongConn asks for the long connection's endpoint as pincer serve
// does when it connects, without opening the connection (an open one
// would be handed events, in cluster mode, that the doctor cannot take).
func checkLongConn(ctx context.Context, res *Result, key string, a config.FeishuAccount, o Options) {
	body, _ := json.Marshal(map[string]string{"AppID": a.AppID, "AppSecret": a.AppSecret.Value()})
	var ans struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
		Data struct {
			URL string `json:"URL"`
		} `json:"data"`
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.BaseURL()+wsEndpointPath, bytes.NewReader(body))
	if err != nil {
		res.Status, res.Detail = Warn, res.Detail+"; long connection: "+err.Error()
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := o.Client.Do(req)
	if err != nil {
		res.Status, res.Detail = Warn, res.Detail+"; long connection endpoint: "+rootCause(err)
		return
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case json.Unmarshal(raw, &ans) != nil:
		res.Status = Warn
		res.Detail += fmt.Sprintf("; long connection endpoint: HTTP %d, not the open platform's JSON", resp.StatusCode)
	case ans.Code == 1:
		res.Status, res.Detail = Warn, res.Detail+"; long connection endpoint busy: try again shortly"
	case ans.Code != 0 || ans.Data.URL == "":
		res.Status = Fail
		res.Detail += fmt.Sprintf("; the long connection was refused: code %d %s", ans.Code, ans.Msg)
		res.Hint = "only an enabled self-built app may use the long connection: check " + key + "appId and " + key +
			"appSecret against the developer console, or set " + key + "mode to webhook"
	default:
		res.Detail += "; the long connection's endpoint answers (pincer status shows the connection of a running pincer serve)"
	}
}

// platformCall makes one open platform request and decodes its JSON
// answer, whatever the HTTP status (business errors come as 400 with a
// JSON body).
func platformCall(ctx context.Context, client *http.Client, method, url, token string, body []byte) (platformAnswer, int, error) {
	var ans platformAnswer
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return ans, 0, fmt.Errorf("feishu: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return ans, 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return ans, resp.StatusCode, fmt.Errorf("feishu: read: %w", err)
	}
	if err := json.Unmarshal(raw, &ans); err != nil && resp.StatusCode != http.StatusOK {
		return ans, resp.StatusCode, fmt.Errorf("HTTP %d, not the open platform's JSON", resp.StatusCode)
	}
	return ans, resp.StatusCode, nil
}
