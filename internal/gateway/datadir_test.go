package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/webchat"
	"github.com/pincerbot/pincer/internal/channel/webchat/webchattest"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/dirlock"
)

// TestSecondGatewayOnOneDataDirectoryIsRefused: Run on the data directory
// another Run holds returns at once with an error naming the directory
// and its holder, having written nothing (its workspace is never made);
// the first goes on answering, and once it has stopped the directory
// takes a new gateway.
func TestSecondGatewayOnOneDataDirectoryIsRefused(t *testing.T) {
	first := startGateway(t, config.Default())
	cfg := config.Default()
	cfg.Store.Path = filepath.Join(first.dataDir, "pincer.db")
	workspace := filepath.Join(t.TempDir(), "workspace")
	cfg.Agents.Defaults.Workspace = workspace
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ready := make(chan struct{})
	result := make(chan error, 1)
	go func() { result <- Run(ctx, cfg, Options{Listener: ln, Ready: readyWriter(ready)}) }()
	select {
	case err = <-result:
	case <-ready:
		cancel()
		t.Fatalf("a second gateway started on %s (it stopped with %v)", first.dataDir, <-result)
	}
	if !errors.Is(err, dirlock.ErrHeld) {
		t.Fatalf("Run on a held data directory: %v", err)
	}
	for _, want := range []string{"store.path " + cfg.Store.Path, "data directory " + first.dataDir + " is in use by another pincer", fmt.Sprintf("(pid %d ", os.Getpid())} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q lacks %q", err, want)
		}
	}
	if _, err := os.Stat(workspace); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused gateway made its workspace: %v", err)
	}

	res, _, err := webchattest.New(first.url).Post("还在吗", "")
	if err != nil {
		t.Fatal(err)
	}
	events, err := webchattest.Events(res)
	if err != nil {
		t.Fatal(err)
	}
	if got := webchattest.Text(events, webchat.EventReply); !strings.Contains(got, "还在吗") {
		t.Errorf("the first gateway's answer %q", got)
	}

	first.stop()
	if err := <-first.result; err != nil {
		t.Fatal(err)
	}
	first.result <- nil // for startGateway's cleanup
	runGatewayAt(t, cfg, cfg.Store.Path)
}
