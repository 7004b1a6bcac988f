package openai

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// seen is one request as a server saw it.
type seen struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

func recorder(t *testing.T, status int, answer string) (*httptest.Server, *[]seen) {
	var got []seen
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h := r.Header.Clone()
		h.Del("Accept-Encoding")
		got = append(got, seen{r.Method, r.URL.RequestURI(), h, b})
		if strings.HasPrefix(answer, "{") {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	t.Cleanup(s.Close)
	return s, &got
}

// sdkClient is the SDK's client as pincer configured it before api.
func sdkClient(base, key string, headers map[string]string) sdk.Client {
	opts := []option.RequestOption{option.WithMaxRetries(0), option.WithAPIKey(key)}
	if base != "" {
		opts = append(opts, option.WithBaseURL(base))
	}
	for k, v := range headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return sdk.NewClient(opts...)
}

// TestAPISendsAsTheSDK: a chat request goes out with the SDK's URL,
// headers and body, with and without the SDK's environment variables.
func TestAPISendsAsTheSDK(t *testing.T) {
	for _, env := range []map[string]string{
		nil,
		{"OPENAI_ORG_ID": "org-1", "OPENAI_PROJECT_ID": "proj-1", "OPENAI_CUSTOM_HEADERS": "X-A: 1\nX-B:two \nno colon", "OPENAI_API_KEY": "sk-env"},
	} {
		for k, v := range env {
			t.Setenv(k, v)
		}
		s, got := recorder(t, 200, "data: [DONE]\n\n")
		headers := map[string]string{"X-Extra": "1"}
		body := []byte(`{"model":"m","stream":true}` + "\n")
		c := sdkClient(s.URL+"/v1", "sk-test", headers)
		var raw *http.Response
		if err := c.Execute(t.Context(), http.MethodPost, "chat/completions", body, &raw); err != nil {
			t.Fatal(err)
		}
		raw.Body.Close()
		res, err := newAPI(s.URL+"/v1", "sk-test", headers, http.DefaultClient).post(t.Context(), "chat/completions", "application/json", body)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if len(*got) != 2 {
			t.Fatalf("%d requests", len(*got))
		}
		if diff := cmp.Diff((*got)[0], (*got)[1]); diff != "" {
			t.Errorf("env %v: request (-SDK +api):\n%s", env, diff)
		}
	}
}

// TestAPIBaseURLFromEnvironment: with no root configured, the SDK's
// $OPENAI_BASE_URL is used, as the SDK did.
func TestAPIBaseURLFromEnvironment(t *testing.T) {
	s, got := recorder(t, 200, "")
	t.Setenv("OPENAI_BASE_URL", s.URL+"/proxy/v1")
	res, err := newAPI("", "k", nil, http.DefaultClient).post(t.Context(), "chat/completions", "application/json", []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if len(*got) != 1 || (*got)[0].Path != "/proxy/v1/chat/completions" {
		t.Errorf("requests %+v", *got)
	}
}

// TestAPIErrorsAsTheSDK: an HTTP error answer carries the status and the
// error object's fields the SDK's openai.Error carried, with its message.
// The one difference: an "error" that is not an object (a string) failed
// the SDK's decoding, so the answer's status was lost; here it is kept.
func TestAPIErrorsAsTheSDK(t *testing.T) {
	for _, tt := range []struct {
		status int
		body   string
	}{
		{502, "Bad Gateway"},
		{500, ""},
		{429, `{"error":{"code":"rate_limit_exceeded","type":"requests","message":"slow down","param":null}}`},
		{400, `{"error":{"code":123,"type":"x"}}`},
		{401, `{"error":{"code":null,"message":"m","type":"invalid_request_error","param":"model"}}`},
		{503, `[1]`},
		{599, `{}`},
	} {
		s, _ := recorder(t, tt.status, tt.body)
		c := sdkClient(s.URL, "k", nil)
		var raw *http.Response
		werr := c.Execute(context.Background(), http.MethodPost, "chat/completions", []byte("{}"), &raw)
		var want *sdk.Error
		if !errors.As(werr, &want) {
			t.Fatalf("%d %s: the SDK returned %T %v", tt.status, tt.body, werr, werr)
		}
		_, gerr := newAPI(s.URL, "k", nil, http.DefaultClient).post(t.Context(), "chat/completions", "application/json", []byte("{}"))
		var got *apiError
		if !errors.As(gerr, &got) {
			t.Fatalf("%d %s: %T %v, want *apiError", tt.status, tt.body, gerr, gerr)
		}
		type fields struct {
			Status                            int
			Code, Type, Message, Param, Error string
		}
		w := fields{want.StatusCode, want.Code, want.Type, want.Message, want.Param, want.Error()}
		g := fields{got.StatusCode, got.Code, got.Type, got.Message, got.Param, got.Error()}
		if w != g {
			t.Errorf("%d %s:\n got %+v\nwant %+v", tt.status, tt.body, g, w)
		}
		b, _ := io.ReadAll(got.Response.Body)
		if string(b) != tt.body {
			t.Errorf("the error's response body %q, want %q", b, tt.body)
		}
	}
	s, _ := recorder(t, 400, `{"error":"oops"}`)
	_, err := newAPI(s.URL, "k", nil, http.DefaultClient).post(t.Context(), "x", "application/json", nil)
	if e, ok := errors.AsType[*apiError](err); !ok || e.StatusCode != 400 {
		t.Errorf("a string error: %v", err)
	}
}

// form is a multipart body's parts: their headers and contents.
func form(t *testing.T, r seen) []string {
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	mr := multipart.NewReader(bytes.NewReader(r.Body), params["boundary"])
	var out []string
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p)
		out = append(out, p.Header.Get("Content-Disposition")+" | "+p.Header.Get("Content-Type")+" | "+string(b))
	}
}

// TestTranscriptionFormAsTheSDK: the transcription request has the SDK's
// URL, headers (but the form's boundary) and form parts.
func TestTranscriptionFormAsTheSDK(t *testing.T) {
	for _, tt := range []struct{ name, mime, lang string }{
		{"voice.ogg", "audio/ogg", ""},
		{`语音 "1"\a.amr`, "audio/amr", "zh"},
	} {
		s, got := recorder(t, 200, `{"text":" hi "}`)
		audio := []byte("OggS\x00voice")
		c := sdkClient(s.URL+"/v1", "sk-test", nil)
		params := sdk.AudioTranscriptionNewParams{File: sdk.File(bytes.NewReader(audio), tt.name, tt.mime), Model: "whisper-1", ResponseFormat: sdk.AudioResponseFormatJSON}
		if tt.lang != "" {
			params.Language = sdk.String(tt.lang)
		}
		if _, err := c.Audio.Transcriptions.New(t.Context(), params); err != nil {
			t.Fatal(err)
		}
		tr := NewTranscriber(TranscriberOptions{BaseURL: s.URL + "/v1", APIKey: "sk-test", Language: tt.lang})
		text, err := tr.Transcribe(t.Context(), audio, tt.name, tt.mime)
		if err != nil || text != "hi" {
			t.Fatalf("%q, %v", text, err)
		}
		want, have := (*got)[0], (*got)[1]
		if diff := cmp.Diff(form(t, want), form(t, have)); diff != "" {
			t.Errorf("%s: parts (-SDK +api):\n%s", tt.name, diff)
		}
		for _, r := range []*seen{&want, &have} {
			r.Body = nil
			r.Header.Del("Content-Type")
			r.Header.Del("Content-Length")
		}
		if diff := cmp.Diff(want, have); diff != "" {
			t.Errorf("%s: request (-SDK +api):\n%s", tt.name, diff)
		}
	}
}

// TestTranscriptionRefusesWhatTheSDKRefused: a type that is not one, or
// a control character in the name, fails before a request, as in the SDK.
func TestTranscriptionRefusesWhatTheSDKRefused(t *testing.T) {
	s, got := recorder(t, 200, `{"text":"x"}`)
	tr := NewTranscriber(TranscriberOptions{BaseURL: s.URL})
	for _, tt := range []struct{ name, mime string }{{"x", ""}, {"x", "audio"}, {"x", "audio/ogg\x01"}, {"a\x00b", "audio/ogg"}} {
		if _, err := tr.Transcribe(t.Context(), []byte("a"), tt.name, tt.mime); err == nil {
			t.Errorf("%q %q: no error", tt.name, tt.mime)
		}
	}
	if len(*got) != 0 {
		t.Errorf("%d requests", len(*got))
	}
}

// TestSDKVersionIsTheLinkedOne keeps the User-Agent's version the one in
// go.mod.
func TestSDKVersionIsTheLinkedOne(t *testing.T) {
	mod, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	want := "github.com/openai/openai-go/v3 v" + sdkVersion + "\n"
	if !strings.Contains(string(mod), want) {
		t.Errorf("go.mod does not require %q", strings.TrimSpace(want))
	}
}
