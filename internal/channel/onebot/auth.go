package onebot

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
)

// errScheme is an Authorization header in a scheme other than Bearer or
// go-cqhttp's Token (Basic, Digest, …), or sent more than once.
var errScheme = errors.New("unsupported Authorization scheme")

// requestToken is the access token a reverse connection carries, sent as
// "Authorization: Bearer <t>", go-cqhttp's "Token <t>" or the bare "<t>",
// else as ?access_token=<t>. NapCat and LLOneBot send a bare "Bearer" (or
// "Token") when they have no token: that is an empty token. sent is false
// when neither the header nor the query parameter came; any other scheme
// is errScheme.
func requestToken(r *http.Request) (tok string, sent bool, err error) {
	switch v := r.Header.Values("Authorization"); {
	case len(v) > 1:
		return "", true, errScheme
	case len(v) == 1 && strings.TrimSpace(v[0]) != "":
		h := strings.TrimSpace(v[0])
		scheme, rest, spaced := strings.Cut(h, " ")
		known := strings.EqualFold(scheme, "Bearer") || strings.EqualFold(scheme, "Token")
		switch {
		case !spaced && known:
			return "", true, nil
		case !spaced:
			return h, true, nil
		case !known:
			return "", true, errScheme
		}
		return strings.TrimSpace(rest), true, nil
	}
	if q := r.URL.Query(); q.Has("access_token") {
		return q.Get("access_token"), true, nil
	}
	return "", false, nil
}

// equalSecret compares in constant time, including the lengths.
func equalSecret(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// authorize checks a reverse connection's token against want: 401 when
// the Authorization header has an unsupported scheme (whatever want is),
// or when a token is needed and none came; 403 when it is wrong; 0 when
// accepted. reason says why for the log.
func authorize(r *http.Request, want string) (status int, reason string) {
	got, sent, err := requestToken(r)
	switch {
	case err != nil:
		return http.StatusUnauthorized, err.Error()
	case want == "":
		return 0, ""
	case !sent || got == "":
		return http.StatusUnauthorized, "no access token"
	case !equalSecret(got, want):
		return http.StatusForbidden, "wrong access token"
	}
	return 0, ""
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
