package msg

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// FuzzMessageJSON: AppendJSON writes any message, with any of its fields
// set or empty, nil or empty slices, segments of any kind and a forward's
// messages inside, as the very bytes json.Marshal writes for it, and
// what it writes reads back as the message.
func FuzzMessageJSON(f *testing.F) {
	f.Add("1001", "群友<甲>", "今晚几点集合？我八点以后有空，你们呢 & \"好\"", int64(1_780_000_000_123_456_789), uint16(0b1010_1010_1010), "bad \xff", true)
	f.Add("", "", "", int64(0), uint16(0), "", false)
	f.Add("x", "\u2028", "line\nbreak\t", int64(-62135596800_000_000_0), uint16(0xffff), "\x00", true)
	f.Fuzz(func(t *testing.T, id, name, text string, nanos int64, bits uint16, other string, nested bool) {
		bit := func(i int) bool { return bits&(1<<i) != 0 }
		m := Message{
			ID: MessageID(id), Channel: "onebot", Account: AccountID(other), Peer: Peer{Kind: Group, ID: id + "7"},
			Sender: Sender{ID: UserID(id), Name: name, IsBot: bit(0)},
			Time:   time.Unix(0, nanos).In(time.FixedZone("", int(nanos%50400))),
			Text:   text, AtAll: bit(1), ReplyTo: MessageID(other), ReplyToSender: UserID(name), Recalled: bit(2),
		}
		if bit(3) {
			m.Mentions = []UserID{}
			if bit(4) {
				m.Mentions = append(m.Mentions, UserID(id), UserID(name))
			}
		}
		if bit(5) {
			m.ForwardIDs = []ForwardID{ForwardID(other)}
		}
		if bit(6) {
			m.Deferred = []string{}
		}
		if bit(7) {
			m.Segments = []Segment{}
		}
		if bit(8) {
			m.Segments = append(m.Segments, Segment{}, Text(text), Segment{Kind: SegAt, Target: UserID(id), AtAll: bit(9), Name: name},
				Segment{Kind: SegImage, URL: other, ID: id, Type: name})
		}
		if nested {
			inner := m
			inner.Segments = []Segment{Text(name)}
			m.Segments = append(m.Segments, Segment{Kind: SegForward, ID: other, Forward: []Message{inner, {}}})
			if bit(10) {
				m.Segments = append(m.Segments, Segment{Kind: SegForward, Forward: []Message{}})
			}
		}
		want, wantErr := json.Marshal(m)
		got, err := m.AppendJSON([]byte("prefix"))
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("error %v, json.Marshal's %v", err, wantErr)
		}
		if err != nil {
			if string(got) != "prefix" {
				t.Fatalf("on an error the buffer became %q", got)
			}
			return
		}
		if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want) {
			t.Fatalf("AppendJSON:\n%s\njson.Marshal:\n%s", got[min(len(got), len("prefix")):], want)
		}
	})
}

// TestMessageJSONRefusesWhatMarshalRefuses: a time json.Marshal cannot
// write (past the year 9999) is an error, and the buffer is left as it was.
func TestMessageJSONRefusesWhatMarshalRefuses(t *testing.T) {
	m := Message{ID: "1", Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := json.Marshal(m); err == nil {
		t.Fatal("json.Marshal took the year 10000")
	}
	got, err := m.AppendJSON([]byte("keep"))
	if err == nil || string(got) != "keep" {
		t.Errorf("AppendJSON = %q, %v; want the buffer untouched and an error", got, err)
	}
}

// BenchmarkMessageJSON compares AppendJSON with json.Marshal on a chat
// message as pincer logs it.
func BenchmarkMessageJSON(b *testing.B) {
	m := Message{ID: "1000123", Channel: "onebot", Account: "default", Peer: Peer{Kind: Group, ID: "700000123"},
		Sender: Sender{ID: "10001", Name: "群友"}, Time: time.Unix(1_780_000_000, 0),
		Segments: []Segment{Text("今晚几点集合？我八点以后有空，你们呢")}, Text: "今晚几点集合？我八点以后有空，你们呢"}
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = m.AppendJSON(buf[:0])
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(m)
		}
	})
}
