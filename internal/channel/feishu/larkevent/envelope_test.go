package larkevent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeEnvelopeSchema2(t *testing.T) {
	env, err := DecodeEnvelope([]byte(sampleReceive))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(env.Event) || !strings.Contains(string(env.Event), `"om_dc13264520392913993dd051dba21dcf"`) {
		t.Errorf("Event = %s", env.Event)
	}
	env.Event = nil
	want := Envelope{
		Schema:     Schema2,
		EventID:    "7f3c0e5a9b1d4c2e8a6f0b3d5e7c9a1b",
		EventType:  EventMessageReceive,
		CreateTime: 1760000000456,
		Token:      sampleToken,
		AppID:      "cli_a5f0c3e2d1b0a9f8",
		TenantKey:  "2ca1d211f64f6438",
	}
	if d := cmp.Diff(want, env); d != "" {
		t.Errorf("envelope (-want +got):\n%s", d)
	}
}

func TestDecodeEnvelopeV1(t *testing.T) {
	env, err := DecodeEnvelope([]byte(sampleV1))
	if err != nil {
		t.Fatal(err)
	}
	env.Event = nil
	want := Envelope{
		Schema:     Schema1,
		EventID:    "bc447199585340d1f3728d26b1c0297a",
		EventType:  "p2p_chat_create",
		CreateTime: 1502199207717,
		Token:      sampleToken,
		AppID:      "cli_9e28cb7ba56a100e",
		TenantKey:  "736588c9260f175e",
	}
	if d := cmp.Diff(want, env); d != "" {
		t.Errorf("envelope (-want +got):\n%s", d)
	}
}

func TestDecodeEnvelopeEventIsACopy(t *testing.T) {
	in := []byte(sampleReceive)
	env, err := DecodeEnvelope(in)
	if err != nil {
		t.Fatal(err)
	}
	before := string(env.Event)
	for i := range in {
		in[i] = ' '
	}
	if string(env.Event) != before {
		t.Fatal("Event shares memory with the input")
	}
}

func TestDecodeEnvelopeTimes(t *testing.T) {
	for _, c := range []struct {
		body string
		want int64
	}{
		{`{"schema":"2.0","header":{"event_id":"e","event_type":"t"},"event":{}}`, 0},
		{`{"schema":"2.0","header":{"event_id":"e","event_type":"t","create_time":""},"event":{}}`, 0},
		{`{"schema":"2.0","header":{"event_id":"e","event_type":"t","create_time":null},"event":{}}`, 0},
		{`{"schema":"2.0","header":{"event_id":"e","event_type":"t","create_time":1760000000456},"event":{}}`, 1760000000456},
		{`{"uuid":"u","type":"event_callback","event":{"type":"t"}}`, 0},
		{`{"uuid":"u","type":"event_callback","ts":"1502199207","event":{"type":"t"}}`, 1502199207000},
		{`{"uuid":"u","type":"event_callback","ts":"1502199207.5","event":{"type":"t"}}`, 1502199207500},
		{`{"uuid":"u","type":"event_callback","ts":"1502199207.05","event":{"type":"t"}}`, 1502199207050},
		{`{"uuid":"u","type":"event_callback","ts":1502199207.999999,"event":{"type":"t"}}`, 1502199207999},
	} {
		env, err := DecodeEnvelope([]byte(c.body))
		if err != nil || env.CreateTime != c.want {
			t.Errorf("%s: CreateTime = %d, %v; want %d", c.body, env.CreateTime, err, c.want)
		}
	}
}

func TestDecodeEnvelopeErrors(t *testing.T) {
	for name, body := range map[string]string{
		"empty":               ``,
		"not JSON":            `hello`,
		"array":               `[]`,
		"null":                `null`,
		"empty object":        `{}`,
		"encrypted":           `{"encrypt":"abc"}`,
		"challenge":           sampleChallenge,
		"unknown schema":      `{"schema":"3.0","header":{"event_id":"e","event_type":"t"},"event":{}}`,
		"unknown type":        `{"uuid":"u","type":"event_push","event":{"type":"t"}}`,
		"no header":           `{"schema":"2.0","event":{}}`,
		"header not object":   `{"schema":"2.0","header":"h","event":{}}`,
		"no event_id":         `{"schema":"2.0","header":{"event_type":"t"},"event":{}}`,
		"no event_type":       `{"schema":"2.0","header":{"event_id":"e"},"event":{}}`,
		"no event":            `{"schema":"2.0","header":{"event_id":"e","event_type":"t"}}`,
		"null event":          `{"schema":"2.0","header":{"event_id":"e","event_type":"t"},"event":null}`,
		"event not object":    `{"schema":"2.0","header":{"event_id":"e","event_type":"t"},"event":[1]}`,
		"create_time letters": `{"schema":"2.0","header":{"event_id":"e","event_type":"t","create_time":"soon"},"event":{}}`,
		"create_time signed":  `{"schema":"2.0","header":{"event_id":"e","event_type":"t","create_time":"-5"},"event":{}}`,
		"create_time float":   `{"schema":"2.0","header":{"event_id":"e","event_type":"t","create_time":1.5},"event":{}}`,
		"create_time huge":    `{"schema":"2.0","header":{"event_id":"e","event_type":"t","create_time":"99999999999999999999"},"event":{}}`,
		"token not string":    `{"schema":"2.0","header":{"event_id":"e","event_type":"t","token":5},"event":{}}`,
		"v1 no uuid":          `{"type":"event_callback","event":{"type":"t"}}`,
		"v1 no event type":    `{"uuid":"u","type":"event_callback","event":{}}`,
		"v1 event type bad":   `{"uuid":"u","type":"event_callback","event":{"type":7}}`,
		"v1 no event":         `{"uuid":"u","type":"event_callback"}`,
		"v1 ts letters":       `{"uuid":"u","type":"event_callback","ts":"now","event":{"type":"t"}}`,
		"v1 ts two dots":      `{"uuid":"u","type":"event_callback","ts":"1.2.3","event":{"type":"t"}}`,
		"v1 ts bare dot":      `{"uuid":"u","type":"event_callback","ts":"1.","event":{"type":"t"}}`,
		"v1 ts exponent":      `{"uuid":"u","type":"event_callback","ts":1e9,"event":{"type":"t"}}`,
		"v1 ts huge":          `{"uuid":"u","type":"event_callback","ts":"9223372036854775807","event":{"type":"t"}}`,
		"trailing garbage":    sampleReceive + `x`,
	} {
		if env, err := DecodeEnvelope([]byte(body)); err == nil {
			t.Errorf("%s: DecodeEnvelope = %+v, want an error", name, env)
		}
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range []string{sampleReceive, sampleRecalled, sampleV1, sampleChallenge, `{"encrypt":"x"}`,
		`{"uuid":"u","type":"event_callback","ts":"1.5","event":{"type":"t"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, plain []byte) {
		env, err := DecodeEnvelope(plain)
		if err != nil {
			return
		}
		if env.EventID == "" || env.EventType == "" || env.CreateTime < 0 {
			t.Fatalf("decoded %+v", env)
		}
		if env.Schema != Schema1 && env.Schema != Schema2 {
			t.Fatalf("schema %q", env.Schema)
		}
		if !json.Valid(env.Event) || !isObject(env.Event) {
			t.Fatalf("event %q", env.Event)
		}
		// Whatever the event, the decoders answer without panicking.
		DecodeMessageReceive(env)
		DecodeMessageRecalled(env)
	})
}
