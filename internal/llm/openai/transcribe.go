package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"time"
	"unicode"

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
	client   *api
	endpoint llm.Endpoint
}

// NewTranscriber returns a transcriber for o. As with the chat provider,
// nothing is retried here and failures are classified as
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
	t.client = newAPI(o.BaseURL, key, o.Headers, e.Client())
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
	var answer struct {
		Text string `json:"text"`
	}
	body, contentType, err := transcriptionForm(audio, name, mime, t.model, t.language)
	var res *http.Response
	if err == nil {
		res, err = t.client.post(callCtx, "audio/transcriptions", contentType, body)
	}
	if err == nil {
		err = decodeJSON(res, &answer)
	}
	if err != nil {
		return "", classify(ctx, t.id, t.model, fmt.Errorf("transcribe %s (%d bytes): %w", name, len(audio), err))
	}
	return strings.TrimSpace(answer.Text), nil
}

// dispositionEscaper escapes a file name in a Content-Disposition header
// as the SDK does.
var dispositionEscaper = strings.NewReplacer("\\", "\\\\", `"`, `\"`, "\r", "%0D", "\n", "%0A")

// transcriptionForm is the multipart form of POST /audio/transcriptions,
// as the SDK wrote AudioTranscriptionNewParams: the file under its name and
// type, then in the order of their names the language when there is one,
// the model and a JSON response format. A name or type with a control
// character is refused, as the SDK refused it.
func transcriptionForm(audio []byte, name, contentType, model, language string) ([]byte, string, error) {
	if strings.IndexFunc(name, func(r rune) bool { return unicode.IsControl(r) && r != '\t' && r != '\r' && r != '\n' }) >= 0 {
		return nil, "", errors.New("apiform: invalid multipart filename: contains control character")
	}
	if strings.IndexFunc(contentType, func(r rune) bool { return unicode.IsControl(r) && r != '\t' }) >= 0 {
		return nil, "", errors.New("apiform: invalid content type: contains control character")
	}
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, "", fmt.Errorf("apiform: invalid content type: %w", err)
	}
	if !strings.Contains(mediaType, "/") {
		return nil, "", errors.New("apiform: invalid content type: expected type/subtype")
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="`+dispositionEscaper.Replace(name)+`"`)
	h.Set("Content-Type", contentType)
	part, err := w.CreatePart(h)
	if err == nil {
		_, err = part.Write(audio)
	}
	var fields [][2]string
	if language != "" {
		fields = append(fields, [2]string{"language", language})
	}
	fields = append(fields, [2]string{"model", model}, [2]string{"response_format", "json"})
	for _, f := range fields {
		if err == nil {
			err = w.WriteField(f[0], f[1])
		}
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return nil, "", err
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}
