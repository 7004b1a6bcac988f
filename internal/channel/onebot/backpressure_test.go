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
