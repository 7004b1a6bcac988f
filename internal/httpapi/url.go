package httpapi

import (
	"net"
	"net/netip"
	"net/url"
)

// OpenURL is the address a person opens in a browser to reach a listener
// on addr (such as "127.0.0.1:18789" or "[::]:18789"). A listener on an
// unspecified address (0.0.0.0, ::, or no host at all) cannot be opened
// as such: the URL names 127.0.0.1 instead, and all reports that the
// listener answers on every interface.
func OpenURL(addr string) (u string, all bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/", false
	}
	if host == "" {
		all = true
	} else if ip, err := netip.ParseAddr(host); err == nil && ip.Unmap().IsUnspecified() {
		all = true
	}
	if all {
		host = "127.0.0.1"
	}
	return (&url.URL{Scheme: "http", Host: net.JoinHostPort(host, port), Path: "/"}).String(), all
}
