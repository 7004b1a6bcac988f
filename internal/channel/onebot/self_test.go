package onebot

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
)

func TestDialForwardAndResolveSelf(t *testing.T) {
	var login atomic.Int64
	login.Store(3300000001)
	p := onebottest.New(t, func(action string, _ json.RawMessage) (any, int, string) {
		if action == "get_login_info" {
			return map[string]any{"user_id": login.Load(), "nickname": "bot"}, 0, ""
		}
		return nil, 1404, ""
	})
	p.Token = "s3cret"
	ctx := context.Background()
	if _, err := DialForward(ctx, p.URL, "wrong", nil); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("a wrong token must be reported as refused: %v", err)
	}
	ws, err := DialForward(ctx, p.URL, "s3cret", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := NewConn(ws, 0, nil)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(runCtx, func([]byte, *wire.Event) {}) }()
	defer func() { cancel(); <-done }()

	tests := []struct {
		configured wire.ID
		header     string
		first      *wire.Event
		want       wire.ID
		source     selfSource
	}{
		{111, "222", &wire.Event{SelfID: 333}, 111, selfFromConfig},
		{0, "222", &wire.Event{SelfID: 333}, 222, selfFromHeader},
		{0, "", &wire.Event{SelfID: 333}, 333, selfFromEvent},
		{0, "junk", nil, 3300000001, selfFromLogin},
	}
	for _, tt := range tests {
		id, src, err := lookupSelf(ctx, c, tt.configured, tt.header, tt.first)
		if err != nil || id != tt.want || src != tt.source {
			t.Errorf("got %d from %s (%v), want %d from %s", id, src, err, tt.want, tt.source)
		}
	}
	login.Store(0)
	if _, _, err := lookupSelf(ctx, c, 0, "", nil); err == nil {
		t.Error("an unknown self id must be an error")
	}
}
