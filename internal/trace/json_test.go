package trace

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// FuzzTraceJSON: a record's key and steps are written as the very bytes
// json.Marshal writes for them, whatever their text (markup, control
// characters, invalid UTF-8), with or without an outcome, any number of
// steps or none; a time json.Marshal refuses is refused too, with the
// buffer left as it was.
func FuzzTraceJSON(f *testing.F) {
	f.Add("onebot", "default", "群 <1>", "m&1", "trigger", "triggered", "@ of the bot \"机器人\"", int64(1_780_000_000_123_456_789), uint8(2))
	f.Add("", "", "", "", "", "", "", int64(0), uint8(0))
	f.Add("x", "\u2028", "bad \xff", "\x00", "deliver", "", "line\nbreak", int64(-1), uint8(1))
	f.Fuzz(func(t *testing.T, ch, acct, peer, id, stage, outcome, detail string, nanos int64, n uint8) {
		k := Key{Channel: msg.ChannelID(ch), Account: msg.AccountID(acct), Peer: msg.Peer{Kind: msg.Group, ID: peer}, ID: msg.MessageID(id)}
		want, err := json.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		if got := k.AppendJSON([]byte("x")); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("key:\n%s\njson.Marshal:\n%s", got, want)
		}
		var steps []Step
		if n > 0 {
			steps = []Step{}
		}
		for i := range int(n % 4) {
			s := Step{At: time.Unix(0, nanos).Add(time.Duration(i) * time.Second).In(time.FixedZone("", int(nanos%50400))), Stage: stage, Detail: detail}
			if i%2 == 0 {
				s.Outcome = outcome
			}
			steps = append(steps, s)
		}
		want, wantErr := json.Marshal(steps)
		got, err := AppendStepsJSON([]byte("x"), steps)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("error %v, json.Marshal's %v", err, wantErr)
		}
		if err != nil {
			if string(got) != "x" {
				t.Fatalf("on an error the buffer became %q", got)
			}
			return
		}
		if !bytes.Equal(got[1:], want) {
			t.Fatalf("steps:\n%s\njson.Marshal:\n%s", got[1:], want)
		}
	})
}

// TestStepsJSONRefusesWhatMarshalRefuses: a step in the year 10000 is an
// error, as it is for json.Marshal.
func TestStepsJSONRefusesWhatMarshalRefuses(t *testing.T) {
	steps := []Step{{At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Stage: "x"}}
	if _, err := json.Marshal(steps); err == nil {
		t.Fatal("json.Marshal took the year 10000")
	}
	if got, err := AppendStepsJSON([]byte("keep"), steps); err == nil || string(got) != "keep" {
		t.Errorf("AppendStepsJSON = %q, %v", got, err)
	}
}
