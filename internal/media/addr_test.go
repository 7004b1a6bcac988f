package media

import (
	"context"
	"errors"
	"net/netip"
	"testing"
)

func TestIsPublic(t *testing.T) {
	for _, c := range []struct {
		addr   string
		public bool
	}{
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"203.0.113.9", true},
		{"2606:4700:4700::1111", true},
		{"2001:4860:4860::8888", true},
		{"::ffff:8.8.8.8", true},
		{"64:ff9b::808:808", true}, // NAT64 of 8.8.8.8

		{"127.0.0.1", false},
		{"127.1.2.3", false},
		{"::1", false},
		{"10.0.0.1", false},
		{"172.16.5.4", false},
		{"172.31.255.255", false},
		{"192.168.1.1", false},
		{"169.254.169.254", false}, // cloud metadata
		{"169.254.0.1", false},
		{"100.64.0.1", false}, // CGNAT
		{"100.127.255.254", false},
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"255.255.255.255", false},
		{"240.0.0.1", false},
		{"198.18.0.1", false},
		{"::", false},
		{"fc00::1", false},
		{"fd00:ec2::254", false}, // cloud metadata over IPv6
		{"fe80::1", false},
		{"fe80::1%eth0", false},
		{"fec0::1", false},
		{"ff02::1", false},
		{"ff05::2", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.1.2.3", false},
		{"::ffff:169.254.169.254", false},
		{"::ffff:100.64.1.1", false},
		{"::ffff:0.0.0.0", false},
		{"::127.0.0.1", false},     // IPv4-compatible
		{"64:ff9b::7f00:1", false}, // NAT64 of 127.0.0.1
		{"64:ff9b::a9fe:a9fe", false},
		{"64:ff9b:1::a00:1", false},
	} {
		a := netip.MustParseAddr(c.addr)
		if got := IsPublic(a); got != c.public {
			t.Errorf("IsPublic(%s) = %v, want %v", c.addr, got, c.public)
		}
	}
	if IsPublic(netip.Addr{}) {
		t.Error("the zero Addr is public")
	}
}

func TestControlRefusesWhatItCannotParse(t *testing.T) {
	check := control(checkPublic)
	ctx := context.Background()
	if err := check(ctx, "tcp", "not an address", nil); !errors.Is(err, ErrPrivateAddress) {
		t.Errorf("unparsable address: %v", err)
	}
	if err := check(ctx, "tcp4", "10.0.0.1:80", nil); !errors.Is(err, ErrPrivateAddress) {
		t.Errorf("private address: %v", err)
	}
	if err := check(ctx, "tcp6", "[2606:4700:4700::1111]:443", nil); err != nil {
		t.Errorf("public address: %v", err)
	}
}

// TestTrustingAdmitsOnlyTheTrustedHost: a context trusting the platform's
// own host reaches it on any port; every other private address is still
// refused.
func TestTrustingAdmitsOnlyTheTrustedHost(t *testing.T) {
	check := control(checkPublic)
	ctx := Trusting(context.Background(), netip.MustParseAddr("127.0.0.1"), netip.Addr{})
	if err := check(ctx, "tcp4", "127.0.0.1:8080", nil); err != nil {
		t.Errorf("trusted host refused: %v", err)
	}
	if err := check(ctx, "tcp6", "[::ffff:127.0.0.1]:9", nil); err != nil {
		t.Errorf("trusted host, mapped, refused: %v", err)
	}
	for _, addr := range []string{"127.0.0.2:80", "10.0.0.1:80", "169.254.169.254:80", "[::1]:80"} {
		if err := check(ctx, "tcp", addr, nil); !errors.Is(err, ErrPrivateAddress) {
			t.Errorf("%s: %v, want refused", addr, err)
		}
	}
	if Trusting(context.Background()) != context.Background() {
		t.Error("trusting nothing must keep the context")
	}
}
