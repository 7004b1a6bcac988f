package media

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
)

func TestGetRefusesLoopbackByDefault(t *testing.T) {
	var hits atomic.Int32
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	port := strconv.Itoa(int(netip.MustParseAddrPort(srv.Listener.Addr().String()).Port()))
	f := NewFetcher(FetchOptions{})
	for _, u := range []string{srv.URL + "/a.png?rkey=secret", "http://localhost:" + port + "/a.png"} {
		_, err := f.Get(context.Background(), u, 1<<20)
		if !errors.Is(err, ErrPrivateAddress) {
			t.Fatalf("Get(%s) = %v, want ErrPrivateAddress", u, err)
		}
		var ue *url.Error
		if !errors.As(err, &ue) {
			t.Errorf("Get(%s): %T is not a *url.Error", u, err)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("the error shows the query: %v", err)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("the server was reached %d times", hits.Load())
	}
}

func TestGetAllowPrivate(t *testing.T) {
	body := pngBytes(t, 1)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("User-Agent") != "pincer-test" {
			t.Errorf("User-Agent %q", r.Header.Get("User-Agent"))
		}
		w.Header().Set("Content-Type", "image/png; charset=binary")
		w.Header().Set("Content-Disposition", `attachment; filename="cat.png"`)
		w.Write(body)
	})
	f := NewFetcher(FetchOptions{AllowPrivate: true, UserAgent: "pincer-test"})
	b, err := f.Get(context.Background(), srv.URL+"/x", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Data, body) || b.MIME != "image/png" || b.Name != "cat.png" {
		t.Errorf("got %d bytes, MIME %q, Name %q", len(b.Data), b.MIME, b.Name)
	}
}

func TestGetSniffsGenericTypesAndNamesByPath(t *testing.T) {
	body := []byte("#!SILK_V3 voice")
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(body)
	})
	f := NewFetcher(FetchOptions{AllowPrivate: true})
	b, err := f.Get(context.Background(), srv.URL+"/dir/v.silk?x=1", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if b.MIME != "audio/silk" || b.Name != "v.silk" {
		t.Errorf("MIME %q, Name %q", b.MIME, b.Name)
	}
}

func TestGetRefusesRedirectToPrivateAddress(t *testing.T) {
	var hits atomic.Int32
	private := serve(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	public := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, private.URL+"/metadata", http.StatusFound)
	})
	publicPort := netip.MustParseAddrPort(public.Listener.Addr().String()).Port()
	f := NewFetcher(FetchOptions{})
	// The public server stands for an address on the internet.
	f.check = func(ap netip.AddrPort) error {
		if ap.Port() == publicPort {
			return nil
		}
		return checkPublic(ap)
	}
	_, err := f.Get(context.Background(), public.URL+"/start", 1<<20)
	if !errors.Is(err, ErrPrivateAddress) {
		t.Fatalf("got %v, want ErrPrivateAddress", err)
	}
	if hits.Load() != 0 {
		t.Error("the private server was reached")
	}
}

func TestGetFollowsRedirectsUpToTheLimit(t *testing.T) {
	var base string
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		if n < 3 {
			http.Redirect(w, r, base+"/"+strconv.Itoa(n+1), http.StatusFound)
			return
		}
		io.WriteString(w, "end")
	})
	base = srv.URL
	if _, err := NewFetcher(FetchOptions{AllowPrivate: true, MaxRedirects: 3}).Get(context.Background(), base+"/0", 100); err != nil {
		t.Errorf("3 redirects with MaxRedirects 3: %v", err)
	}
	if _, err := NewFetcher(FetchOptions{AllowPrivate: true, MaxRedirects: 2}).Get(context.Background(), base+"/0", 100); err == nil {
		t.Error("3 redirects with MaxRedirects 2 succeeded")
	}
	if _, err := NewFetcher(FetchOptions{AllowPrivate: true, MaxRedirects: -1}).Get(context.Background(), base+"/2", 100); err == nil {
		t.Error("a redirect with MaxRedirects -1 succeeded")
	}
}

func TestGetTooLarge(t *testing.T) {
	const limit = 1000
	big := bytes.Repeat([]byte("x"), 5*limit)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			// Flushing first sends no Content-Length.
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
		} else {
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
		}
		w.Write(big)
	})
	f := NewFetcher(FetchOptions{AllowPrivate: true})
	for _, p := range []string{"/sized", "/chunked"} {
		if _, err := f.Get(context.Background(), srv.URL+p, limit); !errors.Is(err, channel.ErrTooLarge) {
			t.Errorf("%s: got %v, want ErrTooLarge", p, err)
		}
	}
	// Exactly the limit is fine.
	srv2 := serve(t, func(w http.ResponseWriter, r *http.Request) { w.Write(big[:limit]) })
	if b, err := f.Get(context.Background(), srv2.URL, limit); err != nil || len(b.Data) != limit {
		t.Errorf("at the limit: %d bytes, %v", len(b.Data), err)
	}
}

// endless serves x forever, counting what was read.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.n += int64(len(p))
	return len(p), nil
}

func TestReadAllReadsAtMostLimitPlusOne(t *testing.T) {
	for _, size := range []int64{-1, 10, 100000} {
		r := &endless{}
		if _, err := readAll(r, 4097, size); !errors.Is(err, channel.ErrTooLarge) {
			t.Fatalf("size %d: %v", size, err)
		}
		if r.n > 4098 {
			t.Errorf("size hint %d: read %d bytes for a limit of 4097", size, r.n)
		}
	}
	data, err := readAll(strings.NewReader("hello"), 5, 5)
	if err != nil || string(data) != "hello" {
		t.Errorf("got %q, %v", data, err)
	}
}

func TestGetStatus(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusForbidden) })
	_, err := NewFetcher(FetchOptions{AllowPrivate: true}).Get(context.Background(), srv.URL+"/a?rkey=secret", 100)
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusForbidden {
		t.Fatalf("got %v, want a 403 StatusError", err)
	}
	if !strings.Contains(err.Error(), "403") || strings.Contains(err.Error(), "secret") {
		t.Errorf("error %q", err)
	}
}

func TestGetRefusesOtherSchemes(t *testing.T) {
	f := NewFetcher(FetchOptions{AllowPrivate: true})
	for _, u := range []string{"file:///etc/passwd", "ftp://example.com/x", "gopher://x", "http:///nohost", "::"} {
		if _, err := f.Get(context.Background(), u, 100); err == nil {
			t.Errorf("Get(%q) succeeded", u)
		}
	}
}

// blocking serves nothing until the request is gone.
func blocking(t *testing.T) string {
	release := make(chan struct{})
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	return srv.URL
}

func TestGetHonoursContext(t *testing.T) {
	u := blocking(t)
	f := NewFetcher(FetchOptions{AllowPrivate: true})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := f.Get(ctx, u, 100)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	select {
	case <-ctx.Done():
	default:
		t.Error("Get returned before its context ended")
	}
}

func TestGetHonoursTimeout(t *testing.T) {
	u := blocking(t)
	f := NewFetcher(FetchOptions{AllowPrivate: true, Timeout: 50 * time.Millisecond})
	if _, err := f.Get(context.Background(), u, 100); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
}

// TestGetTrustingTheHost: a loopback server refused by default is reached
// under a context that trusts its address.
func TestGetTrustingTheHost(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	f := NewFetcher(FetchOptions{})
	if _, err := f.Get(context.Background(), srv.URL, 10); !errors.Is(err, ErrPrivateAddress) {
		t.Fatalf("untrusted loopback: %v", err)
	}
	b, err := f.Get(Trusting(context.Background(), netip.MustParseAddr("127.0.0.1")), srv.URL, 10)
	if err != nil || string(b.Data) != "ok" {
		t.Fatalf("trusted loopback: %q %v", b.Data, err)
	}
}
