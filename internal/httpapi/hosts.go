package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// hosts is the set of host names a listener serves besides the loopback
// ones: localhost, *.localhost (RFC 6761 reserves them for loopback and
// browsers resolve them so themselves, so no DNS answer can point them
// elsewhere) and loopback addresses (127.0.0.0/8, ::1).
type hosts map[string]bool

func newHosts(allowed []string) hosts {
	h := hosts{}
	for _, a := range allowed {
		if n := normalHost(a); n != "" {
			h[n] = true
		}
	}
	return h
}

// normalHost is host (without a port) lower-cased, without IPv6
// brackets or a final dot, and an address in its canonical form.
func normalHost(host string) string {
	host = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap().String()
	}
	return strings.TrimSuffix(host, ".")
}

// serves reports whether a request whose Host header is hostport is for
// this listener. An empty Host (an HTTP/1.0 request) names nothing to
// check; browsers always send one.
func (h hosts) serves(hostport string) bool {
	if hostport == "" {
		return true
	}
	host := hostport
	if hp, _, err := net.SplitHostPort(hostport); err == nil {
		host = hp
	}
	host = normalHost(host)
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || h[host] {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// require refuses, with 421 Misdirected Request, requests for a host
// this listener does not serve: a page on another site whose name was
// rebound to pincer's address reaches pincer with that name as its Host.
func (h hosts) require(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.serves(r.Host) {
			http.Error(w, fmt.Sprintf("misdirected request: pincer does not serve the host %q here; list it in gateway.allowedHosts", r.Host), http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}
