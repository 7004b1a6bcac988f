package larkevent

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// ErrBusy is what Deliver returns, wrapped or not, when it cannot take
// the event now (its queue is full). The handler answers 503, and the
// open platform pushes the event again later.
var ErrBusy = errors.New("larkevent: busy")

// DefaultMaxBody is the default of Options.MaxBody: 1 MiB, far above any
// event (a message's content is at most 150 KB).
const DefaultMaxBody = 1 << 20

// MaxClockSkew is how far X-Lark-Request-Timestamp may be from the
// handler's clock, either way.
const MaxClockSkew = 300 * time.Second

// LogInterval is how often the handler logs requests rejected for one
// reason: the first of each interval, with the count of those left out
// since the last one logged.
const LogInterval = time.Minute

// Signature headers, sent with every event when an Encrypt Key is set.
const (
	HeaderTimestamp = "X-Lark-Request-Timestamp"
	HeaderNonce     = "X-Lark-Request-Nonce"
	HeaderSignature = "X-Lark-Signature"
)

// Options configure a Handler.
type Options struct {
	// VerificationToken is the app's Verification Token. When set, the
	// URL verification challenge and every event must carry it. At least
	// one of VerificationToken and EncryptKey must be set.
	VerificationToken string
	// EncryptKey is the app's Encrypt Key. When set, bodies must be
	// encrypted with it and events signed with it.
	EncryptKey string
	// Deliver takes each verified event. It should enqueue the event and
	// return at once: the platform waits for the answer, three seconds at
	// most. nil means the event is taken (200); an error wrapping ErrBusy
	// gives 503 and any other 500, after which the platform pushes the
	// event again. The context is the request's. Required.
	Deliver func(ctx context.Context, ev Envelope) error
	// Logger receives the rejected requests (at most one record per
	// reason per LogInterval) and the Deliver failures; discarded when nil.
	Logger *slog.Logger
	// Now is the clock that signature timestamps are checked against;
	// time.Now when nil.
	Now func() time.Time
	// MaxBody caps the request body, in bytes; larger bodies get 413.
	// DefaultMaxBody when 0 or less.
	MaxBody int64
}

// Handler is the http.Handler of a webhook request URL. It is safe for
// concurrent use.
//
// Its answers:
//   - 405 to anything but POST, 413 to a body over Options.MaxBody;
//   - 200 {"challenge":…} to a URL verification with the right token,
//     401 when the token is wrong;
//   - with an Encrypt Key, 401 to an event without the three signature
//     headers, with a wrong signature, or with a timestamp more than
//     MaxClockSkew off; the challenge, which the platform sends unsigned,
//     may come without them but must decrypt with the key;
//   - 401 to an event whose Verification Token is wrong;
//   - 400 to a signed body that does not decrypt, or that is not an event
//     of a known schema (the sender holds the key, so the request is
//     malformed rather than forged), and 400 to an unencrypted body when
//     an Encrypt Key is set or an encrypted one when it is not (the two
//     sides are configured differently);
//   - 401 to an unsigned body that does not decrypt or decode: an
//     unauthenticated caller gets one answer whatever went wrong, so the
//     endpoint tells it nothing about a ciphertext it sends (no padding
//     oracle);
//   - after Deliver: 200 {} when it returned nil, 503 when it returned
//     ErrBusy, 500 on any other error.
type Handler struct {
	token   []byte
	key     string
	deliver func(context.Context, Envelope) error
	log     *slog.Logger
	now     func() time.Time
	maxBody int64
	logs    *throttle
}

// NewHandler returns the Handler for o. It is an error when o has no
// Deliver, or neither a Verification Token nor an Encrypt Key (then
// nothing would tell the platform's requests from anyone else's).
func NewHandler(o Options) (*Handler, error) {
	if o.Deliver == nil {
		return nil, errors.New("larkevent: new handler: no Deliver")
	}
	if o.VerificationToken == "" && o.EncryptKey == "" {
		return nil, errors.New("larkevent: new handler: neither a Verification Token nor an Encrypt Key")
	}
	h := &Handler{
		key:     o.EncryptKey,
		deliver: o.Deliver,
		log:     o.Logger,
		now:     o.Now,
		maxBody: o.MaxBody,
	}
	if o.VerificationToken != "" {
		h.token = []byte(o.VerificationToken)
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBody
	}
	h.logs = newThrottle(LogInterval, h.now)
	return h, nil
}

// Reasons a request is rejected for, as logged.
const (
	reasonNoSignature    = "missing signature headers"
	reasonBadTimestamp   = "malformed timestamp"
	reasonStaleTimestamp = "timestamp out of window"
	reasonBadSignature   = "bad signature"
	reasonUnsigned       = "unsigned event"
	reasonUndecryptable  = "undecryptable body"
	reasonNotEncrypted   = "unencrypted body with an Encrypt Key set"
	reasonNoKey          = "encrypted body without an Encrypt Key"
	reasonMalformed      = "malformed body"
	reasonBadToken       = "wrong verification token"
	reasonBusy           = "deliver busy"
	reasonDeliver        = "deliver failed"
	reasonRead           = "body unreadable"
	reasonTooLarge       = "body too large"
)

// rejection is why a request is answered with status.
type rejection struct {
	status int
	reason string
	err    error
}

// ServeHTTP answers one pushed request; see Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		return
	}
	body, rej := h.readBody(w, r)
	if rej == nil {
		rej = h.serve(w, r, body)
	}
	if rej != nil {
		h.reject(r, rej)
		http.Error(w, http.StatusText(rej.status), rej.status)
	}
}

func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *rejection) {
	if r.ContentLength > h.maxBody {
		return nil, &rejection{http.StatusRequestEntityTooLarge, reasonTooLarge, fmt.Errorf("Content-Length %d", r.ContentLength)}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, &rejection{http.StatusRequestEntityTooLarge, reasonTooLarge, nil}
		}
		return nil, &rejection{http.StatusBadRequest, reasonRead, err}
	}
	return body, nil
}

// serve answers the request with body, or says why it is rejected.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, body []byte) *rejection {
	plain, signed, rej := h.open(r.Header, body)
	if rej != nil {
		return rej
	}
	// An unsigned body is answered with 401 whatever is wrong with it.
	malformed := http.StatusBadRequest
	if h.key != "" && !signed {
		malformed = http.StatusUnauthorized
	}
	var msg wire
	if err := json.Unmarshal(plain, &msg); err != nil {
		return &rejection{malformed, reasonMalformed, err}
	}
	if msg.Type == typeChallenge {
		if !h.tokenOK(msg.Token) {
			return &rejection{http.StatusUnauthorized, reasonBadToken, nil}
		}
		return h.answerChallenge(w, msg.Challenge)
	}
	if h.key != "" && !signed {
		return &rejection{http.StatusUnauthorized, reasonUnsigned, nil}
	}
	if msg.Encrypt != nil && h.key == "" {
		// The platform has an Encrypt Key that the handler was not given.
		return &rejection{http.StatusBadRequest, reasonNoKey, nil}
	}
	ev, err := msg.envelope()
	if err != nil {
		return &rejection{http.StatusBadRequest, reasonMalformed, err}
	}
	if !h.tokenOK(ev.Token) {
		return &rejection{http.StatusUnauthorized, reasonBadToken, fmt.Errorf("event %s", ev.EventID)}
	}
	if err := h.deliver(r.Context(), ev); err != nil {
		if errors.Is(err, ErrBusy) {
			return &rejection{http.StatusServiceUnavailable, reasonBusy, fmt.Errorf("event %s: %w", ev.EventID, err)}
		}
		return &rejection{http.StatusInternalServerError, reasonDeliver, fmt.Errorf("event %s: %w", ev.EventID, err)}
	}
	writeJSON(w, []byte("{}"))
	return nil
}

// open checks the signature and decrypts the body when an Encrypt Key is
// set, and returns the plaintext and whether it was signed.
func (h *Handler) open(hdr http.Header, body []byte) (plain []byte, signed bool, rej *rejection) {
	if h.key == "" {
		return body, false, nil
	}
	ts, nonce, sig := hdr.Get(HeaderTimestamp), hdr.Get(HeaderNonce), hdr.Get(HeaderSignature)
	signed = ts != "" || nonce != "" || sig != ""
	if signed {
		if rej := h.verify(ts, nonce, sig, body); rej != nil {
			return nil, false, rej
		}
	}
	// An unsigned body (a challenge, or a forgery) gets 401 whatever is
	// wrong with it; a signed one that does not open is malformed.
	bad := http.StatusUnauthorized
	if signed {
		bad = http.StatusBadRequest
	}
	var env struct {
		Encrypt *string `json:"encrypt"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, false, &rejection{bad, reasonMalformed, err}
	}
	if env.Encrypt == nil {
		return nil, false, &rejection{bad, reasonNotEncrypted, nil}
	}
	plain, err := Decrypt(h.key, *env.Encrypt)
	if err != nil {
		return nil, false, &rejection{bad, reasonUndecryptable, err}
	}
	return plain, signed, nil
}

// verify checks the signature headers of body.
func (h *Handler) verify(ts, nonce, sig string, body []byte) *rejection {
	if ts == "" || nonce == "" || sig == "" {
		return &rejection{http.StatusUnauthorized, reasonNoSignature, nil}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return &rejection{http.StatusUnauthorized, reasonBadTimestamp, err}
	}
	skew := h.now().Sub(time.Unix(sec, 0))
	if skew > MaxClockSkew || skew < -MaxClockSkew {
		return &rejection{http.StatusUnauthorized, reasonStaleTimestamp, fmt.Errorf("timestamp %s is %v off", ts, skew.Round(time.Second))}
	}
	want := signature(ts, nonce, h.key, body)
	var got [sha256.Size]byte
	if len(sig) != hex.EncodedLen(len(got)) {
		return &rejection{http.StatusUnauthorized, reasonBadSignature, fmt.Errorf("signature of %d characters", len(sig))}
	}
	if _, err := hex.Decode(got[:], []byte(sig)); err != nil {
		return &rejection{http.StatusUnauthorized, reasonBadSignature, errors.New("signature is not 64 hex digits")}
	}
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return &rejection{http.StatusUnauthorized, reasonBadSignature, nil}
	}
	return nil
}

// tokenOK reports whether token is the Verification Token, or there is
// none to check.
func (h *Handler) tokenOK(token string) bool {
	return h.token == nil || subtle.ConstantTimeCompare([]byte(token), h.token) == 1
}

func (h *Handler) answerChallenge(w http.ResponseWriter, challenge string) *rejection {
	out, err := json.Marshal(struct {
		Challenge string `json:"challenge"`
	}{challenge})
	if err != nil {
		return &rejection{http.StatusInternalServerError, reasonMalformed, err}
	}
	h.log.Info("feishu webhook: answered the URL verification challenge")
	writeJSON(w, out)
	return nil
}

func writeJSON(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// reject logs rej, unless a record of its reason was logged within the
// last LogInterval.
func (h *Handler) reject(r *http.Request, rej *rejection) {
	ok, suppressed := h.logs.admit(rej.reason)
	if !ok {
		return
	}
	level := slog.LevelWarn
	if rej.status == http.StatusInternalServerError {
		level = slog.LevelError
	}
	attrs := []slog.Attr{
		slog.String("reason", rej.reason),
		slog.Int("status", rej.status),
		slog.String("remote", r.RemoteAddr),
	}
	if rej.err != nil {
		attrs = append(attrs, slog.Any("err", rej.err))
	}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int("suppressed", suppressed))
	}
	h.log.LogAttrs(r.Context(), level, "feishu webhook: request rejected", attrs...)
}
