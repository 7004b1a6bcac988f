package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
)

// feishuPlatform is a simulated Feishu open platform over HTTP, with
// encryptKey, a group chat and the users named (open id → name); it
// closes when the test ends.
func feishuPlatform(t *testing.T, encryptKey, group string, users map[string]string) (*feishusim.Sim, string) {
	t.Helper()
	sim := feishusim.New(feishusim.Options{EncryptKey: encryptKey})
	platform := httptest.NewServer(sim.Handler())
	t.Cleanup(platform.Close)
	for id, name := range users {
		if err := sim.AddUser(id, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := sim.AddChat(group, feishusim.ChatGroup); err != nil {
		t.Fatal(err)
	}
	return sim, platform.URL
}

// feishuWebhookConfig is the configuration of a pincer on the model at
// modelURL and the simulated platform at platformURL, in webhook mode with
// encryptKey and realtime windows of 50 ms; more goes into
// channels.feishu (such as "streaming: 'card',"), extra at the top level.
func feishuWebhookConfig(modelURL, platformURL, encryptKey, more, extra string) string {
	return freePortConfig(fmt.Sprintf(`%s
		models: { providers: { openai: { baseUrl: '%s/v1', apiKey: 'k' } } },
		agents: { defaults: { model: { primary: 'openai/m' } } },
		channels: { feishu: {
		  appId: '%s', appSecret: '%s', domain: '%s', mode: 'webhook',
		  verificationToken: '%s', encryptKey: '%s', %s
		  receive: { realtime: { windowMs: 50 } },
		} },`, extra, modelURL, feishusim.DefaultAppID, feishusim.DefaultAppSecret, platformURL, feishusim.DefaultVerificationToken, encryptKey, more))
}

// postFeishu delivers m's event to pincer's webhook at base until pincer
// takes it (a 503 while it is not taking events yet is retried, as the
// platform retries it; once the platform knows the message it delivers it
// again by id), and returns the delivery pincer took.
func postFeishu(t *testing.T, ctx context.Context, sim *feishusim.Sim, base string, m feishusim.Message) *feishusim.Delivery {
	t.Helper()
	for ev := any(m); ; ev = m.ID {
		d, err := sim.PostEvent(ctx, base+"/feishu/events", ev, feishusim.EventOptions{})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case d.Status == 200:
			return d
		case d.Status == 503 && ctx.Err() == nil:
			time.Sleep(100 * time.Millisecond)
		default:
			t.Fatalf("webhook answered %d: %s", d.Status, d.Response)
		}
	}
}

// readStoreFile reads one row of query from pincer's database at path,
// opened beside the running pincer for this read alone, into dest.
func readStoreFile(t *testing.T, path, query string, args []any, dest ...any) error {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.QueryRow(query, args...).Scan(dest...)
}
