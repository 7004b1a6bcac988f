package feishu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/feishu/larkmsg"
)

// Feishu codes pincer acts on (reference §1.5).
const (
	codeInvalidParam     = 230001
	codeBotNotInChat     = 230002
	codeRecalled         = 230011
	codeIMRateLimited    = 230020
	codeTooLong          = 230025
	codeNoPermission     = 230027
	codeInvisible        = 230050
	codeDeleted          = 230110
	codeReplyUnavailable = 231003
	codeCardInvalid      = 230099
	codeCardBuild        = 200861
	codeRateLimited      = 99991400
	codeTenantToken      = 99991663
	codeAppToken         = 99991664
	codeAccessToken      = 99991671
)

// feishuBaseURL is the open platform's root (the SDK's FeishuBaseUrl).
const feishuBaseURL = "https://open.feishu.cn"

// client calls the open platform as the app's bot, through the official
// SDK's core (larkcore.Request), configured as lark.NewClient would
// configure it; the SDK's root package is not used, since it links a
// client for every service of the platform. It keeps the tenant token itself: the SDK's cache retries an
// invalid token with the same stale token, so pincer fetches a fresh one
// on an invalid-token code and retries once.
type client struct {
	sdk       *larkcore.Config
	http      *http.Client
	base      string
	appID     string
	appSecret string

	mu      sync.Mutex
	token   string
	expires time.Time
}

// newClient builds the client for an app on the platform at base.
func newClient(appID, appSecret, base string, hc *http.Client, timeout time.Duration) *client {
	// As lark.NewClient with WithOpenBaseUrl, WithEnableTokenCache(false),
	// WithLogLevel, WithLogger and, when given, WithHttpClient and
	// WithReqTimeout.
	cfg := &larkcore.Config{
		BaseUrl: base, AppId: appID, AppSecret: appSecret, AppType: larkcore.AppTypeSelfBuilt,
		EnableTokenCache: false, LogLevel: larkcore.LogLevelError, Logger: quietLogger{},
		ReqTimeout: max(timeout, 0),
	}
	if hc != nil {
		cfg.HttpClient = hc
	}
	larkcore.NewLogger(cfg)
	larkcore.NewCache(cfg)
	larkcore.NewSerialization(cfg)
	larkcore.NewHttpClient(cfg)
	raw := hc
	if raw == nil {
		raw = &http.Client{Timeout: 2 * timeout}
	}
	return &client{
		sdk: cfg, http: raw, base: strings.TrimRight(base, "/"),
		appID: appID, appSecret: appSecret,
	}
}

// tenantToken returns the cached token, or a new one when it is about to
// expire or is stale (the token a call was just refused with).
func (c *client) tenantToken(ctx context.Context, stale string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token != "" && c.token != stale && time.Now().Before(c.expires) {
		return c.token, nil
	}
	resp, err := c.selfBuiltTenantToken(ctx)
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

// selfBuiltTenantToken asks for the app's tenant token, as the SDK's
// Client.GetTenantAccessTokenBySelfBuiltApp does.
func (c *client) selfBuiltTenantToken(ctx context.Context) (*larkcore.TenantAccessTokenResp, error) {
	raw, err := larkcore.Request(ctx, &larkcore.ApiReq{
		HttpMethod:                http.MethodPost,
		ApiPath:                   larkcore.TenantAccessTokenInternalUrlPath,
		Body:                      &larkcore.SelfBuiltTenantAccessTokenReq{AppID: c.appID, AppSecret: c.appSecret},
		SupportedAccessTokenTypes: []larkcore.AccessTokenType{larkcore.AccessTokenTypeNone},
	}, c.sdk)
	if err != nil {
		return nil, err
	}
	resp := &larkcore.TenantAccessTokenResp{}
	if err := json.Unmarshal(raw.RawBody, resp); err != nil {
		return nil, err
	}
	resp.ApiResp = raw
	return resp, nil
}

// invalidToken reports the codes of a refused access token.
func invalidToken(code int) bool {
	return code == codeTenantToken || code == codeAppToken || code == codeAccessToken
}

// envelope is the platform's answer: a code, a message and the data.
type envelope struct {
	Code int             `json:"code"`
	Msg  string          `json:"msg"`
	Data json.RawMessage `json:"data"`
}

// maxReadWait is the longest wait a throttled read is retried after; a
// longer one is returned as an error. Sends are retried by the outbox.
const maxReadWait = 5 * time.Second

// exchange performs one API request with the tenant token, fetching a
// fresh token and trying once more when the platform refuses the cached
// one; a throttled read (GET) is tried once more after the wait the
// platform asks for. A business error comes back as *apiError, with that
// wait; the answer is returned with it.
func (c *client) exchange(ctx context.Context, method, path string, query url.Values, body any) (*larkcore.ApiResp, envelope, error) {
	stale := ""
	refreshed, waited := false, false
	for {
		tok, err := c.tenantToken(ctx, stale)
		if err != nil {
			return nil, envelope{}, err
		}
		req := &larkcore.ApiReq{
			HttpMethod: method, ApiPath: path, Body: body, QueryParams: larkcore.QueryParams{}, PathParams: larkcore.PathParams{},
			SupportedAccessTokenTypes: []larkcore.AccessTokenType{larkcore.AccessTokenTypeTenant},
		}
		for k, vs := range query {
			req.QueryParams[k] = vs
		}
		resp, err := larkcore.Request(ctx, req, c.sdk, larkcore.WithTenantAccessToken(tok))
		if err != nil {
			return nil, envelope{}, fmt.Errorf("%s %s: %w", method, path, err)
		}
		var env envelope
		if err := json.Unmarshal(resp.RawBody, &env); err != nil {
			if resp.StatusCode >= 300 {
				return resp, env, fmt.Errorf("%s %s: HTTP %d", method, path, resp.StatusCode)
			}
			return resp, env, fmt.Errorf("%s %s: %w", method, path, err)
		}
		if env.Code == 0 && resp.StatusCode < 300 {
			return resp, env, nil
		}
		if env.Code == 0 {
			return resp, env, fmt.Errorf("%s %s: HTTP %d", method, path, resp.StatusCode)
		}
		if !refreshed && invalidToken(env.Code) {
			stale, refreshed = tok, true
			continue
		}
		ae := newAPIError(resp.StatusCode, resp.Header, env)
		if method == http.MethodGet && !waited && ae.throttled() && ae.RetryAfter <= maxReadWait {
			waited = true
			t := time.NewTimer(max(ae.RetryAfter, time.Second))
			select {
			case <-ctx.Done():
				t.Stop()
				return resp, env, fmt.Errorf("%s %s: %w", method, path, ae)
			case <-t.C:
			}
			continue
		}
		return resp, env, fmt.Errorf("%s %s: %w", method, path, ae)
	}
}

// call performs one API request and returns its data; see exchange.
func (c *client) call(ctx context.Context, method, path string, query url.Values, body any) (json.RawMessage, error) {
	_, env, err := c.exchange(ctx, method, path, query, body)
	if err != nil {
		return nil, err
	}
	return env.Data, nil
}

// apiError is a business error of the platform: its code and message,
// the HTTP status it came with, and how long it asked to wait when it
// throttled the call. It unwraps to the *larkmsg.APIError that expansion
// logs.
type apiError struct {
	Code       int
	Msg        string
	Status     int
	RetryAfter time.Duration
}

func newAPIError(status int, h http.Header, env envelope) *apiError {
	ae := &apiError{Code: env.Code, Msg: env.Msg, Status: status}
	if s := h.Get("x-ogw-ratelimit-reset"); s != "" {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n > 0 {
			ae.RetryAfter = time.Duration(n) * time.Second
		}
	}
	return ae
}

// throttled reports the platform's throttling codes.
func (e *apiError) throttled() bool {
	return e.Code == codeRateLimited || e.Code == codeIMRateLimited || e.Status == http.StatusTooManyRequests
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

// download GETs a resource (a body that is not the usual envelope) and
// returns at most limit bytes of it: a larger one is channel.ErrTooLarge,
// read no further than limit+1 bytes. It goes around the SDK, which would read the whole body first.
func (c *client) download(ctx context.Context, path string, query url.Values, limit int64) ([]byte, http.Header, error) {
	stale := ""
	for refreshed := false; ; refreshed = true {
		tok, err := c.tenantToken(ctx, stale)
		if err != nil {
			return nil, nil, err
		}
		u := c.base + path
		if len(query) > 0 {
			u += "?" + query.Encode()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("GET %s: %w", path, err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, nil, fmt.Errorf("GET %s: %w", path, err)
		}
		body, tooLarge, err := readLimited(resp.Body, limit)
		resp.Body.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("GET %s: %w", path, err)
		}
		if resp.StatusCode < 300 && !isJSON(resp.Header) {
			if tooLarge {
				return nil, nil, fmt.Errorf("GET %s: %w (%d bytes)", path, channel.ErrTooLarge, limit)
			}
			return body, resp.Header, nil
		}
		var env envelope
		if tooLarge || json.Unmarshal(body, &env) != nil || env.Code == 0 {
			if resp.StatusCode < 300 && !tooLarge {
				return body, resp.Header, nil
			}
			return nil, nil, fmt.Errorf("GET %s: HTTP %d", path, resp.StatusCode)
		}
		if !refreshed && invalidToken(env.Code) {
			stale = tok
			continue
		}
		return nil, nil, fmt.Errorf("GET %s: %w", path, newAPIError(resp.StatusCode, resp.Header, env))
	}
}

// readLimited reads at most limit bytes of r, and says whether there was
// more. A negative limit counts as none.
func readLimited(r io.Reader, limit int64) ([]byte, bool, error) {
	limit = max(limit, 0)
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(b)) > limit {
		return b[:limit], true, nil
	}
	return b, false, nil
}

func isJSON(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(h.Get("Content-Type")), "application/json")
}

// botInfo is GET /open-apis/bot/v3/info: the bot's open_id and name. Its
// answer carries "bot" beside code and msg instead of "data".
func (c *client) botInfo(ctx context.Context) (openID, name string, err error) {
	resp, _, err := c.exchange(ctx, http.MethodGet, "/open-apis/bot/v3/info", nil, nil)
	if err != nil {
		return "", "", fmt.Errorf("bot info: %w", err)
	}
	var out struct {
		Bot struct {
			OpenID  string `json:"open_id"`
			AppName string `json:"app_name"`
		} `json:"bot"`
	}
	if err := json.Unmarshal(resp.RawBody, &out); err != nil {
		return "", "", fmt.Errorf("bot info: %w", err)
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
	// ThreadID is the topic the message landed in, when it is in one.
	ThreadID string `json:"thread_id"`
	// CreateTime is when the platform created it, in milliseconds (an
	// earlier send's, when the uuid was used already).
	CreateTime string `json:"create_time"`
}

// reply posts content as a reply to the message id; uuid makes a retry
// of the same part land once.
func (c *client) reply(ctx context.Context, id, msgType, content, uuid string) (sentMessage, error) {
	body := map[string]any{"msg_type": msgType, "content": content}
	if uuid != "" {
		body["uuid"] = uuid
	}
	data, err := c.call(ctx, http.MethodPost, "/open-apis/im/v1/messages/"+url.PathEscape(id)+"/reply", nil, body)
	if err != nil {
		return sentMessage{}, err
	}
	var m sentMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return sentMessage{}, fmt.Errorf("sent message: %w", err)
	}
	return m, nil
}

// create posts content to a chat (idType chat_id) or a user (open_id).
func (c *client) create(ctx context.Context, idType, id, msgType, content, uuid string) (sentMessage, error) {
	body := map[string]any{"receive_id": id, "msg_type": msgType, "content": content}
	if uuid != "" {
		body["uuid"] = uuid
	}
	data, err := c.call(ctx, http.MethodPost, "/open-apis/im/v1/messages", url.Values{"receive_id_type": {idType}}, body)
	if err != nil {
		return sentMessage{}, err
	}
	var m sentMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return sentMessage{}, fmt.Errorf("sent message: %w", err)
	}
	return m, nil
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

// resource downloads a message's image or file, at most limit bytes.
func (c *client) resource(ctx context.Context, id, key, kind string, limit int64) ([]byte, http.Header, error) {
	return c.download(ctx, "/open-apis/im/v1/messages/"+url.PathEscape(id)+"/resources/"+url.PathEscape(key), url.Values{"type": {kind}}, limit)
}

// uploadImage uploads an image for sending in a message
// (image_type=message) and returns its image_key.
func (c *client) uploadImage(ctx context.Context, name string, data []byte) (string, error) {
	fd := larkcore.NewFormdata().AddField("image_type", "message").AddFileWithName("image", name, bytes.NewReader(data))
	raw, err := c.call(ctx, http.MethodPost, "/open-apis/im/v1/images", nil, fd)
	if err != nil {
		return "", err
	}
	var r struct {
		ImageKey string `json:"image_key"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.ImageKey == "" {
		return "", fmt.Errorf("upload image %s: no image_key in the answer", name)
	}
	return r.ImageKey, nil
}

// uploadFile uploads a file of the platform's fileType (opus, mp4, pdf,
// doc, xls, ppt or stream) and returns its file_key; duration, in
// milliseconds, is sent when known (above 0).
func (c *client) uploadFile(ctx context.Context, fileType, name string, duration int, data []byte) (string, error) {
	fd := larkcore.NewFormdata().AddField("file_type", fileType).AddField("file_name", name).
		AddFileWithName("file", name, bytes.NewReader(data))
	if duration > 0 {
		fd.AddField("duration", strconv.Itoa(duration))
	}
	raw, err := c.call(ctx, http.MethodPost, "/open-apis/im/v1/files", nil, fd)
	if err != nil {
		return "", err
	}
	var r struct {
		FileKey string `json:"file_key"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.FileKey == "" {
		return "", fmt.Errorf("upload file %s: no file_key in the answer", name)
	}
	return r.FileKey, nil
}

// quietLogger drops the SDK's log lines: pincer logs what matters with
// its own context.
type quietLogger struct{}

func (quietLogger) Debug(context.Context, ...any) {}
func (quietLogger) Info(context.Context, ...any)  {}
func (quietLogger) Warn(context.Context, ...any)  {}
func (quietLogger) Error(context.Context, ...any) {}
