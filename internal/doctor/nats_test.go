package doctor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/pincerbot/pincer/internal/config"
)

func runNATS(t *testing.T, jetStream bool) string {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: jetStream, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(s.Shutdown)
	return s.ClientURL()
}

// TestCheckNATS: the cluster check passes on a server with JetStream,
// fails naming JetStream on one without it, and fails with a hint when
// nothing listens; a password in the URL is never printed.
func TestCheckNATS(t *testing.T) {
	ctx := context.Background()
	cl := func(url string) config.Cluster {
		return config.Cluster{Instance: "a", NATS: config.NATS{URL: config.Secret(url)}, Partitions: 32, LeaseTTLMs: 6000}
	}
	with := runNATS(t, true)
	if r := checkNATS(ctx, cl(with)); r.Status != OK || !strings.Contains(r.Detail, "JetStream") {
		t.Errorf("with JetStream: %+v", r)
	}
	without := runNATS(t, false)
	if r := checkNATS(ctx, cl(without)); r.Status != Fail || !strings.Contains(r.Hint, "-js") {
		t.Errorf("without JetStream: %+v", r)
	}
	r := checkNATS(ctx, cl("nats://user:s3cret@127.0.0.1:1"))
	if r.Status != Fail || r.Hint == "" {
		t.Errorf("nothing listening: %+v", r)
	}
	if strings.Contains(r.Detail+r.Hint, "s3cret") {
		t.Errorf("the password is printed: %+v", r)
	}
}
