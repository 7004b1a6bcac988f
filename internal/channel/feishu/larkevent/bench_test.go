package larkevent

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// BenchmarkHandlerEncrypted measures a realistic encrypted and signed
// im.message.receive_v1 push through the handler: reading the body, the
// signature and timestamp checks, decryption, decoding the envelope and,
// in Deliver as the account's consumer would, the message.
func BenchmarkHandlerEncrypted(b *testing.B) {
	now := time.Unix(1760000000, 0)
	var delivered int
	h, err := NewHandler(Options{
		VerificationToken: sampleToken,
		EncryptKey:        testKey,
		Now:               func() time.Time { return now },
		Deliver: func(_ context.Context, ev Envelope) error {
			m, err := DecodeMessageReceive(ev)
			if err != nil {
				return err
			}
			delivered += len(m.MessageID)
			return nil
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	body := sealed(b, testKey, sampleReceive)
	ts := strconv.FormatInt(now.Unix(), 10)
	hdr := http.Header{
		HeaderTimestamp: {ts},
		HeaderNonce:     {"8d2a7f"},
		HeaderSignature: {Signature(ts, "8d2a7f", testKey, body)},
		"Content-Type":  {"application/json"},
	}
	req := httptest.NewRequest(http.MethodPost, "/feishu/events", nil)
	req.Header = hdr
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		r := req.Clone(req.Context())
		r.Body = readCloser{bytes.NewReader(body)}
		r.ContentLength = int64(len(body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	if delivered == 0 {
		b.Fatal("nothing delivered")
	}
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }
