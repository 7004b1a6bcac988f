package larkevent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

const testKey = "the encrypt key"

var testNow = time.Unix(1760000000, 0)

// records is a slog.Handler that keeps what it is given.
type records struct {
	mu   sync.Mutex
	recs []map[string]any
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	m := map[string]any{"msg": rec.Message, "level": rec.Level}
	rec.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.Resolve().Any(); return true })
	r.mu.Lock()
	r.recs = append(r.recs, m)
	r.mu.Unlock()
	return nil
}

func (r *records) all() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]any(nil), r.recs...)
}

// rig is a Handler with a Deliver that records what it gets.
type rig struct {
	t    *testing.T
	h    *Handler
	logs *records

	mu         sync.Mutex
	delivered  []Envelope
	deliverErr error
}

// newRig returns a rig for o, whose Deliver, Logger and (when nil) Now it
// sets.
func newRig(t *testing.T, o Options) *rig {
	t.Helper()
	r := &rig{t: t, logs: &records{}}
	o.Deliver = func(_ context.Context, ev Envelope) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.delivered = append(r.delivered, ev)
		return r.deliverErr
	}
	o.Logger = slog.New(r.logs)
	if o.Now == nil {
		o.Now = func() time.Time { return testNow }
	}
	h, err := NewHandler(o)
	if err != nil {
		t.Fatal(err)
	}
	r.h = h
	return r
}

func (r *rig) got() []Envelope {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Envelope(nil), r.delivered...)
}

func (r *rig) post(body []byte, hdr http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/feishu/events", bytes.NewReader(body))
	for k, v := range hdr {
		req.Header[k] = v
	}
	w := httptest.NewRecorder()
	r.h.ServeHTTP(w, req)
	return w
}

// sealed is body encrypted with key, as the platform pushes it.
func sealed(t testing.TB, key, body string) []byte {
	t.Helper()
	enc, err := Encrypt(key, []byte(body), nil)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(map[string]string{"encrypt": enc})
	return out
}

// signedAt are the signature headers of body at time at.
func signedAt(key string, at time.Time, body []byte) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	const nonce = "8d2a7f"
	return http.Header{
		HeaderTimestamp: {ts},
		HeaderNonce:     {nonce},
		HeaderSignature: {Signature(ts, nonce, key, body)},
	}
}

func signed(key string, body []byte) http.Header { return signedAt(key, testNow, body) }

func expect(t *testing.T, w *httptest.ResponseRecorder, status int, body string) {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status %d (%q), want %d", w.Code, w.Body.String(), status)
	}
	if body != "" {
		if got := w.Body.String(); got != body {
			t.Fatalf("body %q, want %q", got, body)
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("Content-Type %q", ct)
		}
	}
}

func TestNewHandlerNeedsDeliverAndAuthentication(t *testing.T) {
	deliver := func(context.Context, Envelope) error { return nil }
	if _, err := NewHandler(Options{VerificationToken: "t"}); err == nil {
		t.Error("no Deliver was accepted")
	}
	if _, err := NewHandler(Options{Deliver: deliver}); err == nil {
		t.Error("neither a token nor a key was accepted")
	}
	if _, err := NewHandler(Options{Deliver: deliver, EncryptKey: "k"}); err != nil {
		t.Error(err)
	}
}

func TestChallengePlain(t *testing.T) {
	r := newRig(t, Options{VerificationToken: sampleToken})
	expect(t, r.post([]byte(sampleChallenge), nil), http.StatusOK, `{"challenge":"ajls384kdjx98XX"}`)

	// The challenge is echoed as a JSON string, whatever it holds.
	w := r.post([]byte(`{"challenge":"a\"b</script>","token":"VerificationTokenValue","type":"url_verification"}`), nil)
	var got struct{ Challenge string }
	if err := json.Unmarshal(w.Body.Bytes(), &got); w.Code != 200 || err != nil || got.Challenge != `a"b</script>` {
		t.Fatalf("%d %s: %q, %v", w.Code, w.Body, got.Challenge, err)
	}
	if len(r.got()) != 0 {
		t.Fatal("the challenge was delivered")
	}
}

func TestChallengeWrongToken(t *testing.T) {
	r := newRig(t, Options{VerificationToken: sampleToken})
	for _, body := range []string{
		strings.Replace(sampleChallenge, sampleToken, "VerificationTokenValuf", 1),
		strings.Replace(sampleChallenge, sampleToken, "", 1),
		`{"challenge":"x","type":"url_verification"}`,
	} {
		expect(t, r.post([]byte(body), nil), http.StatusUnauthorized, "")
	}
}

func TestChallengeEncrypted(t *testing.T) {
	r := newRig(t, Options{VerificationToken: sampleToken, EncryptKey: testKey})
	// Unsigned, as the platform sends it.
	expect(t, r.post(sealed(t, testKey, sampleChallenge), nil), http.StatusOK, `{"challenge":"ajls384kdjx98XX"}`)
	// Signed works as well.
	body := sealed(t, testKey, sampleChallenge)
	expect(t, r.post(body, signed(testKey, body)), http.StatusOK, `{"challenge":"ajls384kdjx98XX"}`)

	for name, body := range map[string][]byte{
		"wrong token":      sealed(t, testKey, strings.Replace(sampleChallenge, sampleToken, "guess", 1)),
		"other key":        sealed(t, "another key", sampleChallenge),
		"plaintext":        []byte(sampleChallenge),
		"garbage":          []byte(`{"encrypt":"AAAA"}`),
		"not JSON inside":  sealed(t, testKey, "hello"),
		"encrypt a number": []byte(`{"encrypt":5}`),
	} {
		if w := r.post(body, nil); w.Code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, w.Code)
		}
	}
}

func TestChallengeEncryptedWithoutToken(t *testing.T) {
	// Without a Verification Token, decrypting with the key is the check.
	r := newRig(t, Options{EncryptKey: testKey})
	expect(t, r.post(sealed(t, testKey, sampleChallenge), nil), http.StatusOK, `{"challenge":"ajls384kdjx98XX"}`)
	expect(t, r.post(sealed(t, "another key", sampleChallenge), nil), http.StatusUnauthorized, "")
}

func TestSignedEventAccepted(t *testing.T) {
	r := newRig(t, Options{VerificationToken: sampleToken, EncryptKey: testKey})
	body := sealed(t, testKey, sampleReceive)
	expect(t, r.post(body, signed(testKey, body)), http.StatusOK, `{}`)
	got := r.got()
	if len(got) != 1 {
		t.Fatalf("delivered %d events", len(got))
	}
	want := mustEnvelope(t, sampleReceive)
	if got[0].EventID != want.EventID || got[0].EventType != EventMessageReceive || !bytes.Equal(got[0].Event, want.Event) {
		t.Fatalf("delivered %+v", got[0])
	}
	// Timestamps at the edge of the window pass.
	for _, at := range []time.Time{testNow.Add(-MaxClockSkew), testNow.Add(MaxClockSkew)} {
		expect(t, r.post(body, signedAt(testKey, at, body)), http.StatusOK, `{}`)
	}
	// Hex digits in upper case are the same signature.
	hdr := signed(testKey, body)
	hdr.Set(HeaderSignature, strings.ToUpper(hdr.Get(HeaderSignature)))
	expect(t, r.post(body, hdr), http.StatusOK, `{}`)
}

func TestBadSignature(t *testing.T) {
	r := newRig(t, Options{VerificationToken: sampleToken, EncryptKey: testKey})
	body := sealed(t, testKey, sampleReceive)
	flip := func(s string) string {
		b := []byte(s)
		if b[10] == '0' {
			b[10] = '1'
		} else {
			b[10] = '0'
		}
		return string(b)
	}
	cases := map[string]http.Header{}
	h := signed(testKey, body)
	h.Set(HeaderSignature, flip(h.Get(HeaderSignature)))
	cases["flipped digit"] = h
	h = signed(testKey, body)
	h.Set(HeaderSignature, h.Get(HeaderSignature)[:63])
	cases["short"] = h
	h = signed(testKey, body)
	h.Set(HeaderSignature, h.Get(HeaderSignature)+"00")
	cases["long"] = h
	h = signed(testKey, body)
	h.Set(HeaderSignature, "zz"+h.Get(HeaderSignature)[2:])
	cases["not hex"] = h
	cases["other key"] = signed("another key", body)
	cases["other body"] = signed(testKey, append(body, ' '))
	h = signed(testKey, body)
	h.Set(HeaderNonce, "other")
	cases["other nonce"] = h
	for _, name := range []string{HeaderTimestamp, HeaderNonce, HeaderSignature} {
		h = signed(testKey, body)
		h.Del(name)
		cases["no "+name] = h
	}
	for name, hdr := range cases {
		if w := r.post(body, hdr); w.Code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, w.Code)
		}
	}
	if n := len(r.got()); n != 0 {
		t.Fatalf("delivered %d events", n)
	}
}

func TestUnsignedEventRejected(t *testing.T) {
	// Only the challenge may come unsigned.
	r := newRig(t, Options{VerificationToken: sampleToken, EncryptKey: testKey})
	expect(t, r.post(sealed(t, testKey, sampleReceive), nil), http.StatusUnauthorized, "")
	if n := len(r.got()); n != 0 {
		t.Fatalf("delivered %d events", n)
	}
}

func TestStaleTimestamp(t *testing.T) {
	r := newRig(t, Options{VerificationToken: sampleToken, EncryptKey: testKey})
	body := sealed(t, testKey, sampleReceive)
	for name, hdr := range map[string]http.Header{
		"301 s old":    signedAt(testKey, testNow.Add(-MaxClockSkew-time.Second), body),
		"301 s ahead":  signedAt(testKey, testNow.Add(MaxClockSkew+time.Second), body),
		"a day old":    signedAt(testKey, testNow.Add(-24*time.Hour), body),
		"zero":         signedAt(testKey, time.Unix(0, 0), body),
		"milliseconds": signedAt(testKey, time.Unix(testNow.UnixMilli(), 0), body),
		"not a number": func() http.Header { h := signed(testKey, body); h.Set(HeaderTimestamp, "now"); return h }(),
		"out of range": func() http.Header {
			h := signed(testKey, body)
			h.Set(HeaderTimestamp, "99999999999999999999")
			return h
		}(),
		"with fraction": func() http.Header { h := signed(testKey, body); h.Set(HeaderTimestamp, "1760000000.5"); return h }(),
	} {
		if w := r.post(body, hdr); w.Code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, w.Code)
		}
	}
	if n := len(r.got()); n != 0 {
		t.Fatalf("delivered %d events", n)
	}
}

func TestWrongToken(t *testing.T) {
	wrong := strings.Replace(sampleReceive, `"token": "VerificationTokenValue"`, `"token": "VerificationTokenValuf"`, 1)
	none := strings.Replace(sampleReceive, `"token": "VerificationTokenValue",`, ``, 1)
	wrongV1 := strings.Replace(sampleV1, `"token":"VerificationTokenValue"`, `"token":"other"`, 1)
	if wrong == sampleReceive || none == sampleReceive || wrongV1 == sampleV1 {
		t.Fatal("the samples changed")
	}

	plain := newRig(t, Options{VerificationToken: sampleToken})
	for name, body := range map[string]string{"2.0 wrong": wrong, "2.0 missing": none, "v1 wrong": wrongV1} {
		if w := plain.post([]byte(body), nil); w.Code != http.StatusUnauthorized {
			t.Errorf("plain %s: status %d, want 401", name, w.Code)
		}
	}

	enc := newRig(t, Options{VerificationToken: sampleToken, EncryptKey: testKey})
	body := sealed(t, testKey, wrong)
	if w := enc.post(body, signed(testKey, body)); w.Code != http.StatusUnauthorized {
		t.Errorf("encrypted: status %d, want 401", w.Code)
	}
	if n := len(plain.got()) + len(enc.got()); n != 0 {
		t.Fatalf("delivered %d events", n)
	}

	// Without a Verification Token, the signature is the check.
	keyOnly := newRig(t, Options{EncryptKey: testKey})
	body = sealed(t, testKey, none)
	expect(t, keyOnly.post(body, signed(testKey, body)), http.StatusOK, `{}`)
}

func TestV1Event(t *testing.T) {
	r := newRig(t, Options{VerificationToken: sampleToken})
	expect(t, r.post([]byte(sampleV1), nil), http.StatusOK, `{}`)
	got := r.got()
	if len(got) != 1 || got[0].Schema != Schema1 || got[0].EventID != "bc447199585340d1f3728d26b1c0297a" || got[0].EventType != "p2p_chat_create" {
		t.Fatalf("delivered %+v", got)
	}
	enc := newRig(t, Options{VerificationToken: sampleToken, EncryptKey: testKey})
	body := sealed(t, testKey, sampleV1)
	expect(t, enc.post(body, signed(testKey, body)), http.StatusOK, `{}`)
	if got := enc.got(); len(got) != 1 || got[0].Schema != Schema1 {
		t.Fatalf("delivered %+v", got)
	}
}

func TestDeliverErrors(t *testing.T) {
	r := newRig(t, Options{VerificationToken: sampleToken})
	for _, c := range []struct {
		err    error
		status int
	}{
		{ErrBusy, http.StatusServiceUnavailable},
		{fmt.Errorf("inbound queue full: %w", ErrBusy), http.StatusServiceUnavailable},
		{errors.New("store closed"), http.StatusInternalServerError},
		{nil, http.StatusOK},
	} {
		r.mu.Lock()
		r.deliverErr = c.err
		r.mu.Unlock()
		if w := r.post([]byte(sampleReceive), nil); w.Code != c.status {
			t.Errorf("Deliver returning %v: status %d, want %d", c.err, w.Code, c.status)
		}
	}
}

func TestDeliverGetsTheRequestContext(t *testing.T) {
	type ctxKey struct{}
	var got any
	h, err := NewHandler(Options{VerificationToken: sampleToken, Deliver: func(ctx context.Context, _ Envelope) error {
		got = ctx.Value(ctxKey{})
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(sampleReceive))
	req = req.WithContext(context.WithValue(req.Context(), ctxKey{}, "request"))
	h.ServeHTTP(httptest.NewRecorder(), req)
	if got != "request" {
		t.Fatalf("Deliver's context carries %v", got)
	}
}

func TestMethodNotAllowed(t *testing.T) {
	r := newRig(t, Options{VerificationToken: sampleToken})
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodHead} {
		w := httptest.NewRecorder()
		r.h.ServeHTTP(w, httptest.NewRequest(m, "/", strings.NewReader(sampleChallenge)))
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != http.MethodPost {
			t.Errorf("%s: status %d, Allow %q", m, w.Code, w.Header().Get("Allow"))
		}
	}
}

func TestBodyTooLarge(t *testing.T) {
	limit := int64(len(sampleChallenge))
	r := newRig(t, Options{VerificationToken: sampleToken, MaxBody: limit})
	expect(t, r.post([]byte(sampleChallenge), nil), http.StatusOK, `{"challenge":"ajls384kdjx98XX"}`)
	expect(t, r.post([]byte(sampleChallenge+" "), nil), http.StatusRequestEntityTooLarge, "")

	// Without a Content-Length, the read stops at the cap.
	req := httptest.NewRequest(http.MethodPost, "/", io.MultiReader(strings.NewReader(sampleChallenge), strings.NewReader(" ")))
	req.ContentLength = -1
	w := httptest.NewRecorder()
	r.h.ServeHTTP(w, req)
	expect(t, w, http.StatusRequestEntityTooLarge, "")

	// The default is 1 MiB.
	d := newRig(t, Options{VerificationToken: sampleToken})
	big := []byte(`{"pad":"` + strings.Repeat("x", DefaultMaxBody) + `"}`)
	expect(t, d.post(big, nil), http.StatusRequestEntityTooLarge, "")
}

func TestMalformedBodies(t *testing.T) {
	plain := newRig(t, Options{VerificationToken: sampleToken})
	for name, body := range map[string]string{
		"not JSON":       "hello",
		"empty":          "",
		"no event id":    `{"schema":"2.0","header":{"event_type":"t","token":"VerificationTokenValue"},"event":{}}`,
		"unknown schema": `{"schema":"9","header":{"event_id":"e","event_type":"t","token":"VerificationTokenValue"},"event":{}}`,
		// The platform encrypts, but the handler has no key.
		"encrypted": string(sealed(t, testKey, sampleReceive)),
	} {
		if w := plain.post([]byte(body), nil); w.Code != http.StatusBadRequest {
			t.Errorf("plain, %s: status %d, want 400", name, w.Code)
		}
	}

	// Signed by the key holder but unreadable: malformed, not forged.
	enc := newRig(t, Options{VerificationToken: sampleToken, EncryptKey: testKey})
	for name, body := range map[string][]byte{
		"plaintext":         []byte(sampleReceive),
		"not JSON":          []byte("hello"),
		"undecryptable":     []byte(`{"encrypt":"AAAA"}`),
		"wrong key inside":  sealed(t, "another key", sampleReceive),
		"not JSON inside":   sealed(t, testKey, "hello"),
		"not event inside":  sealed(t, testKey, `{"schema":"2.0"}`),
		"encrypted inside":  sealed(t, testKey, string(sealed(t, testKey, sampleReceive))),
		"encrypt is number": []byte(`{"encrypt":5}`),
	} {
		if w := enc.post(body, signed(testKey, body)); w.Code != http.StatusBadRequest {
			t.Errorf("signed, %s: status %d, want 400", name, w.Code)
		}
	}
	if n := len(plain.got()) + len(enc.got()); n != 0 {
		t.Fatalf("delivered %d events", n)
	}
}

// countReason counts the records of reason, and returns the suppressed
// count of the last one.
func countReason(recs []map[string]any, reason string) (n int, suppressed int64) {
	for _, r := range recs {
		if r["reason"] == reason {
			n++
			suppressed, _ = r["suppressed"].(int64)
		}
	}
	return n, suppressed
}

func TestRejectionsAreLoggedOncePerReasonPerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Now is nil: the bubble's clock, which time.Sleep advances.
		logs := &records{}
		h, err := NewHandler(Options{
			VerificationToken: sampleToken,
			EncryptKey:        testKey,
			Deliver:           func(context.Context, Envelope) error { return nil },
			Logger:            slog.New(logs),
		})
		if err != nil {
			t.Fatal(err)
		}
		post := func(body []byte, hdr http.Header) int {
			req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
			for k, v := range hdr {
				req.Header[k] = v
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			return w.Code
		}
		body := sealed(t, testKey, sampleReceive)
		forged := func() http.Header { return signedAt("guess", time.Now(), body) }
		wrongToken := sealed(t, testKey, strings.Replace(sampleReceive, sampleToken, "guess", 1))

		for range 100 {
			if c := post(body, forged()); c != http.StatusUnauthorized {
				t.Fatalf("status %d", c)
			}
		}
		if n, _ := countReason(logs.all(), reasonBadSignature); n != 1 {
			t.Fatalf("100 bad signatures logged %d times, want once", n)
		}
		// Another reason has a budget of its own.
		post(wrongToken, signedAt(testKey, time.Now(), wrongToken))
		post(wrongToken, signedAt(testKey, time.Now(), wrongToken))
		if n, _ := countReason(logs.all(), reasonBadToken); n != 1 {
			t.Fatalf("wrong tokens logged %d times, want once", n)
		}

		time.Sleep(LogInterval - time.Second)
		post(body, forged())
		if n, _ := countReason(logs.all(), reasonBadSignature); n != 1 {
			t.Fatalf("a bad signature within the interval was logged")
		}
		time.Sleep(time.Second)
		post(body, forged())
		n, suppressed := countReason(logs.all(), reasonBadSignature)
		if n != 2 || suppressed != 100 {
			t.Fatalf("after the interval: %d records, the last with suppressed=%d; want 2 and 100", n, suppressed)
		}
		for _, r := range logs.all() {
			if r["reason"] == reasonBadSignature && r["level"] != slog.LevelWarn {
				t.Errorf("logged at %v", r["level"])
			}
		}
	})
}

func TestDeliverFailureIsLoggedAsError(t *testing.T) {
	r := newRig(t, Options{VerificationToken: sampleToken})
	r.deliverErr = errors.New("store closed")
	r.post([]byte(sampleReceive), nil)
	recs := r.logs.all()
	if len(recs) != 1 || recs[0]["level"] != slog.LevelError || recs[0]["reason"] != reasonDeliver ||
		!strings.Contains(fmt.Sprint(recs[0]["err"]), "store closed") {
		t.Fatalf("logged %v", recs)
	}
}
