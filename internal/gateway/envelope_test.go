package gateway

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/msg"
)

// TestEnvelopeIsWhatJSONMarshalWrites: the hand-written envelope is byte
// for byte json.Marshal's (an instance of an older version reads it, and
// this one reads theirs), and reads back as it was written.
func TestEnvelopeIsWhatJSONMarshalWrites(t *testing.T) {
	m := msg.Message{ID: "123", Channel: "onebot", Account: "default", Peer: msg.Peer{Kind: msg.Group, ID: "700"},
		Sender: msg.Sender{ID: "10001", Name: "群友<甲>"}, Text: "今晚几点集合？\n\"八点\"", Time: time.Unix(1_780_000_000, 0).UTC()}
	body, err := m.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, self := range []string{"", "3300000001", `odd"self<`} {
		want, err := json.Marshal(envelope{Self: self, At: 1_780_000_000_123, M: body})
		if err != nil {
			t.Fatal(err)
		}
		got := appendEnvelope(nil, self, 1_780_000_000_123, body)
		if !bytes.Equal(got, want) {
			t.Errorf("self %q:\n got %s\nwant %s", self, got, want)
		}
		env, back, err := decodeEnvelope(got)
		if err != nil {
			t.Fatalf("self %q: %v", self, err)
		}
		if env.Self != self || env.At != 1_780_000_000_123 {
			t.Errorf("self %q: read back %+v", self, env)
		}
		if !cmp.Equal(back, m) {
			t.Errorf("self %q: the message read back %+v", self, back)
		}
	}
}

// FuzzDecodeEnvelope holds decodeEnvelope to encoding/json's reading of
// the envelope and then of its message.
func FuzzDecodeEnvelope(f *testing.F) {
	f.Add([]byte(`{"self":"3300000001","at":1780000000123,"m":{"ID":"1","Text":"你好"}}`))
	f.Add([]byte(`{"at":5,"m":{}}`))
	f.Add([]byte(`{"self":"a\"b","at":5,"m":{"ID":"x"}}`))
	f.Add([]byte(`{"at":5,"m":{},"extra":1}`))
	f.Add([]byte(`{"at":-5,"m":{"Text":"}"}}`))
	f.Add([]byte(`{"at":5,"m":{"ID":1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		env, m, err := decodeEnvelope(data)
		var want envelope
		var wantM msg.Message
		werr := json.Unmarshal(data, &want)
		if werr == nil {
			werr = json.Unmarshal(want.M, &wantM)
		}
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: error %v, encoding/json's %v", data, err, werr)
		}
		if err != nil {
			return
		}
		if env.Self != want.Self || env.At != want.At || !cmp.Equal(m, wantM) {
			t.Fatalf("%q: %+v %+v, encoding/json's %+v %+v", data, env, m, want, wantM)
		}
	})
}

// BenchmarkEnvelope encodes a usual QQ message's envelope, as a holder
// publishes it, and decodes it with its message, as the chat's owner
// takes it.
func BenchmarkEnvelope(b *testing.B) {
	m := msg.Message{ID: "123456789", Channel: "onebot", Account: "default", Peer: msg.Peer{Kind: msg.Group, ID: "700000123"},
		Sender: msg.Sender{ID: "10001", Name: "群友甲"}, Text: "今晚几点集合？我八点以后有空，你们呢", Time: time.Unix(1_780_000_000, 0).UTC(),
		Segments: []msg.Segment{msg.Text("今晚几点集合？我八点以后有空，你们呢")}}
	b.ReportAllocs()
	for b.Loop() {
		body, err := m.AppendJSON(nil)
		if err != nil {
			b.Fatal(err)
		}
		data := appendEnvelope(make([]byte, 0, len(body)+64), "3300000001", 1_780_000_000_123, body)
		if _, _, err := decodeEnvelope(data); err != nil {
			b.Fatal(err)
		}
	}
}
