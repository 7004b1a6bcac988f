package media

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"syscall"
)

// ErrPrivateAddress reports a connection to an address that is not on the
// public internet (loopback, private, link-local, CGNAT, multicast and the
// like), which a Fetcher refuses unless FetchOptions.AllowPrivate is set.
var ErrPrivateAddress = errors.New("address is not public")

// nonPublic lists the ranges refused besides those netip classifies
// (loopback, private, link-local, multicast, unspecified).
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),     // "this network"
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),  // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),   // reserved, broadcast
	netip.MustParsePrefix("fec0::/10"),     // deprecated site-local
}

// Prefixes of IPv6 addresses that carry an IPv4 address in their low 32
// bits; the embedded address is judged instead.
var (
	ipv4Compatible = netip.MustParsePrefix("::/96")
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local     = netip.MustParsePrefix("64:ff9b:1::/48")
)

// IsPublic reports whether a is an address a Fetcher may connect to without
// AllowPrivate: not loopback, private (RFC 1918, fc00::/7), link-local
// (169.254.0.0/16 with the cloud metadata service, fe80::/10),
// unspecified, multicast, carrier-grade NAT (100.64.0.0/10) or reserved,
// nor an IPv4-mapped, IPv4-compatible or NAT64 form of one of them.
func IsPublic(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	a = a.WithZone("").Unmap()
	if a.Is6() && (ipv4Compatible.Contains(a) || nat64.Contains(a) || nat64Local.Contains(a)) {
		if a.IsUnspecified() || a.IsLoopback() {
			return false
		}
		b := a.As16()
		return IsPublic(netip.AddrFrom4([4]byte(b[12:])))
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsUnspecified() ||
		a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// checkPublic refuses a dialed "ip:port" that is not public.
func checkPublic(ap netip.AddrPort) error {
	if !IsPublic(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrPrivateAddress, ap.Addr())
	}
	return nil
}

// control is a net.Dialer Control func: it sees the resolved address of
// every connection just before it is made, after DNS, so redirects and
// rebinding answers are judged like the first request.
func control(check func(netip.AddrPort) error) func(ctx context.Context, network, address string, _ syscall.RawConn) error {
	return func(ctx context.Context, network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: unparsable address %q", ErrPrivateAddress, address)
		}
		if trusted, _ := ctx.Value(trustKey{}).([]netip.Addr); slices.Contains(trusted, ap.Addr().Unmap()) {
			return nil
		}
		return check(ap)
	}
}

// trustKey keys the addresses a context trusts (see Trusting).
type trustKey struct{}

// Trusting returns a context under which a Fetcher may also connect to
// addrs, whatever their kind: the host of a chat platform's own server
// (a OneBot implementation on this machine serving the files of the
// messages it delivered), which is not a user's choice. Every other
// non-public address stays refused.
func Trusting(ctx context.Context, addrs ...netip.Addr) context.Context {
	trusted := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if a.IsValid() {
			trusted = append(trusted, a.Unmap())
		}
	}
	if len(trusted) == 0 {
		return ctx
	}
	return context.WithValue(ctx, trustKey{}, trusted)
}
