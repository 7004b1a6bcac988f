package onebot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
)

// httpCaller runs actions over an implementation's HTTP API: POST
// <BaseURL>/<action> with the params as the JSON body. The HTTP status is
// 200 even when an action fails, so the body's status and retcode decide.
type httpCaller struct {
	BaseURL string
	Token   string
	// Timeout is the default per-call timeout (30 s when zero).
	Timeout time.Duration
	Client  *http.Client
}

var _ caller = (*httpCaller)(nil)

// errTokenRefused: the implementation refused the access token.
var errTokenRefused = errors.New("onebot: access token refused")

// Call implements caller.
func (h *httpCaller) Call(ctx context.Context, action string, params any, timeout time.Duration) (json.RawMessage, error) {
	if timeout <= 0 {
		timeout = h.Timeout
	}
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	if params == nil {
		params = struct{}{}
	}
	body, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("onebot: %s: %w", action, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(h.BaseURL, "/")+"/"+action, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("onebot: %s: %w", action, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if h.Token != "" {
		req.Header.Set("Authorization", "Bearer "+h.Token)
	}
	client := h.Client
	if client == nil {
		client = http.DefaultClient
	}
	res, err := client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s: %w after %s", action, errTimeout, timeout)
		}
		return nil, fmt.Errorf("onebot: %s over HTTP: %w", action, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxFrame))
	if err != nil {
		return nil, fmt.Errorf("onebot: %s over HTTP: %w", action, err)
	}
	switch res.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized, http.StatusForbidden:
		return nil, fmt.Errorf("%s: %w (HTTP %d)", action, errTokenRefused, res.StatusCode)
	case http.StatusNotFound:
		return nil, &wire.ActionError{Action: action, Retcode: wire.RetcodeUnsupported, Status: "failed", Message: "unsupported action"}
	default:
		return nil, fmt.Errorf("onebot: %s over HTTP: status %d: %s", action, res.StatusCode, bytes.TrimSpace(data))
	}
	var resp wire.Response
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, fmt.Errorf("onebot: %s over HTTP: malformed response: %w", action, err)
	}
	return resp.Result(action)
}
