package gateway

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/config"
)

// readyLine captures what Run prints when it is ready.
type readyLine chan string

func (r readyLine) Write(p []byte) (int, error) {
	r <- string(p)
	return len(p), nil
}

// TestReadyNamesThePageThatIsThere: with the web chat on, the ready line
// points at it; with it off, at the dashboard, which is still served.
func TestReadyNamesThePageThatIsThere(t *testing.T) {
	for _, webchat := range []bool{true, false} {
		cfg := config.Default()
		cfg.Channels.Webchat.Enabled = webchat
		cfg.Store.Path = filepath.Join(t.TempDir(), "p.db")
		cfg.Agents.Defaults.Workspace = t.TempDir()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		lines := make(readyLine, 1)
		done := make(chan error, 1)
		go func() { done <- Run(ctx, cfg, Options{Listener: ln, Ready: lines}) }()
		var line string
		select {
		case line = <-lines:
		case err := <-done:
			t.Fatalf("stopped before ready: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("not ready")
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		base := "http://" + ln.Addr().String()
		want := base + "/"
		if !webchat {
			want = base + "/dashboard"
		}
		if !strings.Contains(line, "open "+want+"\n") {
			t.Errorf("webchat %v: ready line %q, want it to name %s", webchat, line, want)
		}
	}
}
