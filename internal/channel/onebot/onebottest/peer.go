// Package onebottest starts OneBot v11 implementations for tests: the
// peer of package onebotsim on a loopback port that closes with the test,
// or on an in-memory network for tests in synctest bubbles.
package onebottest

import (
	"context"
	"net"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebotsim"
)

// Handler answers one action: data on success, or a non-zero retcode and
// a message on failure.
type Handler = onebotsim.Handler

// Call is one action the peer received.
type Call = onebotsim.Call

// Peer is an in-process OneBot implementation; see onebotsim.Peer.
type Peer = onebotsim.Peer

// Message is a message a peer was asked to send; see onebotsim.Message.
type Message = onebotsim.Message

// Segment is one segment of a sent message.
type Segment = onebotsim.Segment

// Upload is a file a peer was asked to upload.
type Upload = onebotsim.Upload

// File is a file a peer hands out through get_image, get_record and
// get_file; see onebotsim.File.
type File = onebotsim.File

// ReverseOptions describe how a peer dials pincer's reverse WebSocket.
type ReverseOptions = onebotsim.ReverseOptions

// PostOptions describe an HTTP POST of an event to pincer.
type PostOptions = onebotsim.PostOptions

// Post sends raw, an encoded event, to pincer's HTTP POST receiver at url
// and returns the HTTP status.
func Post(ctx context.Context, url string, raw []byte, o PostOptions) (int, error) {
	return onebotsim.Post(ctx, url, raw, o)
}

// Serve starts a peer on ln. Stop it with Close.
func Serve(ln net.Listener, h Handler) *Peer { return onebotsim.Serve(ln, h) }

// New starts a peer on a loopback port, answering with h. It is stopped
// when the test ends.
func New(t testing.TB, h Handler) *Peer {
	p := onebotsim.New(h)
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(func() {
		p.DropAll()
		srv.Close()
	})
	p.URL = "ws" + strings.TrimPrefix(srv.URL, "http")
	p.HTTPURL = srv.URL
	return p
}

// NewOnPipe starts a peer on an in-memory network at host, for tests in
// synctest bubbles. Stop it with Close before the bubble ends.
func NewOnPipe(n *PipeNet, host string, h Handler) *Peer {
	return onebotsim.Serve(n.Listen(host), h)
}
