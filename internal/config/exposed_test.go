package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExposedOneBotEndpointsNeedAToken: off loopback, an account that
// serves the reverse WebSocket or event POSTs needs its access token (a
// POST secret will do for POSTs), reported at the account's accessToken.
func TestExposedOneBotEndpointsNeedAToken(t *testing.T) {
	tests := []struct {
		name, listen, onebot string
		want                 []string // whole problem lines
	}{
		{
			name: "reverse WebSocket", listen: "0.0.0.0:18789", onebot: `reverseWs: { enabled: true }`,
			want: []string{"channels.onebot.accessToken: required when reverseWs is enabled and gateway.listen (0.0.0.0:18789) is not loopback"},
		},
		{
			name: "event POST", listen: "[::]:18789", onebot: `httpPost: { enabled: true }`,
			want: []string{"channels.onebot.accessToken: required (or httpPost.secret) when httpPost is enabled and gateway.listen ([::]:18789) is not loopback"},
		},
		{
			name: "both", listen: ":18789", onebot: `reverseWs: { enabled: true }, httpPost: { enabled: true }`,
			want: []string{"channels.onebot.accessToken: required when reverseWs and httpPost are enabled and gateway.listen (:18789) is not loopback"},
		},
		{
			name: "a POST secret does not cover the reverse WebSocket", listen: "192.0.2.7:80",
			onebot: `reverseWs: { enabled: true }, httpPost: { enabled: true, secret: 's' }`,
			want:   []string{"channels.onebot.accessToken: required when reverseWs is enabled and gateway.listen (192.0.2.7:80) is not loopback"},
		},
		{
			name: "named accounts", listen: "0.0.0.0:18789",
			onebot: `accessToken: 'top', reverseWs: { enabled: true }, accounts: {
			  qq2: { reverseWs: { enabled: true } },
			  qq3: { httpPost: { enabled: true, secret: 's' } },
			  qq4: { enabled: false, reverseWs: { enabled: true } },
			  qq5: { wsUrl: 'ws://127.0.0.1:3001' },
			}`,
			want: []string{"channels.onebot.accounts.qq2.accessToken: required when reverseWs is enabled and gateway.listen (0.0.0.0:18789) is not loopback"},
		},
		{name: "with the token", listen: "0.0.0.0:18789", onebot: `accessToken: 't', reverseWs: { enabled: true }, httpPost: { enabled: true }`},
		{name: "POST with a secret", listen: "0.0.0.0:18789", onebot: `httpPost: { enabled: true, secret: 's' }`},
		{name: "forward WebSocket only", listen: "0.0.0.0:18789", onebot: `wsUrl: 'ws://127.0.0.1:3001'`},
		{name: "disabled", listen: "0.0.0.0:18789", onebot: `enabled: false, reverseWs: { enabled: true }`},
		{name: "loopback", listen: "127.0.0.1:18789", onebot: `reverseWs: { enabled: true }, httpPost: { enabled: true }`},
		{name: "localhost", listen: "localhost:18789", onebot: `reverseWs: { enabled: true }`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := `{ gateway: { listen: '` + tt.listen + `', token: 'gw' }, channels: { onebot: { ` + tt.onebot + ` } } }`
			_, err := Parse([]byte(doc), noEnv)
			var got []string
			for _, e := range Problems(err) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExposedCheckRepeatsNoProblem: an access token that could not be
// read, or a listen address that is wrong, is reported once, where it is.
func TestExposedCheckRepeatsNoProblem(t *testing.T) {
	_, err := Parse([]byte(`{ gateway: { listen: '0.0.0.0:18789', token: 'gw' }, channels: { onebot: { accessToken: '${PINCER_TEST_UNSET}', reverseWs: { enabled: true } } } }`), noEnv)
	if diff := cmp.Diff([]string{"channels.onebot.accessToken"}, paths(err)); diff != "" || !strings.Contains(err.Error(), "PINCER_TEST_UNSET") {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
	_, err = Parse([]byte(`{ gateway: { listen: 18789 }, channels: { onebot: { reverseWs: { enabled: true } } } }`), noEnv)
	if diff := cmp.Diff([]string{"gateway.listen"}, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
	_, err = Parse([]byte(`{ gateway: { listen: 'nonsense' }, channels: { onebot: { reverseWs: { enabled: true } } } }`), noEnv)
	if diff := cmp.Diff([]string{"gateway.listen"}, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
}

func TestAllowedHosts(t *testing.T) {
	cfg, err := Parse([]byte(`{ gateway: { allowedHosts: ['pincer.example.com', 'Box', 'pincer.lan.', '192.0.2.7', '[2001:db8::1]', '2001:db8::2', 'my_host'] } }`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Gateway.AllowedHosts) != 7 {
		t.Errorf("allowedHosts = %q", cfg.Gateway.AllowedHosts)
	}
	if Default().Gateway.AllowedHosts != nil {
		t.Error("allowedHosts is empty by default")
	}
	_, err = Parse([]byte(`{ gateway: { allowedHosts: ['ok.example', 'http://x.example', 'x.example:8080', 'x.example/a', '', 'a..b', '*.example'] } }`), noEnv)
	want := []string{"gateway.allowedHosts[1]", "gateway.allowedHosts[2]", "gateway.allowedHosts[3]", "gateway.allowedHosts[4]", "gateway.allowedHosts[5]", "gateway.allowedHosts[6]"}
	if diff := cmp.Diff(want, paths(err)); diff != "" {
		t.Errorf("problem paths (-want +got):\n%s\nerror: %v", diff, err)
	}
	if !strings.Contains(err.Error(), `gateway.allowedHosts[2]: want a host name such as "pincer.example.com" (no scheme, port or path), got "x.example:8080"`) {
		t.Errorf("message: %v", err)
	}
}
