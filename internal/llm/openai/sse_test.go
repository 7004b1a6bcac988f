package openai

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

func events(d ssestream.Decoder) (out []ssestream.Event, failed bool) {
	for d.Next() {
		e := d.Event()
		out = append(out, ssestream.Event{Type: e.Type, Data: append([]byte(nil), e.Data...)})
	}
	return out, d.Err() != nil
}

func streamResponse(body string) *http.Response {
	return &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(body))}
}

// FuzzSSEDecoderMatchesTheSDK: the pooled decoder reads every stream
// into the same events as the SDK's own.
func FuzzSSEDecoderMatchesTheSDK(f *testing.F) {
	f.Add("data: {\"a\":1}\n\ndata: [DONE]\n\n")
	f.Add("event: x\r\ndata: one\r\ndata: two\r\n\r\n: comment\n\ndata:no space\n\n")
	f.Add("data: last without end")
	f.Add("\n\n\ndata: " + strings.Repeat("长", 3000) + "\n\n")
	f.Add("id: 1\nretry: 5\ndata\ndata:\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		want, wantErr := events(ssestream.NewDecoder(streamResponse(body)))
		d := newSSEDecoder(streamResponse(body))
		got, gotErr := events(d)
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if d.Close() != nil {
			t.Fatal("a second Close failed")
		}
		if diff := cmp.Diff(want, got); diff != "" || wantErr != gotErr {
			t.Fatalf("events differ from the SDK's (-sdk +pooled), errors %v / %v:\n%s", wantErr, gotErr, diff)
		}
	})
}
