package onebot

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
)

// requestToken is the access token a reverse connection or event POST
// carries: the Authorization header's value after the first space (the
// scheme, Bearer or go-cqhttp's Token, is ignored), else ?access_token=.
// NapCat sends a bare "Bearer" when it has no token.
func requestToken(r *http.Request) (string, bool) {
	if h := strings.TrimSpace(r.Header.Get("Authorization")); h != "" {
		_, tok, _ := strings.Cut(h, " ")
		return strings.TrimSpace(tok), true
	}
	if q := r.URL.Query(); q.Has("access_token") {
		return q.Get("access_token"), true
	}
	return "", false
}

// equalSecret compares in constant time, including the lengths.
func equalSecret(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// authorize checks a reverse connection's token against want: 401 when
// one is needed and none came, 403 when it is wrong, 0 when accepted.
func authorize(r *http.Request, want string) int {
	if want == "" {
		return 0
	}
	got, ok := requestToken(r)
	switch {
	case !ok || got == "":
		return http.StatusUnauthorized
	case !equalSecret(got, want):
		return http.StatusForbidden
	}
	return 0
}

// checkSignature verifies X-Signature: sha1=<hex HMAC-SHA1(secret, body)>
// over the raw body: 401 when missing, 403 when wrong, 0 when valid.
func checkSignature(r *http.Request, body []byte, secret string) int {
	if secret == "" {
		return 0
	}
	sig, ok := strings.CutPrefix(r.Header.Get("X-Signature"), "sha1=")
	if !ok {
		return http.StatusUnauthorized
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return http.StatusForbidden
	}
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return http.StatusForbidden
	}
	return 0
}

// readBody reads a POSTed event, bounded.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, maxFrame))
}
