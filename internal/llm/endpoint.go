package llm

import (
	"context"
	"net/http"
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
	// HTTPClient replaces the SDK's default HTTP client.
	HTTPClient *http.Client
}

// CallContext returns ctx bounded by the endpoint's timeout.
func (e Endpoint) CallContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if e.Timeout > 0 {
		return context.WithTimeout(ctx, e.Timeout)
	}
	return context.WithCancel(ctx)
}
