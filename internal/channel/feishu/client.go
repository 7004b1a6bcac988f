package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	lark "github.com/larksuite/oapi-sdk-go/v3"
	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"

	"github.com/pincerbot/pincer/internal/channel/feishu/larkmsg"
)

// Feishu codes pincer acts on (reference §1.5).
const (
	codeBotNotInChat     = 230002
	codeRecalled         = 230011
	codeIMRateLimited    = 230020
	codeTooLong          = 230025
	codeNoPermission     = 230027
	codeInvisible        = 230050
	codeDeleted          = 230110
	codeReplyUnavailable = 231003
	codeRateLimited      = 99991400
	codeTenantToken      = 99991663
	codeAppToken         = 99991664
	codeAccessToken      = 99991671
)

// client calls the open platform as the app's bot, through the official
// SDK. It keeps the tenant token itself: the SDK's cache retries an
// invalid token with the same stale token, so pincer fetches a fresh one
// on an invalid-token code and retries once.
type client struct {
	sdk       *lark.Client
	appID     string
	appSecret string

	mu      sync.Mutex
	token   string
	expires time.Time
}

// newClient builds the client for an app on the platform at base.
func newClient(appID, appSecret, base string, hc *http.Client, timeout time.Duration) *client {
	opts := []lark.ClientOptionFunc{
		lark.WithOpenBaseUrl(base), lark.WithEnableTokenCache(false),
		lark.WithLogLevel(larkcore.LogLevelError), lark.WithLogger(quietLogger{}),
	}
	if hc != nil {
		opts = append(opts, lark.WithHttpClient(hc))
	}
	if timeout > 0 {
		opts = append(opts, lark.WithReqTimeout(timeout))
	}
	return &client{sdk: lark.NewClient(appID, appSecret, opts...), appID: appID, appSecret: appSecret}
}

// tenantToken returns a cached token, or a new one when it is about to
// expire or fresh is set.
func (c *client) tenantToken(ctx context.Context, fresh bool) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !fresh && c.token != "" && time.Now().Before(c.expires) {
		return c.token, nil
	}
	resp, err := c.sdk.GetTenantAccessTokenBySelfBuiltApp(ctx, &larkcore.SelfBuiltTenantAccessTokenReq{AppID: c.appID, AppSecret: c.appSecret})
	if err != nil {
		return "", fmt.Errorf("tenant token: %w", err)
	}
	if !resp.Success() || resp.TenantAccessToken == "" {
		return "", fmt.Errorf("tenant token: %w", &apiError{Code: resp.Code, Msg: resp.Msg})
	}
	c.token = resp.TenantAccessToken
	// Renew three minutes early, as the SDK does, and never hold a token
	// past half of a very short lifetime.
	life := time.Duration(resp.Expire) * time.Second
	c.expires = time.Now().Add(max(life-3*time.Minute, life/2))
	return c.token, nil
}

// envelope is the platform's answer: a code, a message and the data.
type envelope struct {
	Code int             `json:"code"`
	Msg  string          `json:"msg"`
	Data json.RawMessage `json:"data"`
}

// call performs one API request and returns its data. A business error
// comes back as *larkmsg.APIError, with the wait the platform asked for
// when it throttled the call.
func (c *client) call(ctx context.Context, method, path string, query url.Values, body any) (json.RawMessage, error) {
	for attempt := 0; ; attempt++ {
		tok, err := c.tenantToken(ctx, attempt > 0)
		if err != nil {
			return nil, err
		}
		req := &larkcore.ApiReq{
			HttpMethod: method, ApiPath: path, Body: body, QueryParams: larkcore.QueryParams{}, PathParams: larkcore.PathParams{},
			SupportedAccessTokenTypes: []larkcore.AccessTokenType{larkcore.AccessTokenTypeTenant},
		}
		for k, vs := range query {
			req.QueryParams[k] = vs
		}
		resp, err := c.sdk.Do(ctx, req, larkcore.WithTenantAccessToken(tok))
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
		var env envelope
		if err := json.Unmarshal(resp.RawBody, &env); err != nil {
			if resp.StatusCode >= 300 {
				return nil, fmt.Errorf("%s %s: HTTP %d", method, path, resp.StatusCode)
			}
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
		if env.Code == 0 && resp.StatusCode < 300 {
			return env.Data, nil
		}
		if env.Code == 0 {
			return nil, fmt.Errorf("%s %s: HTTP %d", method, path, resp.StatusCode)
		}
		if attempt == 0 && (env.Code == codeTenantToken || env.Code == codeAppToken || env.Code == codeAccessToken) {
			continue
		}
		ae := &apiError{Code: env.Code, Msg: env.Msg}
		if s := resp.Header.Get("x-ogw-ratelimit-reset"); s != "" {
			if n, err := strconv.Atoi(s); err == nil && n > 0 {
				ae.RetryAfter = time.Duration(n) * time.Second
			}
		}
		return nil, fmt.Errorf("%s %s: %w", method, path, ae)
	}
}

// apiError is a business error of the platform: its code and message,
// and how long it asked to wait when it throttled the call. It unwraps to
// the *larkmsg.APIError that expansion logs.
type apiError struct {
	Code       int
	Msg        string
	RetryAfter time.Duration
}

func (e *apiError) Error() string { return fmt.Sprintf("feishu code %d: %s", e.Code, e.Msg) }

func (e *apiError) Unwrap() error { return &larkmsg.APIError{Code: e.Code, Msg: e.Msg} }

// codeOf returns the platform code carried by err, 0 for none.
func codeOf(err error) int {
	if ae, ok := errors.AsType[*apiError](err); ok {
		return ae.Code
	}
	return 0
}

// raw performs a request whose answer is not the usual envelope (a
// resource download) and returns its body.
func (c *client) raw(ctx context.Context, path string, query url.Values) ([]byte, http.Header, error) {
	for attempt := 0; ; attempt++ {
		tok, err := c.tenantToken(ctx, attempt > 0)
		if err != nil {
			return nil, nil, err
		}
		req := &larkcore.ApiReq{
			HttpMethod: http.MethodGet, ApiPath: path, QueryParams: larkcore.QueryParams{}, PathParams: larkcore.PathParams{},
			SupportedAccessTokenTypes: []larkcore.AccessTokenType{larkcore.AccessTokenTypeTenant},
		}
		for k, vs := range query {
			req.QueryParams[k] = vs
		}
		resp, err := c.sdk.Do(ctx, req, larkcore.WithTenantAccessToken(tok))
		if err != nil {
			return nil, nil, fmt.Errorf("GET %s: %w", path, err)
		}
		if resp.StatusCode < 300 && !isJSON(resp.Header) {
			return resp.RawBody, resp.Header, nil
		}
		var env envelope
		if err := json.Unmarshal(resp.RawBody, &env); err != nil || env.Code == 0 {
			if resp.StatusCode < 300 {
				return resp.RawBody, resp.Header, nil
			}
			return nil, nil, fmt.Errorf("GET %s: HTTP %d", path, resp.StatusCode)
		}
		if attempt == 0 && (env.Code == codeTenantToken || env.Code == codeAccessToken) {
			continue
		}
		return nil, nil, fmt.Errorf("GET %s: %w", path, &apiError{Code: env.Code, Msg: env.Msg})
	}
}

func isJSON(h http.Header) bool {
	ct := h.Get("Content-Type")
	return len(ct) >= 16 && ct[:16] == "application/json"
}

// botInfo is GET /open-apis/bot/v3/info: the bot's open_id and name. Its
// answer carries "bot" beside code and msg instead of "data".
func (c *client) botInfo(ctx context.Context) (openID, name string, err error) {
	tok, err := c.tenantToken(ctx, false)
	if err != nil {
		return "", "", err
	}
	resp, err := c.sdk.Get(ctx, "/open-apis/bot/v3/info", nil, larkcore.AccessTokenTypeTenant, larkcore.WithTenantAccessToken(tok))
	if err != nil {
		return "", "", fmt.Errorf("bot info: %w", err)
	}
	var out struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
		Bot  struct {
			OpenID  string `json:"open_id"`
			AppName string `json:"app_name"`
		} `json:"bot"`
	}
	if err := json.Unmarshal(resp.RawBody, &out); err != nil {
		return "", "", fmt.Errorf("bot info: %w", err)
	}
	if out.Code != 0 {
		return "", "", fmt.Errorf("bot info: %w", &apiError{Code: out.Code, Msg: out.Msg})
	}
	if out.Bot.OpenID == "" {
		return "", "", errors.New("bot info: no open_id (is the app's bot ability enabled?)")
	}
	return out.Bot.OpenID, out.Bot.AppName, nil
}

// getMessage is GET /open-apis/im/v1/messages/:id with the cards as their
// senders wrote them; for a merged forward the items are the container and
// its descendants.
func (c *client) getMessage(ctx context.Context, id string) ([]larkmsg.Item, error) {
	data, err := c.call(ctx, http.MethodGet, "/open-apis/im/v1/messages/"+url.PathEscape(id),
		url.Values{"card_msg_content_type": {"user_card_content"}, "user_id_type": {"open_id"}}, nil)
	if err != nil {
		return nil, err
	}
	var page struct {
		Items []larkmsg.Item `json:"items"`
	}
	if err := json.Unmarshal(data, &page); err != nil {
		return nil, fmt.Errorf("message %s: %w", id, err)
	}
	return page.Items, nil
}

// listMessages reads one page of a chat's messages created in [start,
// end], newest first.
func (c *client) listMessages(ctx context.Context, chatID string, start, end time.Time, pageToken string, size int) (items []larkmsg.Item, next string, err error) {
	q := url.Values{
		"container_id_type": {"chat"}, "container_id": {chatID}, "sort_type": {"ByCreateTimeDesc"},
		"page_size": {strconv.Itoa(size)}, "card_msg_content_type": {"user_card_content"},
	}
	if !start.IsZero() {
		q.Set("start_time", strconv.FormatInt(start.Unix(), 10))
	}
	if !end.IsZero() {
		q.Set("end_time", strconv.FormatInt(end.Unix(), 10))
	}
	if pageToken != "" {
		q.Set("page_token", pageToken)
	}
	data, err := c.call(ctx, http.MethodGet, "/open-apis/im/v1/messages", q, nil)
	if err != nil {
		return nil, "", err
	}
	var page struct {
		Items     []larkmsg.Item `json:"items"`
		HasMore   bool           `json:"has_more"`
		PageToken string         `json:"page_token"`
	}
	if err := json.Unmarshal(data, &page); err != nil {
		return nil, "", fmt.Errorf("messages of %s: %w", chatID, err)
	}
	if page.HasMore {
		next = page.PageToken
	}
	return page.Items, next, nil
}

// sentMessage is the part of a sent message pincer keeps.
type sentMessage struct {
	MessageID string `json:"message_id"`
}

// reply posts content as a reply to the message id; uuid makes a retry
// of the same part land once.
func (c *client) reply(ctx context.Context, id, msgType, content, uuid string) (string, error) {
	body := map[string]any{"msg_type": msgType, "content": content}
	if uuid != "" {
		body["uuid"] = uuid
	}
	data, err := c.call(ctx, http.MethodPost, "/open-apis/im/v1/messages/"+url.PathEscape(id)+"/reply", nil, body)
	if err != nil {
		return "", err
	}
	var m sentMessage
	_ = json.Unmarshal(data, &m)
	return m.MessageID, nil
}

// create posts content to a chat (idType chat_id) or a user (open_id).
func (c *client) create(ctx context.Context, idType, id, msgType, content, uuid string) (string, error) {
	body := map[string]any{"receive_id": id, "msg_type": msgType, "content": content}
	if uuid != "" {
		body["uuid"] = uuid
	}
	data, err := c.call(ctx, http.MethodPost, "/open-apis/im/v1/messages", url.Values{"receive_id_type": {idType}}, body)
	if err != nil {
		return "", err
	}
	var m sentMessage
	_ = json.Unmarshal(data, &m)
	return m.MessageID, nil
}

// addReaction puts an emoji on a message and returns the reaction's id.
func (c *client) addReaction(ctx context.Context, id, emoji string) (string, error) {
	data, err := c.call(ctx, http.MethodPost, "/open-apis/im/v1/messages/"+url.PathEscape(id)+"/reactions", nil,
		map[string]any{"reaction_type": map[string]string{"emoji_type": emoji}})
	if err != nil {
		return "", err
	}
	var r struct {
		ReactionID string `json:"reaction_id"`
	}
	_ = json.Unmarshal(data, &r)
	return r.ReactionID, nil
}

// deleteReaction takes a reaction off a message.
func (c *client) deleteReaction(ctx context.Context, id, reactionID string) error {
	_, err := c.call(ctx, http.MethodDelete, "/open-apis/im/v1/messages/"+url.PathEscape(id)+"/reactions/"+url.PathEscape(reactionID), nil, nil)
	return err
}

// maxNameBatch is basic_batch's limit of ids per call.
const maxNameBatch = 10

// userNames resolves open_ids to names through basic_batch, at most ten a
// call; ids it does not know are left out.
func (c *client) userNames(ctx context.Context, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	for len(ids) > 0 {
		n := min(len(ids), maxNameBatch)
		data, err := c.call(ctx, http.MethodPost, "/open-apis/contact/v3/users/basic_batch", url.Values{"user_id_type": {"open_id"}},
			map[string]any{"user_ids": ids[:n]})
		if err != nil {
			return out, err
		}
		var r struct {
			Users []struct {
				UserID string `json:"user_id"`
				Name   string `json:"name"`
			} `json:"users"`
		}
		if err := json.Unmarshal(data, &r); err != nil {
			return out, fmt.Errorf("user names: %w", err)
		}
		for _, u := range r.Users {
			if u.Name != "" {
				out[u.UserID] = u.Name
			}
		}
		ids = ids[n:]
	}
	return out, nil
}

// resource downloads a message's image or file.
func (c *client) resource(ctx context.Context, id, key, kind string) ([]byte, http.Header, error) {
	return c.raw(ctx, "/open-apis/im/v1/messages/"+url.PathEscape(id)+"/resources/"+url.PathEscape(key), url.Values{"type": {kind}})
}

// quietLogger drops the SDK's log lines: pincer logs what matters with
// its own context.
type quietLogger struct{}

func (quietLogger) Debug(context.Context, ...any) {}
func (quietLogger) Info(context.Context, ...any)  {}
func (quietLogger) Warn(context.Context, ...any)  {}
func (quietLogger) Error(context.Context, ...any) {}
