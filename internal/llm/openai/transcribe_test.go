package openai

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// TestTranscriberSendsTheAudioAsAForm: the audio arrives as the form's
// file, under its name and type, with the model (the default one when
// none is configured), a JSON response format, the key and the
// configured headers; the answer's text comes back trimmed.
func TestTranscriberSendsTheAudioAsAForm(t *testing.T) {
	s := llmtest.NewOpenAI(t)
	s.SetTranscript("  明天九点集合 \n")
	audio := bytes.Repeat([]byte("OggS\x00\x02voice"), 300)
	tr := NewTranscriber(TranscriberOptions{BaseURL: s.URL + "/v1", APIKey: "sk-test", Headers: map[string]string{"X-Extra": "1"}})
	text, err := tr.Transcribe(t.Context(), audio, "voice.ogg", "audio/ogg")
	if err != nil {
		t.Fatal(err)
	}
	if text != "明天九点集合" {
		t.Errorf("text %q", text)
	}
	got := s.Transcriptions()
	if len(got) != 1 {
		t.Fatalf("%d transcription requests", len(got))
	}
	r := got[0]
	if r.Model != "whisper-1" || r.ResponseFormat != "json" || r.FileName != "voice.ogg" || r.ContentType != "audio/ogg" {
		t.Errorf("model %q, format %q, file %q (%s)", r.Model, r.ResponseFormat, r.FileName, r.ContentType)
	}
	if !bytes.Equal(r.Audio, audio) {
		t.Errorf("the server got %d bytes of audio, want the %d sent", len(r.Audio), len(audio))
	}
	if r.Header.Get("Authorization") != "Bearer sk-test" || r.Header.Get("X-Extra") != "1" {
		t.Errorf("headers %v", r.Header)
	}
}

func TestTranscriberAsksForItsModel(t *testing.T) {
	s := llmtest.NewOpenAI(t)
	tr := NewTranscriber(TranscriberOptions{BaseURL: s.URL + "/v1", Model: "gpt-4o-mini-transcribe"})
	text, err := tr.Transcribe(t.Context(), []byte("RIFF...."), "a.wav", "audio/wav")
	if err != nil || text != llmtest.DefaultTranscript {
		t.Fatalf("%q, %v", text, err)
	}
	r := s.Transcriptions()[0]
	if r.Model != "gpt-4o-mini-transcribe" || tr.Model() != r.Model {
		t.Errorf("model sent %q, transcriber's %q", r.Model, tr.Model())
	}
	if r.Header.Get("Authorization") != "Bearer none" {
		t.Errorf("keyless transcriber sent Authorization %q", r.Header.Get("Authorization"))
	}
}

// TestTranscriberErrorsAreClassified: HTTP errors become *llm.Error as
// a chat call's do, naming the provider and model, and the SDK does not
// retry on its own.
func TestTranscriberErrorsAreClassified(t *testing.T) {
	for _, tt := range []struct {
		reply  llmtest.Reply
		class  llm.Class
		reason llm.Reason
	}{
		{llmtest.Reply{Status: http.StatusUnauthorized, ErrorType: "invalid_api_key"}, llm.Fatal, llm.ReasonAuth},
		{llmtest.Reply{Status: http.StatusTooManyRequests, ErrorType: "rate_limit_exceeded", Header: http.Header{"Retry-After": {"3"}}}, llm.Retryable, llm.ReasonRateLimit},
	} {
		s := llmtest.NewOpenAI(t)
		s.ScriptTranscripts(tt.reply)
		tr := NewTranscriber(TranscriberOptions{Provider: "groq", BaseURL: s.URL + "/v1", APIKey: "bad"})
		text, err := tr.Transcribe(t.Context(), []byte("audio"), "v.mp3", "audio/mpeg")
		var le *llm.Error
		if !errors.As(err, &le) {
			t.Fatalf("HTTP %d: %q, %v (%T), want an *llm.Error", tt.reply.Status, text, err, err)
		}
		if le.Class != tt.class || le.Reason != tt.reason || le.Status != tt.reply.Status || le.Provider != "groq" || le.Model != "whisper-1" {
			t.Errorf("HTTP %d: %s/%s status %d from %s/%s", tt.reply.Status, le.Class, le.Reason, le.Status, le.Provider, le.Model)
		}
		if tt.reply.Header != nil && le.RetryAfter != 3*time.Second {
			t.Errorf("retry after %v, want 3s", le.RetryAfter)
		}
		if n := len(s.Transcriptions()); n != 1 {
			t.Errorf("HTTP %d: %d requests, the SDK retried on its own", tt.reply.Status, n)
		}
	}
}

func TestTranscriberRefusesNoAudio(t *testing.T) {
	s := llmtest.NewOpenAI(t)
	_, err := NewTranscriber(TranscriberOptions{BaseURL: s.URL + "/v1"}).Transcribe(t.Context(), nil, "v.ogg", "audio/ogg")
	if llm.ClassOf(err) != llm.Fatal || len(s.Transcriptions()) != 0 {
		t.Errorf("err %v, %d requests", err, len(s.Transcriptions()))
	}
}

// stalled is a transport that answers nothing until the request's
// context ends.
type stalled struct{}

func (stalled) RoundTrip(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// TestTranscriberTimeoutIsRetryable: a call that outlives the timeout
// fails as a retryable timeout; the caller's own cancellation is fatal.
func TestTranscriberTimeoutIsRetryable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := NewTranscriber(TranscriberOptions{BaseURL: "http://model.invalid/v1", Timeout: time.Minute, HTTPClient: &http.Client{Transport: stalled{}}})
		_, err := tr.Transcribe(t.Context(), []byte("audio"), "v.ogg", "audio/ogg")
		var le *llm.Error
		if !errors.As(err, &le) || le.Class != llm.Retryable || le.Reason != llm.ReasonTimeout {
			t.Errorf("timeout: %v", err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		_, err = tr.Transcribe(ctx, []byte("audio"), "v.ogg", "audio/ogg")
		if !errors.As(err, &le) || le.Reason != llm.ReasonCanceled {
			t.Errorf("cancelled: %v", err)
		}
	})
}
