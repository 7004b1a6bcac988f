package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPprofIsOffByDefault(t *testing.T) {
	if Default().Gateway.Pprof {
		t.Error("gateway.pprof is on by default")
	}
	cfg, err := Parse([]byte(`{}`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Gateway.Pprof {
		t.Error("gateway.pprof is on in an empty file")
	}
}

// TestPprofNeedsTheGatewayToken: the profiles are never served on a
// listener without the token, so the key alone is refused, naming itself
// and the fix.
func TestPprofNeedsTheGatewayToken(t *testing.T) {
	_, err := Parse([]byte(`{ gateway: { pprof: true } }`), noEnv)
	if diff := cmp.Diff([]string{"gateway.pprof"}, paths(err)); diff != "" {
		t.Fatalf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "gateway.pprof: requires gateway.token") || !strings.Contains(msg, "set gateway.token") {
		t.Errorf("message: %v", err)
	}

	cfg, err := Parse([]byte(`{ gateway: { pprof: true, token: 'gw' } }`), noEnv)
	if err != nil {
		t.Fatalf("with the token: %v", err)
	}
	if !cfg.Gateway.Pprof {
		t.Error("gateway.pprof was not read")
	}
	cfg, err = Parse([]byte(`{ gateway: { pprof: true, token: '${GW}' } }`), envOf(map[string]string{"GW": "gw"}))
	if err != nil || cfg.Gateway.Token.Value() != "gw" {
		t.Fatalf("with the token from the environment: %v", err)
	}
}

// TestPprofRepeatsNoProblem: a token that could not be read is reported
// where it is, not again as the profiles' missing token.
func TestPprofRepeatsNoProblem(t *testing.T) {
	_, err := Parse([]byte(`{ gateway: { pprof: true, token: '${PINCER_TEST_UNSET}' } }`), noEnv)
	if diff := cmp.Diff([]string{"gateway.token"}, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
}
