package onebot

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRequestTokenForms: Bearer, go-cqhttp's Token, the bare token and
// ?access_token= carry a token; a bare scheme word is an empty one
// (NapCat without a token); every other scheme is refused.
func TestRequestTokenForms(t *testing.T) {
	tests := []struct {
		name   string
		auth   []string
		query  string
		tok    string
		sent   bool
		scheme bool // errScheme
	}{
		{name: "Bearer", auth: []string{"Bearer s3cret"}, tok: "s3cret", sent: true},
		{name: "bearer in lower case", auth: []string{"bearer s3cret"}, tok: "s3cret", sent: true},
		{name: "go-cqhttp Token", auth: []string{"Token s3cret"}, tok: "s3cret", sent: true},
		{name: "bare token", auth: []string{"s3cret"}, tok: "s3cret", sent: true},
		{name: "padded", auth: []string{"  Bearer   s3cret  "}, tok: "s3cret", sent: true},
		{name: "NapCat's bare Bearer", auth: []string{"Bearer"}, sent: true},
		{name: "bare Token", auth: []string{"Token"}, sent: true},
		{name: "Bearer and a space", auth: []string{"Bearer "}, sent: true},
		{name: "query", query: "?access_token=s3cret", tok: "s3cret", sent: true},
		{name: "empty query", query: "?access_token=", sent: true},
		{name: "the header wins over the query", auth: []string{"Bearer a"}, query: "?access_token=b", tok: "a", sent: true},
		{name: "nothing"},
		{name: "empty header", auth: []string{""}},
		{name: "Basic", auth: []string{"Basic czNjcmV0"}, sent: true, scheme: true},
		{name: "Basic with the query token", auth: []string{"Basic czNjcmV0"}, query: "?access_token=s3cret", sent: true, scheme: true},
		{name: "Digest", auth: []string{`Digest username="x"`}, sent: true, scheme: true},
		{name: "another word", auth: []string{"Custom s3cret"}, sent: true, scheme: true},
		{name: "two headers", auth: []string{"Bearer s3cret", "Bearer other"}, sent: true, scheme: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/onebot/v11/ws"+tt.query, nil)
			for _, v := range tt.auth {
				r.Header.Add("Authorization", v)
			}
			tok, sent, err := requestToken(r)
			if tok != tt.tok || sent != tt.sent || (err == errScheme) != tt.scheme || (err != nil && err != errScheme) {
				t.Errorf("requestToken = %q, %v, %v; want %q, %v, scheme error %v", tok, sent, err, tt.tok, tt.sent, tt.scheme)
			}
		})
	}
}

func TestAuthorize(t *testing.T) {
	tests := []struct {
		want, auth, query string
		status            int
	}{
		{want: "s3cret", auth: "Bearer s3cret"},
		{want: "s3cret", auth: "Token s3cret"},
		{want: "s3cret", auth: "s3cret"},
		{want: "s3cret", query: "?access_token=s3cret"},
		{want: "s3cret", status: http.StatusUnauthorized},
		{want: "s3cret", auth: "Bearer", status: http.StatusUnauthorized},
		{want: "s3cret", query: "?access_token=", status: http.StatusUnauthorized},
		{want: "s3cret", auth: "Bearer s3cre", status: http.StatusForbidden},
		{want: "s3cret", auth: "Bearer s3cret2", status: http.StatusForbidden},
		{want: "s3cret", auth: "S3CRET", status: http.StatusForbidden},
		{want: "s3cret", auth: "Basic s3cret", status: http.StatusUnauthorized},
		{auth: "Bearer"},
		{auth: "Bearer anything"},
		{},
		{auth: "Basic czNjcmV0", status: http.StatusUnauthorized},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/onebot/v11/ws"+tt.query, nil)
		if tt.auth != "" {
			r.Header.Set("Authorization", tt.auth)
		}
		if status, reason := authorize(r, tt.want); status != tt.status || (status != 0) != (reason != "") {
			t.Errorf("authorize(%q%s, want %q) = %d %q; want %d", tt.auth, tt.query, tt.want, status, reason, tt.status)
		}
	}
}
