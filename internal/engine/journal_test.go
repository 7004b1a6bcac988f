package engine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pincerbot/pincer/internal/msg"
)

// journalCases are turns of every shape the journal keeps.
func journalCases() map[string]MsgContext {
	at := time.Date(2026, 12, 6, 20, 15, 0, 123_000_000, time.FixedZone("CST", 8*3600))
	group := msg.Message{
		ID: "1001", Channel: "onebot", Account: "default", Peer: msg.Peer{Kind: msg.Group, ID: "700000001"},
		Sender: msg.Sender{ID: "10001", Name: "群友<甲>"}, Time: at,
		Segments: []msg.Segment{{Kind: msg.SegReply, ID: "999"}, {Kind: msg.SegAt, Target: "3300000001", Name: "bot"}, {Kind: msg.SegText, Text: " 今晚几点集合？“东门”见！"}},
		Text:     "@bot 今晚几点集合？“东门”见！", Mentions: []msg.UserID{"3300000001"}, ReplyTo: "999", ReplyToSender: "10002",
	}
	history := NewMsgContext(group)
	history.BodyForAgent = "[群聊历史]\n群友乙: 我八点以后有空 & 你们呢\n群友丙: <不去了>\n\n" + group.Text
	history.Delivery = json.RawMessage("{ \"peer\" : \"700000001\",\n \"quote\": \"<1001>\" }")
	digest := NewMsgContext(msg.Message{ID: "digest:1", Channel: "onebot", Account: "default", Peer: group.Peer, Time: at})
	digest.Body, digest.BodyForAgent, digest.RawBody, digest.CommandBody = "", "写一份摘要", "", ""
	digest.NoCommands, digest.Standalone = true, true
	withMedia := NewMsgContext(msg.Message{ID: "1002", Channel: "feishu", Account: "a", Peer: msg.Peer{Kind: msg.Direct, ID: "ou_1"}, Time: at,
		Segments: []msg.Segment{{Kind: msg.SegImage, URL: "https://example.com/a.png?x=1&y=<2>", ID: "img_1"}}, Text: "[图片]"})
	withMedia.Media = append(withMedia.Media, msg.Attachment{Channel: "feishu", Message: "1002", Segment: msg.Segment{Kind: msg.SegFile, Name: "报告.pdf", ID: "file_1"}})
	return map[string]MsgContext{
		"group @ with a quote and history": history,
		"digest":                           digest,
		"media":                            withMedia,
		"empty":                            {},
		"odd text":                         NewMsgContext(msg.Message{ID: "\"", Text: "bad \xff utf8 \u2028 \x00 <&>", Time: at}),
	}
}

// marshalled is the record as json.Marshal writes a journaled.
func marshalled(mc MsgContext) ([]byte, error) {
	return json.Marshal(journaled{
		Message: mc.Message, Body: mc.Body, BodyForAgent: mc.BodyForAgent, RawBody: mc.RawBody, CommandBody: mc.CommandBody,
		NoCommands: mc.NoCommands, Standalone: mc.Standalone, Delivery: mc.Delivery, Media: mc.Media,
	})
}

// sameRecord fails t unless the two records hold the same JSON value.
func sameRecord(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("the record is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("the record differs from json.Marshal's (-marshal +ours):\n%s\nours: %s", diff, got)
	}
}

// TestJournalRecordIsWhatMarshalWrote: the hand-written record holds the
// value json.Marshal wrote for every shape of turn, and reads back as the
// turn it was.
func TestJournalRecordIsWhatMarshalWrote(t *testing.T) {
	for name, mc := range journalCases() {
		t.Run(name, func(t *testing.T) {
			got, err := encodeTurn(mc)
			if err != nil {
				t.Fatal(err)
			}
			want, err := marshalled(mc)
			if err != nil {
				t.Fatal(err)
			}
			sameRecord(t, got, want)
			back, err := decodeTurn(got)
			if err != nil {
				t.Fatal(err)
			}
			fromMarshal, err := decodeTurn(want)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(fromMarshal, back, cmpopts.IgnoreUnexported(MsgContext{}), cmp.Comparer(compactEqual)); diff != "" {
				t.Errorf("read back (-from json.Marshal's +from ours):\n%s", diff)
			}
		})
	}
}

// compactEqual reports two JSON texts equal but for insignificant space.
func compactEqual(a, b json.RawMessage) bool {
	var x, y any
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && cmp.Equal(x, y)
}

// TestJournalRefusesADeliveryThatIsNotJSON: as json.Marshal did.
func TestJournalRefusesADeliveryThatIsNotJSON(t *testing.T) {
	mc := NewMsgContext(msg.Message{ID: "1", Text: "x"})
	mc.Delivery = json.RawMessage(`{"peer":`)
	if _, err := marshalled(mc); err == nil {
		t.Fatal("json.Marshal took it")
	}
	if b, err := encodeTurn(mc); err == nil {
		t.Errorf("journaled a delivery that is not JSON: %s", b)
	}
}

// FuzzJournalRecord: any texts, ids and delivery make the record
// json.Marshal made, or fail where it failed.
func FuzzJournalRecord(f *testing.F) {
	f.Add("1001", "今晚几点集合？", "[群聊历史]\n<甲> & 乙", "10001", []byte(`{"peer":"1"}`), true)
	f.Add("\"", "bad \xff \u2028", "", "", []byte(" [1, 2] "), false)
	f.Add("", "", "", "", []byte(`{"a":`), false)
	f.Fuzz(func(t *testing.T, id, text, forAgent, sender string, delivery []byte, flags bool) {
		m := msg.Message{ID: msg.MessageID(id), Channel: "onebot", Account: "default", Peer: msg.Peer{Kind: msg.Group, ID: sender},
			Sender: msg.Sender{ID: msg.UserID(sender), Name: forAgent}, Time: time.Unix(1_780_000_000, 0).UTC(),
			Segments: []msg.Segment{{Kind: msg.SegText, Text: text}}, Text: text}
		mc := NewMsgContext(m)
		mc.BodyForAgent, mc.NoCommands, mc.Standalone = forAgent, flags, !flags
		if len(delivery) > 0 {
			mc.Delivery = delivery
		}
		want, werr := marshalled(mc)
		got, gerr := encodeTurn(mc)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("json.Marshal: %v; ours: %v", werr, gerr)
		}
		if werr == nil {
			sameRecord(t, got, want)
		}
	})
}

// BenchmarkJournalRecord journals a group @ with its history, by hand and
// (marshal) as json.Marshal wrote it.
func BenchmarkJournalRecord(b *testing.B) {
	mc := journalCases()["group @ with a quote and history"]
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeTurn(mc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := marshalled(mc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
