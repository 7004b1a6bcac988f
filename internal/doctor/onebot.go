package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/pincerbot/pincer/internal/config"
)

// accountKey is the key path prefix of account id of a channel section:
// the section itself for the default account.
func accountKey(section, id string) string {
	if id == "default" {
		return section + "."
	}
	return section + ".accounts." + id + "."
}

// oneBotChecks checks every enabled QQ account: its forward WebSocket and
// HTTP API are dialed with the access token and asked get_login_info and
// get_version_info; its reverse WebSocket and HTTP POST endpoints are
// reported with the URL the implementation must use.
func oneBotChecks(cfg config.Config, o Options) []func(context.Context) []Result {
	var checks []func(context.Context) []Result
	all := cfg.Channels.OneBot.All()
	for _, id := range slices.Sorted(maps.Keys(all)) {
		a := all[id]
		if !a.Active() {
			continue
		}
		key := accountKey("channels.onebot", id)
		name := "qq " + id
		if a.WSURL != "" {
			checks = append(checks, one(func(ctx context.Context) Result { return checkForward(ctx, name+" ws", key, a, o) }))
		}
		if a.HTTPURL != "" {
			checks = append(checks, one(func(ctx context.Context) Result { return checkHTTPAPI(ctx, name+" http", key, a, o) }))
		}
		if a.ReverseWS.Enabled {
			u := inboundURL("ws", cfg.Gateway.Listen, a.ReverseWS.Path)
			checks = append(checks, one(func(context.Context) Result {
				return Result{
					Name: name + " reverse ws", Status: OK,
					Detail: "inbound: waiting for the implementation to connect to " + u,
					Hint:   "configure it with a reverse WebSocket (\"WebSocket client\") to " + u + tokenNote(a.AccessToken),
				}
			}))
		}
		if a.HTTPPost.Enabled {
			u := inboundURL("http", cfg.Gateway.Listen, a.HTTPPost.Path)
			checks = append(checks, one(func(context.Context) Result {
				return Result{
					Name: name + " http post", Status: OK,
					Detail: "inbound: waiting for the implementation to post events to " + u,
					Hint:   "configure it with an HTTP client / event POST to " + u + secretNote(a),
				}
			}))
		}
	}
	return checks
}

func one(fn func(context.Context) Result) func(context.Context) []Result {
	return func(ctx context.Context) []Result { return []Result{fn(ctx)} }
}

func tokenNote(token config.Secret) string {
	if token == "" {
		return ""
	}
	return ", with the same access token"
}

func secretNote(a config.OneBotAccount) string {
	if a.PostSecret() == "" {
		return ""
	}
	return ", signing with the same secret (or access token)"
}

// inboundURL is the URL an implementation reaches pincer's gateway at:
// listen's host, or this machine's address when listen is a wildcard.
func inboundURL(scheme, listen, path string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return scheme + "://" + listen + path
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "<this machine's address>"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + path
}

// loginInfo is get_login_info's data.
type loginInfo struct {
	UserID   json.RawMessage `json:"user_id"`
	Nickname string          `json:"nickname"`
}

// versionInfo is get_version_info's data.
type versionInfo struct {
	AppName         string `json:"app_name"`
	AppVersion      string `json:"app_version"`
	ProtocolVersion string `json:"protocol_version"`
}

// actionResponse is a OneBot action's answer.
type actionResponse struct {
	Status  string          `json:"status"`
	Retcode int             `json:"retcode"`
	Data    json.RawMessage `json:"data"`
	Message string          `json:"message"`
	Wording string          `json:"wording"`
	Echo    json.RawMessage `json:"echo"`
}

func (r actionResponse) err(action string) error {
	if r.Status == "ok" || r.Status == "async" || r.Retcode == 0 && r.Status == "" {
		return nil
	}
	msg := r.Wording
	if msg == "" {
		msg = r.Message
	}
	return fmt.Errorf("%s failed: retcode %d %s", action, r.Retcode, msg)
}

// caller runs one action.
type caller func(ctx context.Context, action string) (json.RawMessage, error)

func checkForward(ctx context.Context, name, key string, a config.OneBotAccount, o Options) Result {
	res := Result{Name: name}
	opts := &websocket.DialOptions{HTTPClient: o.Client}
	if a.AccessToken != "" {
		opts.HTTPHeader = http.Header{"Authorization": {"Bearer " + a.AccessToken.Value()}}
	}
	ws, resp, err := websocket.Dial(ctx, a.WSURL, opts)
	if err != nil {
		if resp != nil {
			return refused(res, key, "wsUrl", a.WSURL, resp.StatusCode)
		}
		return unreachable(res, key+"wsUrl", a.WSURL, err, o.Timeout, forwardHint)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(32 << 20)
	seq := 0
	call := func(ctx context.Context, action string) (json.RawMessage, error) {
		seq++
		echo := "pincer-doctor-" + strconv.Itoa(seq)
		frame, _ := json.Marshal(map[string]any{"action": action, "params": struct{}{}, "echo": echo})
		if err := ws.Write(ctx, websocket.MessageText, frame); err != nil {
			return nil, fmt.Errorf("%s: %w", action, err)
		}
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				return nil, fmt.Errorf("%s: no answer: %w", action, err)
			}
			var r actionResponse
			if json.Unmarshal(data, &r) != nil || strings.Trim(string(r.Echo), `"`) != echo {
				continue // an event, or another answer
			}
			if err := r.err(action); err != nil {
				return nil, err
			}
			return r.Data, nil
		}
	}
	return identify(ctx, res, key, a, a.WSURL+": connected", call)
}

func checkHTTPAPI(ctx context.Context, name, key string, a config.OneBotAccount, o Options) Result {
	res := Result{Name: name}
	var status int
	call := func(ctx context.Context, action string) (json.RawMessage, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(a.HTTPURL, "/")+"/"+action, bytes.NewReader([]byte("{}")))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", action, err)
		}
		req.Header.Set("Content-Type", "application/json")
		if a.AccessToken != "" {
			req.Header.Set("Authorization", "Bearer "+a.AccessToken.Value())
		}
		resp, err := o.Client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return nil, fmt.Errorf("%s: read: %w", action, err)
		}
		if resp.StatusCode != http.StatusOK {
			status = resp.StatusCode
			return nil, fmt.Errorf("%s: HTTP %d", action, resp.StatusCode)
		}
		var r actionResponse
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, fmt.Errorf("%s: the answer is not OneBot JSON: %w", action, err)
		}
		if err := r.err(action); err != nil {
			return nil, err
		}
		return r.Data, nil
	}
	// The first call tells whether the API is there and takes the token.
	data, err := call(ctx, "get_login_info")
	if err != nil {
		if status != 0 {
			return refused(res, key, "httpUrl", a.HTTPURL, status)
		}
		if d, h, ok := netProblem(err, a.HTTPURL, o.Timeout); ok {
			res.Status, res.Detail, res.Hint = Fail, d, firstOf(h, "is its HTTP server on?")+" ("+key+"httpUrl)"
			return res
		}
	}
	first := true
	cached := func(ctx context.Context, action string) (json.RawMessage, error) {
		if action == "get_login_info" && first {
			first = false
			return data, err
		}
		return call(ctx, action)
	}
	return identify(ctx, res, key, a, a.HTTPURL+": answers", cached)
}

// refused reports an HTTP status that is not the endpoint's answer: a
// token asked for or refused, or something else at that address.
func refused(res Result, key, field, url string, status int) Result {
	res.Status = Fail
	switch status {
	case http.StatusUnauthorized:
		res.Detail = fmt.Sprintf("%s: the implementation wants an access token (HTTP 401)", url)
		res.Hint = "set " + key + "accessToken to the token in its network settings"
	case http.StatusForbidden:
		res.Detail = fmt.Sprintf("%s: the access token is wrong (HTTP 403)", url)
		res.Hint = key + "accessToken must equal the token in the implementation's network settings"
	default:
		res.Detail = fmt.Sprintf("%s answered HTTP %d", url, status)
		res.Hint = "is " + key + field + " the implementation's endpoint (not its WebUI, or the other server)?"
	}
	return res
}

// forwardHint is what to check when a QQ implementation's forward
// WebSocket cannot be reached.
const forwardHint = "is its forward WebSocket server (\"WebSocket server\" in NapCat) on?"

// ForwardUnreachable explains a failed connection to the forward WebSocket
// url of the QQ account whose settings are at key ("channels.onebot." or
// "channels.onebot.accounts.<id>.") as doctor's check of it does: what
// went wrong ("nothing listens at 127.0.0.1:3001") and what to do, naming
// the setting. ok is false when err is not a failure to connect.
func ForwardUnreachable(err error, key, url string) (detail, hint string, ok bool) {
	if _, _, ok := netProblem(err, url, 0); !ok {
		return "", "", false
	}
	r := unreachable(Result{}, key+"wsUrl", url, err, 0, forwardHint)
	return r.Detail, r.Hint, true
}

func unreachable(res Result, key, url string, err error, timeout time.Duration, hint string) Result {
	res.Status = Fail
	if d, h, ok := netProblem(err, url, timeout); ok {
		res.Detail, res.Hint = d, firstOf(h, hint)+" ("+key+")"
		if strings.HasPrefix(d, "nothing listens") {
			res.Hint = hint + " (" + key + ")"
		}
		return res
	}
	res.Detail, res.Hint = url+": "+err.Error(), hint+" ("+key+")"
	return res
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// identify asks who is logged in and which implementation answers, and
// compares the QQ number with selfId.
func identify(ctx context.Context, res Result, key string, a config.OneBotAccount, detail string, call caller) Result {
	res.Status, res.Detail = OK, detail
	data, err := call(ctx, "get_login_info")
	if err != nil {
		res.Status = Warn
		res.Detail += "; get_login_info: " + err.Error()
		res.Hint = "is the QQ client logged in?"
		return res
	}
	var li loginInfo
	_ = json.Unmarshal(data, &li)
	self, _ := strconv.ParseInt(strings.Trim(string(li.UserID), `"`), 10, 64)
	switch want := a.SelfQQ(); {
	case self == 0:
		res.Status = Warn
		res.Detail += "; get_login_info has no QQ number"
		res.Hint = "is the QQ client logged in?"
	case want != 0 && want != self:
		res.Status = Fail
		res.Detail += fmt.Sprintf("; logged in as %d, but selfId is %d", self, want)
		res.Hint = fmt.Sprintf("set %sselfId to %d, or remove it to take the logged-in account", key, self)
	default:
		res.Detail += fmt.Sprintf(", QQ %d", self)
		if li.Nickname != "" {
			res.Detail += " (" + li.Nickname + ")"
		}
	}
	if data, err := call(ctx, "get_version_info"); err == nil {
		var vi versionInfo
		if json.Unmarshal(data, &vi) == nil && vi.AppName != "" {
			res.Detail += ", " + strings.TrimSpace(vi.AppName+" "+vi.AppVersion)
		}
	} else if res.Status == OK {
		res.Detail += "; get_version_info: " + err.Error()
	}
	return res
}
