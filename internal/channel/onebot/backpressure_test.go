package onebot

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

// stuckSink takes messages in order and holds the taker until released,
// as a saturated pincer does.
type stuckSink struct {
	release chan struct{}
	taken   atomic.Int32
}

func (s *stuckSink) Dispatch(context.Context, msg.Message, channel.Replier) error { return nil }

func (s *stuckSink) Take(_ context.Context, _ msg.Message, _ channel.Replier, done func(error)) {
	<-s.release
	s.taken.Add(1)
	done(nil)
}

func signedPost(t *testing.T, a *Account, id int64) *httptest.ResponseRecorder {
	t.Helper()
	body, _ := json.Marshal(groupEvent(id, 10001, "hi"))
	mac := hmac.New(sha1.New, []byte("k"))
	mac.Write(body)
	req := httptest.NewRequest(http.MethodPost, "/onebot/v11/post", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Self-ID", "3300000001")
	req.Header.Set("X-Signature", "sha1="+hex.EncodeToString(mac.Sum(nil)))
	w := httptest.NewRecorder()
	a.ServePost(w, req)
	return w
}

// TestSaturatedPincerAsksPostsToRetry: while pincer cannot take messages
// in, event POSTs queue up to a bound; beyond it a POST waits postWait and
// is answered 503 with Retry-After, so the implementation sends it again;
// nothing is dropped.
func TestSaturatedPincerAsksPostsToRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := NewAccount(AccountOptions{Post: true, PostSecret: "k", SelfID: 3300000001})
		sink := &stuckSink{release: make(chan struct{})}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx, sink) }()
		synctest.Wait()
		accepted := 0
		var refused *httptest.ResponseRecorder
		start := time.Now()
		for id := int64(1); refused == nil && id <= 1000; id++ {
			w := signedPost(t, a, id)
			switch w.Code {
			case http.StatusNoContent:
				accepted++
			case http.StatusServiceUnavailable:
				refused = w
			default:
				t.Fatalf("POST %d: %d %s", id, w.Code, w.Body)
			}
		}
		if refused == nil {
			t.Fatal("a saturated pincer took 1000 POSTs")
		}
		if refused.Header().Get("Retry-After") == "" || time.Since(start) != postWait {
			t.Errorf("refused after %v with %v", time.Since(start), refused.Header())
		}
		close(sink.release)
		synctest.Wait()
		if n := int(sink.taken.Load()); n != accepted {
			t.Errorf("%d of %d accepted POSTs were taken in", n, accepted)
		}
		cancel()
		<-done
	})
}

// TestFullQueueStopsTheReaderButNotTheConnection: while the sink cannot
// take a message in (the inbound queue is full), the WebSocket reader
// stops reading, so the implementation's next write waits (it buffers)
// instead of pincer's memory growing; that wait is pincer's own, so the
// heartbeat watchdog does not end the connection however long it lasts;
// once the sink takes messages again the waiting events are read, in
// order, and nothing is lost.
func TestFullQueueStopsTheReaderButNotTheConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &stuckSink{release: make(chan struct{})}
		r := newRigTo(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001}, nil, sink)
		defer r.close()
		ctx := context.Background()
		if err := r.peer.Connected(ctx); err != nil {
			t.Fatal(err)
		}
		if err := r.peer.Push(ctx, map[string]any{"post_type": "meta_event", "meta_event_type": "heartbeat", "interval": 1000, "self_id": 3300000001}); err != nil {
			t.Fatal(err)
		}
		if err := r.peer.Push(ctx, groupEvent(1, 10001, "一")); err != nil {
			t.Fatal(err) // read, and held in the sink
		}
		pushed := make(chan error, 1)
		go func() { pushed <- r.peer.Push(ctx, groupEvent(2, 10001, "二")) }()
		synctest.Wait()
		select {
		case err := <-pushed:
			t.Fatalf("the implementation's write went through (%v) while pincer could take nothing in", err)
		default:
		}
		time.Sleep(10 * time.Minute) // far past two heartbeat intervals
		synctest.Wait()
		if r.reconnected(ctx) || stateOf(r.acct) != StateConnected {
			t.Fatalf("the connection was given up while pincer held its reader (state %s)", stateOf(r.acct))
		}
		close(sink.release)
		if err := <-pushed; err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := sink.taken.Load(); n != 2 {
			t.Errorf("%d messages taken in, want 2", n)
		}
	})
}
