package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pincerbot/pincer/internal/llm"
)

// DefaultTranscriptionModel is the model a Transcriber uses when its
// options name none.
const DefaultTranscriptionModel = "whisper-1"

// TranscriberOptions configure a Transcriber.
type TranscriberOptions struct {
	// Provider is the provider id its errors name; "openai" when empty.
	Provider string
	// BaseURL overrides the SDK's default API root (as llm.Endpoint's).
	BaseURL string
	// APIKey is sent as a bearer token; a server that wants none gets
	// "none".
	APIKey string
	// Model is the transcription model; DefaultTranscriptionModel when
	// empty.
	Model string
	// Timeout bounds one call; 0 means none.
	Timeout time.Duration
	// HTTPClient replaces the client shared by the providers.
	HTTPClient *http.Client
	// Headers are sent with every request.
	Headers map[string]string
	// Language is an ISO-639-1 hint ("zh"); empty lets the model detect
	// the language.
	Language string
}

// Transcriber turns speech into text through an OpenAI-compatible
// POST /audio/transcriptions (OpenAI's Whisper and GPT transcribe
// models, Groq, a local whisper.cpp or faster-whisper server).
type Transcriber struct {
	id       string
	model    string
	language string
	client   sdk.Client
	endpoint llm.Endpoint
}

// NewTranscriber returns a transcriber for o. As with the chat provider,
// the SDK's own retries are off and failures are classified as
// *llm.Error for the caller to act on.
func NewTranscriber(o TranscriberOptions) *Transcriber {
	e := llm.Endpoint{BaseURL: o.BaseURL, APIKey: o.APIKey, Timeout: o.Timeout, Headers: o.Headers, HTTPClient: o.HTTPClient}
	t := &Transcriber{id: o.Provider, model: o.Model, language: o.Language, endpoint: e}
	if t.id == "" {
		t.id = "openai"
	}
	if t.model == "" {
		t.model = DefaultTranscriptionModel
	}
	key := o.APIKey
	if key == "" {
		// As for New: never fall back to $OPENAI_API_KEY.
		key = "none"
	}
	opts := []option.RequestOption{option.WithMaxRetries(0), option.WithAPIKey(key)}
	if o.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(o.BaseURL))
	}
	for k, v := range o.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	opts = append(opts, option.WithHTTPClient(e.Client()))
	t.client = sdk.NewClient(opts...)
	return t
}

// Model returns the transcription model the transcriber asks for.
func (t *Transcriber) Model() string { return t.model }

// Transcribe sends audio, a file called name of type mime (the server
// tells formats apart by both: "voice.ogg", "audio/ogg"), and returns its
// text, spaces around it trimmed. Errors are *llm.Error.
func (t *Transcriber) Transcribe(ctx context.Context, audio []byte, name, mime string) (string, error) {
	if len(audio) == 0 {
		return "", &llm.Error{Provider: t.id, Model: t.model, Class: llm.Fatal, Reason: llm.ReasonInvalid, Err: errors.New("transcribe: no audio")}
	}
	if name == "" {
		name = "audio"
	}
	callCtx, cancel := t.endpoint.CallContext(ctx)
	defer cancel()
	params := sdk.AudioTranscriptionNewParams{
		File:           sdk.File(bytes.NewReader(audio), name, mime),
		Model:          sdk.AudioModel(t.model),
		ResponseFormat: sdk.AudioResponseFormatJSON,
	}
	if t.language != "" {
		params.Language = sdk.String(t.language)
	}
	res, err := t.client.Audio.Transcriptions.New(callCtx, params)
	if err != nil {
		return "", classify(ctx, t.id, t.model, fmt.Errorf("transcribe %s (%d bytes): %w", name, len(audio), err))
	}
	if res == nil {
		return "", llm.HTTPError(t.id, t.model, 0, nil, "api_error", errors.New("transcribe: empty answer"))
	}
	return strings.TrimSpace(res.Text), nil
}
