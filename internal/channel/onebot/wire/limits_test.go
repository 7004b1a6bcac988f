package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/msg"
)

// textChars counts the characters of a message's text segments.
func textChars(m msg.Message) int {
	n := 0
	for _, s := range m.Segments {
		if s.Kind == msg.SegText {
			n += utf8.RuneCountInString(s.Text)
		}
	}
	return n
}

// TestHugeMessageIsCut: a 16 MiB text, in every form a message can take,
// reaches the agent as its first maxChars characters and the marker; the
// text segments are cut as well.
func TestHugeMessageIsCut(t *testing.T) {
	text := hugeText(16 << 20)
	base := func() map[string]any {
		ev := groupEvent(1, 10001, "")
		delete(ev, "message")
		return ev
	}
	segments := base()
	segments["message"] = []any{
		map[string]any{"type": "at", "data": map[string]any{"qq": "3300000001"}},
		map[string]any{"type": "text", "data": map[string]any{"text": " " + text}},
		map[string]any{"type": "at", "data": map[string]any{"qq": "10002"}},
	}
	segments["raw_message"] = "[CQ:at,qq=3300000001] " + EscapeText(text)
	single := base()
	single["message"] = map[string]any{"type": "text", "data": map[string]any{"text": text}}
	cq := base()
	cq["message"] = "[CQ:at,qq=3300000001] " + EscapeText(text)
	rawOnly := base()
	rawOnly["message"] = []any{}
	rawOnly["raw_message"] = "[CQ:at,qq=3300000001] " + EscapeText(text)
	forms := map[string]map[string]any{"segments": segments, "one segment": single, "CQ string": cq, "raw_message only": rawOnly}
	for name, ev := range forms {
		frame, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{0, 100} {
			want := limit
			if want == 0 {
				want = DefaultMaxChars
			}
			decoded, err := DecodeEvent(frame)
			if err != nil {
				t.Fatal(err)
			}
			classified, _ := Classify(frame)
			for how, ev := range map[string]*Event{"DecodeEvent": &decoded, "Classify": classified} {
				m, err := ev.Normalize(msg.DefaultAccount, 3300000001, limit)
				if err != nil {
					t.Fatalf("%s, %s: %v", name, how, err)
				}
				if n := utf8.RuneCountInString(m.Text); n > want+utf8.RuneCountInString(TruncatedMarker) || !strings.HasSuffix(m.Text, TruncatedMarker) {
					t.Errorf("%s, %s, maxChars %d: %d characters, ending %q", name, how, limit, n, m.Text[max(0, len(m.Text)-40):])
				}
				if n := textChars(m); n > want {
					t.Errorf("%s, %s, maxChars %d: text segments hold %d characters", name, how, limit, n)
				}
				if !strings.HasPrefix(text, strings.TrimSuffix(strings.TrimPrefix(m.Text, "@3300000001 "), TruncatedMarker)) {
					t.Errorf("%s, %s: the text kept is not the start of the message: %.60q", name, how, m.Text)
				}
				if name != "one segment" && !m.Mentioned("3300000001") {
					t.Errorf("%s, %s: the mention before the cut is lost", name, how)
				}
				if m.Mentioned("10002") {
					t.Errorf("%s, %s: a mention after the cut survived", name, how)
				}
			}
		}
	}
}

// TestShortMessagesAreNotCut: a message of exactly maxChars characters is
// whole; one more character cuts it; a placeholder that does not fit is
// dropped.
func TestShortMessagesAreNotCut(t *testing.T) {
	tests := []struct {
		message string
		limit   int
		want    string
	}{
		{`[{"type":"text","data":{"text":"一二三"}}]`, 3, "一二三"},
		{`[{"type":"text","data":{"text":"一二三四"}}]`, 3, "一二三" + TruncatedMarker},
		{`[{"type":"text","data":{"text":"a\nb\"c"}}]`, 3, "a\nb" + TruncatedMarker},
		{`[{"type":"text","data":{"text":"\ud83d\ude00\ud83d\ude01x"}}]`, 2, "😀😁" + TruncatedMarker},
		{`[{"type":"text","data":{"text":"ab"}},{"type":"face","data":{"id":"1"}}]`, 4, "ab" + TruncatedMarker},
		{`[{"type":"text","data":{"text":"ab"}},{"type":"face","data":{"id":"1"}}]`, 6, "ab[表情]"},
		{`"ab&#91;cd[CQ:face,id=1]"`, 5, "ab[cd" + TruncatedMarker},
		{`[{"type":"text","data":{"text":42}}]`, 1, "4" + TruncatedMarker},
	}
	for _, tt := range tests {
		ev := event(t, `{"post_type":"message","message_type":"private","user_id":5,"message":`+tt.message+`}`)
		m, err := ev.Normalize(msg.DefaultAccount, 9, tt.limit)
		if err != nil || m.Text != tt.want {
			t.Errorf("%s, maxChars %d: %q %v, want %q", tt.message, tt.limit, m.Text, err, tt.want)
		}
	}
}

// TestNormalizedMessageHoldsNoFrameMemory: nothing of a message refers to
// the memory its frame was decoded into (a short name would otherwise keep
// a 16 MiB buffer alive for as long as the message is buffered).
func TestNormalizedMessageHoldsNoFrameMemory(t *testing.T) {
	_, live := allocated(func() any {
		ev, _ := Classify(hugeFrame(t, 16<<20))
		m, err := ev.ToMessage(msg.DefaultAccount, 3300000001)
		if err != nil {
			t.Fatal(err)
		}
		return m
	})
	if live > 1<<20 {
		t.Errorf("a normalized 16 MiB message keeps %d KiB alive", live>>10)
	}
}

// reference is what normalizing was before messages were cut: the whole
// message field parsed, raw_message when that gave nothing.
func reference(ev Event, self ID) (msg.Message, error) {
	m, err := ev.Normalize(msg.DefaultAccount, self, 1) // the envelope only
	if err != nil {
		return m, err
	}
	m.Segments, m.Mentions, m.ForwardIDs, m.ReplyTo, m.AtAll, m.Text = nil, nil, nil, "", false, ""
	segs, err := parseMessage(ev.Message, false)
	if ev.decoded {
		segs, err = ev.segs, nil
	}
	if err != nil || (len(segs) == 0 && ev.raw() != "") {
		segs = parseCQ(ev.raw())
	}
	fill(&m, segs, 0, self)
	return m, nil
}

// FuzzNormalize: a message that fits is normalized as the whole message
// was before, from a small frame and from a large one, and read a segment
// at a time as a large message is; one that does not fit keeps the start
// of that text, within the limit.
func FuzzNormalize(f *testing.F) {
	f.Add(`[{"type":"text","data":{"text":"hi"}},{"type":"at","data":{"qq":123}}]`, "", uint8(3))
	f.Add(`[{"type":"reply","data":{"id":"-5"}},{"type":"at","data":{"qq":"3300000001"}},{"type":"text","data":{"text":" q\u00e9\ud83d\ude00"}}]`, "", uint8(2))
	f.Add(`{"type":"text","data":{"text":"one","text":"two"}}`, "", uint8(10))
	f.Add(`[{"TYPE":"text","Data":{"te\u0078t":"x"}},{"type":"text","data":{"text":"a"},"data":{"x":1}},1,"s"]`, "", uint8(1))
	f.Add(`"hi[CQ:at,qq=123]x&amp;"`, "", uint8(4))
	f.Add(`[]`, "from [CQ:face,id=1] raw", uint8(6))
	f.Add(`[{"type":"forward","data":{"id":"x","content":[{"message":"inner"}]}}]`, "", uint8(0))
	f.Fuzz(func(t *testing.T, message, raw string, limit uint8) {
		if !json.Valid([]byte(message)) {
			return
		}
		small := `{"post_type":"message","message_type":"group","group_id":1,"user_id":5,"raw_message":` + string(mustQuote(raw)) + `,"message":` + message + `}`
		ev, _ := Classify([]byte(small))
		if ev == nil {
			return
		}
		want, err := reference(*ev, 3300000001)
		if err != nil {
			return
		}
		streamed := want
		streamed.Segments, streamed.Mentions, streamed.ForwardIDs, streamed.ReplyTo, streamed.AtAll = nil, nil, nil, "", false
		if segs, err := streamSegments(json.RawMessage(message)); err == nil {
			if fillFrom(&streamed, &segs, 0, 3300000001, DefaultMaxChars, false) > 0 || ev.raw() == "" {
				for i := range want.Segments {
					// encoding/json reads bytes that are not UTF-8 as U+FFFD,
					// where the fast decoder keeps them.
					want.Segments[i].Type = string([]rune(want.Segments[i].Type))
				}
				if diff := cmp.Diff(want, streamed); diff != "" {
					t.Fatalf("read a segment at a time (-whole +streamed):\n%s", diff)
				}
			}
		}
		want, _ = reference(*ev, 3300000001)
		large := strings.Replace(small, `{`, `{"pad":"`+strings.Repeat("x", largeFrame)+`",`, 1)
		big, _ := Classify([]byte(large))
		for name, ev := range map[string]*Event{"small frame": ev, "large frame": big} {
			got, err := ev.Normalize(msg.DefaultAccount, 3300000001, 0)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("%s (-before +now):\n%s", name, diff)
			}
			cut, err := ev.Normalize(msg.DefaultAccount, 3300000001, int(limit)+1)
			if err != nil {
				t.Fatal(err)
			}
			if n := utf8.RuneCountInString(cut.Text); n > int(limit)+1+utf8.RuneCountInString(TruncatedMarker) {
				t.Fatalf("%s: %d characters of %q kept, limit %d", name, n, want.Text, int(limit)+1)
			}
			if cut.Text != want.Text && !strings.HasPrefix(want.Text, strings.TrimSuffix(cut.Text, TruncatedMarker)) {
				t.Fatalf("%s: cut to %q, not the start of %q", name, cut.Text, want.Text)
			}
		}
	})
}

func mustQuote(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// FuzzTextPrefix: the first n characters of a JSON string, decoded alone,
// are the first n characters of the whole string decoded.
func FuzzTextPrefix(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\nb\"c\\"`, `"\ud83d\ude00x"`, `"\ud800\u0041"`, `"\uDBFF\uDFFF"`, "\"\xff\xfeok\"", `"é中"`, `""`} {
		f.Add(s, uint8(1))
	}
	f.Fuzz(func(t *testing.T, raw string, n uint8) {
		var full string
		if !strings.HasPrefix(raw, `"`) || json.Unmarshal([]byte(raw), &full) != nil {
			return
		}
		got, cut := textPrefix(Segment{Data: Fields{{Key: "text", Value: json.RawMessage(raw)}}}, int(n))
		if want := cutChars(full, int(n)); got != want {
			t.Fatalf("first %d characters of %s: %q, want %q", n, raw, got, want)
		}
		if want := utf8.RuneCountInString(full) > int(n); cut != want {
			t.Fatalf("%s cut at %d: %v, want %v", raw, n, cut, want)
		}
	})
}

// FuzzScan: on valid JSON, members and elements see what encoding/json
// sees; on anything else they stop without panicking.
func FuzzScan(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1,{"c":"]"}],"a":"x\"y"}`, `[1, "two", {"three": 3}, [], null]`, ` { "\u0061" : { } } `, `{"a":`, `[1,,2]`, `{"k":tru}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		var obj map[string]json.RawMessage
		var arr []json.RawMessage
		got := map[string]json.RawMessage{}
		for key, value := range members(b) {
			var k string
			if json.Unmarshal(key, &k) == nil {
				got[k] = value
			}
		}
		var elems []json.RawMessage
		for e, c := []byte(nil), newElements(b); ; elems = append(elems, e) {
			var ok bool
			if e, ok = c.next(); !ok {
				break
			}
		}
		switch {
		case json.Unmarshal(b, &obj) == nil && obj != nil:
			compact := func(m map[string]json.RawMessage) map[string]string {
				out := map[string]string{}
				for k, v := range m {
					var c bytes.Buffer
					_ = json.Compact(&c, v)
					out[k] = c.String()
				}
				return out
			}
			if diff := cmp.Diff(compact(obj), compact(got)); diff != "" {
				t.Fatalf("members of %s (-json +scan):\n%s", s, diff)
			}
		case json.Unmarshal(b, &arr) == nil && arr != nil:
			if len(arr) != len(elems) {
				t.Fatalf("elements of %s: %d, want %d", s, len(elems), len(arr))
			}
			for i := range arr {
				if !bytes.Equal(arr[i], elems[i]) {
					t.Fatalf("element %d of %s: %s, want %s", i, s, elems[i], arr[i])
				}
			}
		}
	})
}

// FuzzSmallFrameIsCopied: an event decoded from a frame below
// CopiedBelow keeps nothing of the frame's bytes, so the reader may reuse
// its buffer: the event, and the message normalized from it, are the same
// after the frame was overwritten.
func FuzzSmallFrameIsCopied(f *testing.F) {
	f.Add(`{"post_type":"message","message_type":"group","group_id":1,"user_id":5,"message_id":9,"raw_message":"hi","message":[{"type":"text","data":{"text":"hi"}},{"type":"at","data":{"qq":"3300000001"}}],"sender":{"nickname":"n","card":"c"}}`)
	f.Add(`{"post_type":"message","message_type":"private","user_id":5,"message_id":"x","message":"[CQ:reply,id=-5]q&amp;[CQ:image,file=a.png,url=http://x/a.png]"}`)
	f.Add(`{"post_type":"message","message_type":"group","group_id":1,"user_id":5,"message":[{"type":"forward","data":{"id":"f","content":[{"sender":{"nickname":"a"},"message":[{"type":"text","data":{"text":"inner"}}]}]}}]}`)
	f.Add(`{"post_type":"meta_event","meta_event_type":"heartbeat","interval":5000,"self_id":1}`)
	f.Fuzz(func(t *testing.T, frame string) {
		if len(frame) >= CopiedBelow {
			return
		}
		want, wantResp := Classify([]byte(frame))
		buf := []byte(frame)
		got, gotResp := Classify(buf)
		if want == nil || got == nil || wantResp || gotResp {
			return
		}
		wantMsg, wantErr := want.Normalize(msg.DefaultAccount, 3300000001, 0)
		for i := range buf {
			buf[i] = '#'
		}
		gotMsg, gotErr := got.Normalize(msg.DefaultAccount, 3300000001, 0)
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(Event{})); diff != "" {
			t.Fatalf("the event changed with its frame (-before +after):\n%s", diff)
		}
		if diff := cmp.Diff(wantMsg, gotMsg); diff != "" || (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("the message changed with its frame (-before +after):\n%s\n%v / %v", diff, wantErr, gotErr)
		}
	})
}
