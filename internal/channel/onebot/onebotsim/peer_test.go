package onebotsim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func TestServeAnswersOverHTTPAndWebSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := Serve(ln, func(action string, params json.RawMessage) (any, int, string) {
		if action == "get_login_info" {
			return map[string]any{"user_id": 3300000001}, 0, ""
		}
		return nil, 1404, "no " + action
	})
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.HTTPURL+"/get_login_info", bytes.NewReader([]byte(`{}`)))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !bytes.Contains(body, []byte(`"user_id":3300000001`)) || !bytes.Contains(body, []byte(`"status":"ok"`)) {
		t.Errorf("HTTP API: %s", body)
	}

	c, _, err := websocket.Dial(ctx, p.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"action":"nope","params":{},"echo":"e1"}`)); err != nil {
		t.Fatal(err)
	}
	_, frame, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Status  string `json:"status"`
		Retcode int    `json:"retcode"`
		Echo    string `json:"echo"`
	}
	if err := json.Unmarshal(frame, &resp); err != nil || resp.Status != "failed" || resp.Retcode != 1404 || resp.Echo != "e1" {
		t.Errorf("WebSocket answer %s (%v)", frame, err)
	}
	if err := p.Push(ctx, map[string]any{"post_type": "meta_event"}); err != nil {
		t.Fatal(err)
	}
	if _, frame, err = c.Read(ctx); err != nil || !bytes.Contains(frame, []byte(`"meta_event"`)) {
		t.Errorf("pushed event %s (%v)", frame, err)
	}
	if calls := p.Calls(); len(calls) != 2 || calls[0].Action != "get_login_info" || calls[1].Action != "nope" {
		t.Errorf("calls %+v", calls)
	}
}
