package media

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
)

// DefaultMaxBytes is the size limit of one download when none is given.
const DefaultMaxBytes = 20 << 20

// FetchOptions configure a Fetcher.
type FetchOptions struct {
	// AllowPrivate lets the Fetcher connect to non-public addresses (see
	// IsPublic). Only for tests and trusted networks.
	AllowPrivate bool
	// Timeout bounds one request, body included; 0 means 30 s.
	Timeout time.Duration
	// UserAgent is sent with every request; empty means "pincer".
	UserAgent string
	// MaxRedirects is how many redirects a request follows; 0 means 5 and
	// a negative value follows none.
	MaxRedirects int
}

// Fetcher downloads http and https URLs that come from users (attachment
// URLs, links in messages) without letting them reach the host's own
// network: the address of every connection, redirects included, is checked
// after name resolution and non-public ones fail with ErrPrivateAddress.
//
// A Fetcher never uses a proxy from the environment (HTTP_PROXY and the
// like): a proxy would make the connection for it, out of reach of the
// check. A Fetcher is safe for concurrent use.
type Fetcher struct {
	client    *http.Client
	userAgent string
	timeout   time.Duration
	// check judges each dialed address; tests replace it.
	check func(netip.AddrPort) error
}

// NewFetcher returns a Fetcher.
func NewFetcher(o FetchOptions) *Fetcher {
	f := &Fetcher{userAgent: o.UserAgent, timeout: o.Timeout, check: checkPublic}
	if f.userAgent == "" {
		f.userAgent = "pincer"
	}
	if f.timeout <= 0 {
		f.timeout = 30 * time.Second
	}
	if o.AllowPrivate {
		f.check = func(netip.AddrPort) error { return nil }
	}
	maxRedirects := o.MaxRedirects
	if maxRedirects == 0 {
		maxRedirects = 5
	}
	dialer := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		// The indirection lets tests swap check after construction.
		ControlContext: control(func(ap netip.AddrPort) error { return f.check(ap) }),
	}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       60 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	f.client = &http.Client{
		Transport: transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("more than %d redirects", max(maxRedirects, 0))
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to scheme %q", req.URL.Scheme)
			}
			return nil
		},
	}
	return f
}

// StatusError reports a response that was not 2xx.
type StatusError struct {
	// StatusCode is the HTTP status code, Status its text ("404 Not Found").
	StatusCode int
	Status     string
}

func (e *StatusError) Error() string { return "HTTP " + e.Status }

// Get downloads rawURL (http or https only). Content over limit bytes
// (DefaultMaxBytes when limit is not positive) fails with
// channel.ErrTooLarge, at once when Content-Length says so, else after
// reading limit+1 bytes, never more. A status other than 2xx is a
// *StatusError. The Blob's MIME is the Content-Type's media type, or
// sniffed from the content when the server sent none or a generic one;
// its Name is the Content-Disposition file name or the last element of
// the URL's path when that has an extension.
func (f *Fetcher) Get(ctx context.Context, rawURL string, limit int64) (channel.Blob, error) {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	resp, u, err := f.open(ctx, rawURL)
	if err != nil {
		return channel.Blob{}, err
	}
	defer resp.Body.Close()
	if resp.ContentLength > limit {
		return channel.Blob{}, fmt.Errorf("fetch %s: %d bytes: %w", u, resp.ContentLength, channel.ErrTooLarge)
	}
	data, err := readAll(resp.Body, limit, resp.ContentLength)
	if err != nil {
		return channel.Blob{}, fmt.Errorf("fetch %s: %w", u, err)
	}
	b := channel.Blob{Data: data, MIME: mediaType(resp.Header.Get("Content-Type")), Name: fileName(resp)}
	if b.MIME == "" || b.MIME == "application/octet-stream" {
		b.MIME = Sniff(data)
	}
	return b, nil
}

// open sends a GET for rawURL and returns a 2xx response, and the URL
// without query, fragment or user info for error messages (attachment
// URLs carry access keys in their query).
func (f *Fetcher) open(ctx context.Context, rawURL string) (*http.Response, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, "", fmt.Errorf("fetch: bad URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, "", fmt.Errorf("fetch: scheme %q: only http and https", u.Scheme)
	}
	if u.Host == "" {
		return nil, "", errors.New("fetch: URL without host")
	}
	shown := redact(u)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, shown, fmt.Errorf("fetch %s: %w", shown, err)
	}
	req.Header.Set("User-Agent", f.userAgent)
	resp, err := f.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = shown
			return nil, shown, ue
		}
		return nil, shown, fmt.Errorf("fetch %s: %w", shown, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		resp.Body.Close()
		return nil, shown, fmt.Errorf("fetch %s: %w", shown, &StatusError{StatusCode: resp.StatusCode, Status: resp.Status})
	}
	return resp, shown, nil
}

// redact returns u without user info, query or fragment.
func redact(u *url.URL) string {
	v := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return v.String()
}

// readAll reads r to its end, failing with channel.ErrTooLarge after
// limit+1 bytes. size is the expected length (-1 when unknown): a known
// length is read into one allocation.
func readAll(r io.Reader, limit, size int64) ([]byte, error) {
	c := int64(512)
	if size >= 0 {
		c = min(size, limit) + 1
	}
	buf := make([]byte, 0, c)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		room := int64(cap(buf) - len(buf))
		if over := int64(len(buf)) + room - (limit + 1); over > 0 {
			room -= over
		}
		n, err := r.Read(buf[len(buf) : len(buf)+int(room)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, channel.ErrTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// mediaType returns the lower-case media type of a Content-Type value.
func mediaType(contentType string) string {
	if contentType == "" {
		return ""
	}
	t, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		t, _, _ = strings.Cut(contentType, ";")
	}
	return strings.ToLower(strings.TrimSpace(t))
}

// fileName is the Content-Disposition file name of resp, or the last
// element of its URL's path when it has an extension.
func fileName(resp *http.Response) string {
	if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil && params["filename"] != "" {
		return path.Base(strings.ReplaceAll(params["filename"], "\\", "/"))
	}
	if resp.Request != nil && resp.Request.URL != nil {
		if base := path.Base(resp.Request.URL.Path); path.Ext(base) != "" {
			return base
		}
	}
	return ""
}
