package onebotsim

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/coder/websocket"
)

// ReverseOptions describe how the peer dials pincer's reverse WebSocket,
// the way an implementation configured with a "ws client" does.
type ReverseOptions struct {
	// SelfID goes out as X-Self-ID unless zero.
	SelfID int64
	// Authorization is sent verbatim ("Bearer t", "Token t", or "Bearer"
	// with no token, as NapCat does).
	Authorization string
	// Role is X-Client-Role (Universal when empty).
	Role string
	// Client dials pincer; http.DefaultClient when nil.
	Client *http.Client
}

// DialReverse connects to pincer's reverse WebSocket at url and serves
// actions on it until the connection ends or the peer is closed. It
// returns once connected; the peer's Push reaches this connection too.
func (p *Peer) DialReverse(ctx context.Context, url string, o ReverseOptions) error {
	h := http.Header{}
	if o.SelfID != 0 {
		h.Set("X-Self-ID", strconv.FormatInt(o.SelfID, 10))
	}
	if o.Authorization != "" {
		h.Set("Authorization", o.Authorization)
	}
	role := o.Role
	if role == "" {
		role = "Universal"
	}
	h.Set("X-Client-Role", role)
	h.Set("User-Agent", "OneBot/11")
	c, res, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h, HTTPClient: o.Client})
	if err != nil {
		if res != nil {
			return fmt.Errorf("reverse dial: HTTP %d: %w", res.StatusCode, err)
		}
		return fmt.Errorf("reverse dial: %w", err)
	}
	p.wg.Go(func() { p.serveConn(context.WithoutCancel(ctx), c) })
	return nil
}

// PostOptions describe an HTTP POST of an event to pincer.
type PostOptions struct {
	// SelfID goes out as X-Self-ID unless zero.
	SelfID int64
	// Secret signs the raw body as X-Signature: sha1=<hex HMAC-SHA1>.
	Secret string
	// Signature, when set, is sent instead of the computed one.
	Signature string
	// Client posts the event; http.DefaultClient when nil.
	Client *http.Client
}

// Post sends raw, an encoded event, to pincer's HTTP POST receiver at url
// and returns the HTTP status.
func Post(ctx context.Context, url string, raw []byte, o PostOptions) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return 0, fmt.Errorf("post event: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if o.SelfID != 0 {
		req.Header.Set("X-Self-ID", strconv.FormatInt(o.SelfID, 10))
	}
	switch {
	case o.Signature != "":
		req.Header.Set("X-Signature", o.Signature)
	case o.Secret != "":
		mac := hmac.New(sha1.New, []byte(o.Secret))
		mac.Write(raw)
		req.Header.Set("X-Signature", "sha1="+hex.EncodeToString(mac.Sum(nil)))
	}
	client := o.Client
	if client == nil {
		client = http.DefaultClient
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("post event: %w", err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, nil
}
