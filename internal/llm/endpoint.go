package llm

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// Endpoint is how a provider reaches its API.
type Endpoint struct {
	// BaseURL overrides the SDK's default API root.
	BaseURL string
	APIKey  string
	// Timeout bounds one call, streaming included; 0 means none.
	Timeout time.Duration
	// Headers are sent with every request.
	Headers map[string]string
	// HTTPClient replaces the shared client (see Client).
	HTTPClient *http.Client
}

// Client returns the endpoint's HTTP client: its own when it has one,
// else one shared by every provider. Go's default client keeps two idle
// connections per host, so a model server answering more turns at once
// than that made every later turn dial (and, over HTTPS, shake hands)
// again; the shared one keeps up to maxIdlePerHost.
func (e Endpoint) Client() *http.Client {
	if e.HTTPClient != nil {
		return e.HTTPClient
	}
	return sharedClient
}

// maxIdlePerHost is the most idle connections kept to one model server:
// more than the turns that usually run at once (agents.defaults.
// maxConcurrent, 8 by default).
const maxIdlePerHost = 32

// writeBuffer is the size of a model connection's write buffer: a chat
// request (system prompt, tools, history) is several KiB, and with Go's
// default of 4 KiB its body went out in a write of its own after the
// headers, a second system call and TCP segment for every model call.
const writeBuffer = 32 << 10

var sharedClient = &http.Client{Transport: sharedTransport()}

// sharedTransport is the transport of the shared client.
func sharedTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = maxIdlePerHost
	t.WriteBufferSize = writeBuffer
	return t
}

// CallContext returns ctx bounded by the endpoint's timeout.
func (e Endpoint) CallContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if e.Timeout > 0 {
		return context.WithTimeout(ctx, e.Timeout)
	}
	return context.WithCancel(ctx)
}

// KeepAlive is a provider's HTTP middleware step: closing the response's
// body first reads what is left of it. Servers end a streamed body just
// after its last event, and the SDKs close it on that event, before its
// end was read; a body closed early takes its connection with it, so the
// next call had to dial (and shake hands) again. The read gives up after
// drainBytes or drainWait, for a server that keeps talking.
func KeepAlive(res *http.Response, err error) (*http.Response, error) {
	if res != nil && res.Body != nil && res.Body != http.NoBody {
		res.Body = &drainOnClose{ReadCloser: res.Body}
	}
	return res, err
}

const (
	drainBytes = 64 << 10
	drainWait  = 50 * time.Millisecond
)

type drainOnClose struct {
	io.ReadCloser
	once sync.Once
}

func (d *drainOnClose) Close() error {
	d.once.Do(func() {
		t := time.AfterFunc(drainWait, func() { d.ReadCloser.Close() })
		defer t.Stop()
		_, _ = io.CopyN(io.Discard, d.ReadCloser, drainBytes)
	})
	return d.ReadCloser.Close()
}
