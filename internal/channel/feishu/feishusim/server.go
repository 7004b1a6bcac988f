package feishusim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// maxBody bounds a request body: a file upload at the platform's limit
// (30 MB) and its multipart framing; messages are far below it (30 KB
// cards, 150 KB text).
const maxBody = MaxFileUpload + 1<<20

// maxCallUpload bounds the body of an upload kept in the request log.
const maxCallUpload = 64 << 10

// API paths the simulator serves.
const (
	PathTenantToken = "/open-apis/auth/v3/tenant_access_token/internal"
	PathBotInfo     = "/open-apis/bot/v3/info"
	PathMessages    = "/open-apis/im/v1/messages"
	PathBasicBatch  = "/open-apis/contact/v3/users/basic_batch"
	PathImages      = "/open-apis/im/v1/images"
	PathFiles       = "/open-apis/im/v1/files"
)

// answer is one HTTP answer: a JSON value or raw bytes.
type answer struct {
	status int
	header http.Header
	code   int
	body   any    // marshalled as JSON when raw is nil
	raw    []byte // sent as is
}

// envelope is the platform's {code, msg, data} body.
type envelope struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
	Data any    `json:"data,omitempty"`
}

func ok(data any) *answer {
	return &answer{status: http.StatusOK, body: envelope{Code: CodeOK, Msg: "success", Data: data}}
}

func fail(status, code int, msg string) *answer {
	return &answer{status: status, code: code, body: envelope{Code: code, Msg: msg}}
}

func failCode(code int) *answer { return fail(http.StatusBadRequest, code, codeText(code)) }

func invalidField(format string, args ...any) *answer {
	return fail(http.StatusBadRequest, CodeFieldValidation, codeText(CodeFieldValidation)+": "+fmt.Sprintf(format, args...))
}

// request is what an endpoint sees of an HTTP request.
type request struct {
	r      *http.Request
	body   []byte
	params []string // path segments after the matched prefix
	now    time.Time
}

func (q *request) query(name string) string { return q.r.URL.Query().Get(name) }

type endpoint func(s *Sim, q *request) *answer

// route is an endpoint and the method it answers.
type route struct {
	method string
	ep     endpoint
}

// Handler serves the simulated open platform.
func (s *Sim) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

func (s *Sim) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == PathWSConnect {
		s.serveLongConn(w, r)
		return
	}
	if r.Body == nil { // a client-side request handed to the handler directly
		r.Body = http.NoBody
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var a *answer
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			a = fail(http.StatusRequestEntityTooLarge, CodeFieldValidation, "request body too large")
		} else {
			a = fail(http.StatusBadRequest, CodeFieldValidation, "reading request body: "+err.Error())
		}
		s.mu.Lock()
		s.recordLocked(r, body, "", a, s.now())
		s.mu.Unlock()
	} else {
		s.holds.wait(r)
		a = s.handle(r, body)
	}
	writeAnswer(w, a)
}

func writeAnswer(w http.ResponseWriter, a *answer) {
	h := w.Header()
	for k, vs := range a.header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	raw := a.raw
	if raw == nil {
		b, err := json.Marshal(a.body)
		if err != nil {
			// Every body is built from plain structs; this is unreachable
			// but answers like the platform's gateway would.
			a.status, b = http.StatusInternalServerError, []byte(`{"code":1,"msg":"internal error"}`)
		}
		raw = b
		h.Set("Content-Type", "application/json; charset=utf-8")
	}
	h.Set("Content-Length", fmt.Sprint(len(raw)))
	w.WriteHeader(a.status)
	_, _ = w.Write(raw)
}

func (s *Sim) handle(r *http.Request, body []byte) *answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	token := bearer(r)
	a := s.route(r, body, token, now)
	if a.header == nil {
		a.header = http.Header{}
	}
	s.logSeq++
	a.header.Set("X-Tt-Logid", fmt.Sprintf("sim%017d", s.logSeq))
	s.recordLocked(r, body, token, a, now)
	return a
}

func (s *Sim) route(r *http.Request, body []byte, token string, now time.Time) *answer {
	path := r.URL.Path
	ep, params, needsToken, found := match(r.Method, path)
	if found && needsToken {
		if a := s.checkTokenLocked(token, now); a != nil {
			return a
		}
	}
	if f, queued := s.popFaultLocked(r.Method, path); queued {
		return f.answer()
	}
	if !found {
		if ep == nil && params != nil {
			return &answer{status: http.StatusMethodNotAllowed, raw: []byte("405 method not allowed\n"),
				header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}}}
		}
		return &answer{status: http.StatusNotFound, raw: []byte("404 page not found\n"),
			header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}}}
	}
	return ep(s, &request{r: r, body: body, params: params, now: now})
}

// match finds the endpoint for a request. When the path is known but not
// the method, it returns a nil endpoint with non-nil params.
func match(method, path string) (ep endpoint, params []string, needsToken, found bool) {
	var routes []route
	switch {
	case path == PathCards || strings.HasPrefix(path, PathCards+"/"):
		var ok bool
		if routes, params, ok = matchCardKit(path); !ok {
			return nil, nil, false, false
		}
	case path == PathTenantToken:
		routes = []route{{http.MethodPost, (*Sim).tenantToken}}
	case path == PathWSEndpoint:
		routes = []route{{http.MethodPost, (*Sim).wsEndpoint}}
	case path == PathBotInfo:
		routes = []route{{http.MethodGet, (*Sim).botInfo}}
	case path == PathBasicBatch:
		routes = []route{{http.MethodPost, (*Sim).basicBatch}}
	case path == PathImages:
		routes = []route{{http.MethodPost, (*Sim).uploadImage}}
	case path == PathFiles:
		routes = []route{{http.MethodPost, (*Sim).uploadFile}}
	case path == PathMessages:
		routes = []route{{http.MethodGet, (*Sim).listMessages}, {http.MethodPost, (*Sim).createMessage}}
	case strings.HasPrefix(path, PathMessages+"/"):
		params = strings.Split(strings.TrimPrefix(path, PathMessages+"/"), "/")
		if params[0] == "" {
			return nil, nil, false, false
		}
		switch {
		case len(params) == 1:
			routes = []route{{http.MethodGet, (*Sim).getMessage}, {http.MethodDelete, (*Sim).deleteMessage}}
		case len(params) == 2 && params[1] == "reply":
			routes = []route{{http.MethodPost, (*Sim).replyMessage}}
		case len(params) == 2 && params[1] == "reactions":
			routes = []route{{http.MethodPost, (*Sim).addReaction}}
		case len(params) == 3 && params[1] == "reactions" && params[2] != "":
			routes = []route{{http.MethodDelete, (*Sim).deleteReaction}}
		case len(params) == 3 && params[1] == "resources" && params[2] != "":
			routes = []route{{http.MethodGet, (*Sim).getResource}}
		default:
			return nil, nil, false, false
		}
	default:
		return nil, nil, false, false
	}
	for _, rt := range routes {
		if rt.method == method {
			return rt.ep, params, path != PathTenantToken && path != PathWSEndpoint, true
		}
	}
	if params == nil {
		params = []string{}
	}
	return nil, params, false, false
}

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

func (s *Sim) checkTokenLocked(token string, now time.Time) *answer {
	if token == "" {
		return failCode(CodeTokenMissing)
	}
	t, known := s.tokens[token]
	if !known || !t.valid || !now.Before(t.expires) {
		return failCode(CodeTokenInvalid)
	}
	return nil
}

func (s *Sim) recordLocked(r *http.Request, body []byte, token string, a *answer, now time.Time) {
	if s.opts.MaxCalls < 0 {
		return
	}
	if (r.URL.Path == PathImages || r.URL.Path == PathFiles) && len(body) > maxCallUpload {
		body = body[:maxCallUpload] // Uploads keeps the content
	}
	c := Call{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: body,
		Token: token, Status: a.status, Code: a.code, Time: now,
	}
	if len(s.calls) >= s.opts.MaxCalls {
		n := copy(s.calls, s.calls[len(s.calls)-s.opts.MaxCalls+1:])
		s.calls = s.calls[:n]
	}
	s.calls = append(s.calls, c)
}

func decodeBody(q *request, v any) *answer {
	if len(q.body) == 0 {
		return invalidField("empty request body")
	}
	if err := json.Unmarshal(q.body, v); err != nil {
		return invalidField("request body: %v", err)
	}
	return nil
}

// tenantToken serves POST /open-apis/auth/v3/tenant_access_token/internal.
func (s *Sim) tenantToken(q *request) *answer {
	var req struct {
		AppID     string `json:"app_id"`
		AppSecret string `json:"app_secret"`
	}
	if a := decodeBody(q, &req); a != nil {
		return a
	}
	if req.AppID != s.opts.AppID {
		return failCode(CodeAppIDInvalid)
	}
	if req.AppSecret != s.opts.AppSecret {
		return failCode(CodeAppSecretInvalid)
	}
	s.tokenSeq++
	tok := fmt.Sprintf("t-sim%08d%s", s.tokenSeq, derivedID("token", s.opts.AppID, 16))
	s.tokens[tok] = &tokenState{expires: q.now.Add(s.opts.TokenTTL), valid: true}
	return &answer{status: http.StatusOK, body: struct {
		Code   int    `json:"code"`
		Msg    string `json:"msg"`
		Token  string `json:"tenant_access_token"`
		Expire int    `json:"expire"`
	}{CodeOK, "ok", tok, int(s.opts.TokenTTL / time.Second)}}
}

// botInfo serves GET /open-apis/bot/v3/info, whose bot sits beside code
// rather than under data.
func (s *Sim) botInfo(q *request) *answer {
	type bot struct {
		ActivateStatus int      `json:"activate_status"`
		AppName        string   `json:"app_name"`
		AvatarURL      string   `json:"avatar_url"`
		IPWhiteList    []string `json:"ip_white_list"`
		OpenID         string   `json:"open_id"`
	}
	return &answer{status: http.StatusOK, body: struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
		Bot  bot    `json:"bot"`
	}{CodeOK, "ok", bot{ActivateStatus: 2, AppName: s.opts.BotName, IPWhiteList: []string{}, OpenID: s.opts.BotOpenID}}}
}

// maxBasicBatch is basic_batch's limit of ids per request.
const maxBasicBatch = 10

// basicBatch serves POST /open-apis/contact/v3/users/basic_batch.
func (s *Sim) basicBatch(q *request) *answer {
	idType, a := userIDType(q)
	if a != nil {
		return a
	}
	var req struct {
		UserIDs []string `json:"user_ids"`
	}
	if a := decodeBody(q, &req); a != nil {
		return a
	}
	s.batchSizes = append(s.batchSizes, len(req.UserIDs))
	if len(req.UserIDs) == 0 || len(req.UserIDs) > maxBasicBatch {
		return invalidField("user_ids: between 1 and %d ids, got %d", maxBasicBatch, len(req.UserIDs))
	}
	type i18n struct {
		ZhCN string `json:"zh_cn,omitempty"`
	}
	type user struct {
		UserID   string `json:"user_id"`
		Name     string `json:"name"`
		I18nName i18n   `json:"i18n_name"`
	}
	users := []user{}
	for _, id := range req.UserIDs {
		open, known := s.openIDFor(id, idType)
		if !known {
			continue
		}
		name := s.users[open]
		users = append(users, user{UserID: id, Name: name, I18nName: i18n{ZhCN: name}})
	}
	return ok(struct {
		Users []user `json:"users"`
	}{users})
}

// openIDFor maps an id of type idType back to a known user's open_id.
func (s *Sim) openIDFor(id, idType string) (string, bool) {
	if idType == "open_id" {
		_, known := s.users[id]
		return id, known
	}
	for open := range s.users {
		if convertID(open, idType) == id {
			return open, true
		}
	}
	return "", false
}

// userIDType reads and checks the user_id_type query parameter.
func userIDType(q *request) (string, *answer) {
	t := q.query("user_id_type")
	switch t {
	case "":
		return "open_id", nil
	case "open_id", "union_id", "user_id":
		return t, nil
	}
	return "", invalidField("user_id_type: unknown %q", t)
}

// convertID reports a user's open_id as idType says.
func convertID(openID, idType string) string {
	switch idType {
	case "union_id":
		return UnionID(openID)
	case "user_id":
		return UserID(openID)
	}
	return openID
}
