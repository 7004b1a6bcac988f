package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFields: Get, Lookup and Set read and write the fields as a map's
// keys, the last of a repeated key counting, and keep their order.
func TestFields(t *testing.T) {
	var none Fields
	if v, ok := none.Lookup("a"); v != nil || ok || none.Get("a") != nil {
		t.Errorf("nil fields: %q %v", v, ok)
	}
	var f Fields
	f.Set("b", json.RawMessage(`1`))
	f.Set("a", json.RawMessage(`"x"`))
	f.Set("b", json.RawMessage(`2`))
	want := Fields{{Key: "b", Value: json.RawMessage(`2`)}, {Key: "a", Value: json.RawMessage(`"x"`)}}
	if !cmp.Equal(f, want) {
		t.Errorf("set b, a, b: %q, want %q", f, want)
	}
	if got := f.Get("b"); string(got) != `2` {
		t.Errorf("Get(b) = %q, want 2", got)
	}
	if got := (Segment{Data: f}).Str("a"); got != "x" {
		t.Errorf("Str(a) = %q, want x", got)
	}
	if v, ok := (Fields{{Key: "k"}}).Lookup("k"); v != nil || !ok {
		t.Errorf("a key with a nil value: %q %v, want nil true", v, ok)
	}

	// Written out with a key twice, the last one counts, as it would in
	// JSON decoded into a map; Set changes that one.
	twice := Fields{{Key: "text", Value: json.RawMessage(`"first"`)}, {Key: "x", Value: json.RawMessage(`0`)}, {Key: "text", Value: json.RawMessage(`"last"`)}}
	if got := twice.Get("text"); string(got) != `"last"` {
		t.Errorf("Get of a repeated key: %s, want the last", got)
	}
	twice.Set("text", json.RawMessage(`"new"`))
	if got := twice.Get("text"); string(got) != `"new"` || string(twice[0].Value) != `"first"` {
		t.Errorf("Set of a repeated key: %q", twice)
	}
	if b, err := json.Marshal(twice); err != nil || string(b) != `{"text":"new","x":0}` {
		t.Errorf("encoded %s (%v), want the last of text", b, err)
	}
}

// TestFieldsJSON: Fields decode and encode as a map of their keys to their
// values did, null and {} apart, keys sorted when encoded, a repeated key's
// last value winning when decoded, in its first place.
func TestFieldsJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Fields
		out  string
	}{
		{`null`, nil, `null`},
		{`{}`, Fields{}, `{}`},
		{` { "b" : [1, 2] , "a":"<x>" } `, Fields{{"b", json.RawMessage(`[1, 2]`)}, {"a", json.RawMessage(`"<x>"`)}}, `{"a":"\u003cx\u003e","b":[1,2]}`},
		{`{"text":"one","qq":1,"text":"two"}`, Fields{{"text", json.RawMessage(`"two"`)}, {"qq", json.RawMessage(`1`)}}, `{"qq":1,"text":"two"}`},
		{`{"te\u0078t":"é","\ud83d\ude00":null}`, Fields{{"text", json.RawMessage(`"é"`)}, {"😀", json.RawMessage(`null`)}}, `{"text":"é","😀":null}`},
	} {
		var got Fields
		if err := json.Unmarshal([]byte(tc.in), &got); err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if !cmp.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%s decoded as %q, want %q", tc.in, got, tc.want)
		}
		out, err := json.Marshal(got)
		if err != nil || string(out) != tc.out {
			t.Errorf("%s encoded again as %s (%v), want %s", tc.in, out, err, tc.out)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(tc.in), &m); err != nil {
			t.Fatal(err)
		}
		if wantOut, _ := json.Marshal(m); string(out) != string(wantOut) {
			t.Errorf("%s encoded as %s, a map as %s", tc.in, out, wantOut)
		}
	}

	// A segment's data: merged when repeated, as a map's was; null when
	// missing or null; an error when it is not an object.
	var seg Segment
	if err := json.Unmarshal([]byte(`{"type":"text","data":{"text":"a","x":1},"Data":{"x":2}}`), &seg); err != nil {
		t.Fatal(err)
	}
	if want := (Fields{{"text", json.RawMessage(`"a"`)}, {"x", json.RawMessage(`2`)}}); !cmp.Equal(seg.Data, want) {
		t.Errorf("repeated data: %q, want %q", seg.Data, want)
	}
	for _, in := range []string{`{"type":"face"}`, `{"type":"face","data":{"id":1},"data":null}`} {
		seg = Segment{}
		if err := json.Unmarshal([]byte(in), &seg); err != nil || seg.Data != nil {
			t.Errorf("%s: data %q (%v), want nil", in, seg.Data, err)
		}
		if b, _ := json.Marshal(seg); string(b) != `{"type":"face","data":null}` {
			t.Errorf("%s encoded as %s", in, b)
		}
	}
	for _, in := range []string{`"x"`, `1`, `[]`, `true`} {
		if err := json.Unmarshal([]byte(`{"type":"text","data":`+in+`}`), &seg); err == nil {
			t.Errorf("data %s decoded", in)
		}
	}
	// Past the few keys compared pairwise, a repeated key still counts
	// once, in its first place, with its last value.
	var many bytes.Buffer
	many.WriteString(`{`)
	for i := range 40 {
		fmt.Fprintf(&many, `"k%d":%d,`, i%25, i)
	}
	many.WriteString(`"last":true}`)
	var got Fields
	if err := json.Unmarshal(many.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 26 || got[3].Key != "k3" || string(got.Get("k3")) != "28" || string(got.Get("k24")) != "24" || got[25].Key != "last" {
		t.Errorf("%s decoded as %q", many.Bytes(), got)
	}
	if fast, ok := segmentsFast([]byte(`[{"type":"x","data":` + many.String() + `}]`)); !ok || !cmp.Equal(fast[0].Data, got) {
		t.Errorf("fast decoding: %q, %v", fast, ok)
	}

	if err := new(Fields).UnmarshalJSON([]byte(`{"a":`)); err == nil {
		t.Error("invalid JSON decoded")
	}

	// Values encoding/json would refuse are refused, not spliced in.
	for _, v := range []string{``, `1,"b":2`, `"open`, `{`} {
		if b, err := json.Marshal(Fields{{"a", json.RawMessage(v)}}); err == nil {
			t.Errorf("value %q encoded as %s", v, b)
		}
	}
	if b, err := json.Marshal(Fields{{"a", nil}}); err != nil || string(b) != `{"a":null}` {
		t.Errorf("nil value encoded as %s (%v)", b, err)
	}
}

// FuzzFieldsAsMap: Fields decode from any JSON as a segment's data map did
// (a data object repeated in a segment merged into the first), and encode
// to the very bytes the map did, HTML escaping on or off.
func FuzzFieldsAsMap(f *testing.F) {
	f.Add(`{"text":"hi"}`, `{"qq":1}`, "k", `"v"`)
	f.Add(`{"b":1,"a":2,"b":3}`, `null`, "<&>", ` [ 1 , "\u2028" ] `)
	f.Add(`null`, `{"x":{"y":[]}}`, "\xff", `1,"b":2`)
	f.Add(`"s"`, `{}`, "a\u2028", `"<b>"`)
	f.Fuzz(func(t *testing.T, a, b, key, value string) {
		type viaMap struct {
			Data map[string]json.RawMessage `json:"data"`
		}
		type viaFields struct {
			Data Fields `json:"data"`
		}
		for _, frame := range []string{`{"data":` + a + `}`, `{"data":` + a + `,"DATA":` + b + `}`} {
			var m viaMap
			var got viaFields
			errMap, err := json.Unmarshal([]byte(frame), &m), json.Unmarshal([]byte(frame), &got)
			if (errMap == nil) != (err == nil) {
				t.Fatalf("%s: error %v, the map's %v", frame, err, errMap)
			}
			if err != nil {
				continue
			}
			if (m.Data == nil) != (got.Data == nil) || len(m.Data) != len(got.Data) {
				t.Fatalf("%s: %q, the map %q", frame, got.Data, m.Data)
			}
			for k, v := range m.Data {
				if g, ok := got.Data.Lookup(k); !ok || !bytes.Equal(g, v) {
					t.Fatalf("%s: %q is %q, in the map %q", frame, k, g, v)
				}
			}
			sameEncoding(t, m.Data, got.Data)
		}
		fields := Fields{{Key: key, Value: json.RawMessage(value)}, {Key: "a", Value: json.RawMessage(a)}, {Key: key, Value: json.RawMessage(b)}}
		m := map[string]json.RawMessage{}
		for _, f := range fields {
			m[f.Key] = f.Value
		}
		sameEncoding(t, m, fields)
	})
}

// sameEncoding fails t unless f encodes as m does, with HTML escaping on
// and off (or fails where m fails).
func sameEncoding(t *testing.T, m map[string]json.RawMessage, f Fields) {
	t.Helper()
	for _, html := range []bool{true, false} {
		var want, got bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(html)
		errMap := enc.Encode(m)
		enc = json.NewEncoder(&got)
		enc.SetEscapeHTML(html)
		err := enc.Encode(f)
		if (errMap == nil) != (err == nil) || (err == nil && !bytes.Equal(got.Bytes(), want.Bytes())) {
			t.Fatalf("%q (html %v): %s (%v), the map %s (%v)", f, html, got.Bytes(), err, want.Bytes(), errMap)
		}
	}
}
