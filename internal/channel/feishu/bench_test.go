package feishu

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/channel/feishu/larkevent"
	"github.com/pincerbot/pincer/internal/msg"
)

// counter is a Taker that only counts.
type counter struct{ n atomic.Int64 }

func (c *counter) Dispatch(context.Context, msg.Message, channel.Replier) error {
	c.n.Add(1)
	return nil
}

func (c *counter) Take(_ context.Context, _ msg.Message, _ channel.Replier, done func(error)) {
	c.n.Add(1)
	if done != nil {
		done(nil)
	}
}

// BenchmarkWebhookIngest measures encrypted, signed im.message.receive_v1
// pushes through the account's webhook handler: the signature and
// timestamp checks, decryption, decoding, deduplication (in memory) and
// normalization of a group message that @s the bot, into a Taker that
// only counts. Names come from a warm cache; there is no store.
func BenchmarkWebhookIngest(b *testing.B) {
	sim := feishusim.New(feishusim.Options{})
	api := httptest.NewServer(sim.Handler())
	defer api.Close()
	must(b, sim.AddUser(userA, "张三"))
	a := New(Options{
		AppID: feishusim.DefaultAppID, AppSecret: feishusim.DefaultAppSecret, BaseURL: api.URL, Mode: ModeWebhook,
		VerificationToken: feishusim.DefaultVerificationToken, EncryptKey: testKey, MergeForward: MergeForward{Enabled: true},
	})
	sink := &counter{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, sink) }()
	defer func() { cancel(); <-done }()
	<-a.known
	if a.names.name(ctx, userA, nil) != "张三" {
		b.Fatal("the name cache is not warm")
	}
	h, err := a.WebhookHandler()
	must(b, err)

	// The pushes, each a new message (event, message and content keys
	// all fresh), sealed before the clock starts.
	bodies := make([][]byte, b.N)
	headers := make([]http.Header, b.N)
	now := time.Now()
	ts := strconv.FormatInt(now.Unix(), 10)
	for i := range bodies {
		plain := fmt.Appendf(nil, `{"schema":"2.0","header":{"event_id":"bench-ev-%d","event_type":"im.message.receive_v1","create_time":"%d","token":%q,"app_id":%q,"tenant_key":"t"},`+
			`"event":{"sender":{"sender_id":{"open_id":%q,"union_id":"on_a"},"sender_type":"user","tenant_key":"t"},`+
			`"message":{"message_id":"om_bench_%d","create_time":"%d","chat_id":%q,"chat_type":"group","message_type":"text",`+
			`"content":"{\"text\":\"@_user_1 第 %d 条:帮我看一下这个告警\"}",`+
			`"mentions":[{"key":"@_user_1","id":{"open_id":%q},"name":%q,"tenant_key":"t"}]}}}`,
			i, now.UnixMilli(), feishusim.DefaultVerificationToken, feishusim.DefaultAppID, userA, i, now.UnixMilli(), groupChat, i, botID, botName)
		enc, err := larkevent.Encrypt(testKey, plain, rand.Reader)
		must(b, err)
		bodies[i] = []byte(`{"encrypt":"` + enc + `"}`)
		nonce := strconv.Itoa(i)
		headers[i] = http.Header{
			larkevent.HeaderTimestamp: {ts}, larkevent.HeaderNonce: {nonce},
			larkevent.HeaderSignature: {larkevent.Signature(ts, nonce, testKey, bodies[i])},
			"Content-Type":            {"application/json"},
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest(http.MethodPost, "/feishu/events", nil)
		req.Header = headers[i]
		req.Body = io.NopCloser(bytes.NewReader(bodies[i]))
		req.ContentLength = int64(len(bodies[i]))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	if got := sink.n.Load(); got != int64(b.N) {
		b.Fatalf("%d taken of %d", got, b.N)
	}
	if calls := len(sim.Calls(feishusim.PathBasicBatch)); calls != 1 {
		b.Fatalf("%d name look-ups: the cache was not used", calls)
	}
}
