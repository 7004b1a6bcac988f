package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"

	"github.com/pincerbot/pincer/internal/llm"
)

// sdkVersion is the openai-go release whose requests api's mirror: its
// User-Agent and X-Stainless-Package-Version (a test keeps it equal to
// the one in go.mod).
const sdkVersion = "3.98.0"

// defaultBaseURL is the SDK's production root.
const defaultBaseURL = "https://api.openai.com/v1/"

// api sends requests as the openai-go SDK's client did, configured as
// pincer configured it (no retries of its own, the endpoint's key, root,
// headers and HTTP client), without linking the SDK's root package: its
// client builds every service of the platform and registers their types
// at start, which cost the binary about 7 MB and a running pincer the
// pages of it. It reads the SDK's environment the same way:
// $OPENAI_BASE_URL when the endpoint names no root, $OPENAI_ORG_ID and
// $OPENAI_PROJECT_ID as headers, $OPENAI_CUSTOM_HEADERS (one "Name: value"
// a line); never $OPENAI_API_KEY, since the endpoint always has a key
// ("none" when it needs none).
type api struct {
	base   *url.URL
	header http.Header
	client *http.Client
	// err is a root that does not parse, returned by every call as the
	// SDK did.
	err error
}

// newAPI returns the client for base (empty: the SDK's default), key and
// the extra headers.
func newAPI(base, key string, headers map[string]string, client *http.Client) *api {
	a := &api{header: http.Header{}, client: client}
	a.header.Set("Accept", "application/json")
	a.header.Set("X-Stainless-Retry-Count", "0")
	a.header.Set("User-Agent", "OpenAI/Go "+sdkVersion)
	a.header.Set("X-Stainless-Lang", "go")
	a.header.Set("X-Stainless-Package-Version", sdkVersion)
	a.header.Set("X-Stainless-OS", normalizedOS())
	a.header.Set("X-Stainless-Arch", normalizedArch())
	a.header.Set("X-Stainless-Runtime", "go")
	a.header.Set("X-Stainless-Runtime-Version", runtime.Version())
	if v, ok := os.LookupEnv("OPENAI_ORG_ID"); ok {
		a.header.Set("OpenAI-Organization", v)
	}
	if v, ok := os.LookupEnv("OPENAI_PROJECT_ID"); ok {
		a.header.Set("OpenAI-Project", v)
	}
	if v, ok := os.LookupEnv("OPENAI_CUSTOM_HEADERS"); ok {
		for line := range strings.SplitSeq(v, "\n") {
			if name, value, ok := strings.Cut(line, ":"); ok {
				a.header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
			}
		}
	}
	if key != "" {
		a.header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range headers {
		a.header.Set(k, v)
	}
	if base == "" {
		base = os.Getenv("OPENAI_BASE_URL")
	}
	if base == "" {
		base = defaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil {
		a.err = fmt.Errorf("requestoption: WithBaseURL failed to parse url %s", err)
		return a
	}
	if u.Path != "" && !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	a.base = u
	return a
}

// post sends body of contentType to path under the root. An answer of
// HTTP 400 or more is read and returned as *apiError; any other answer is
// the caller's to read and close.
func (a *api) post(ctx context.Context, path, contentType string, body []byte) (*http.Response, error) {
	if a.err != nil {
		return nil, a.err
	}
	u, err := a.base.Parse(strings.TrimLeft(path, "/"))
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range a.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", contentType)
	res, err := llm.KeepAlive(a.client.Do(req))
	if ctx.Err() != nil {
		// As the SDK: a call whose context ended fails with its error.
		if res != nil && res.Body != nil {
			res.Body.Close()
		}
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	if res.StatusCode < 400 {
		return res, nil
	}
	contents, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(contents))
	e := &apiError{StatusCode: res.StatusCode, Request: req, Response: res}
	var envelope struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(contents, &envelope) == nil && len(envelope.Error) > 0 && envelope.Error[0] == '{' {
		var fields struct {
			Code    json.RawMessage `json:"code"`
			Message string          `json:"message"`
			Param   string          `json:"param"`
			Type    string          `json:"type"`
		}
		_ = json.Unmarshal(envelope.Error, &fields)
		e.Message, e.Param, e.Type = fields.Message, fields.Param, fields.Type
		e.Code = codeString(fields.Code)
	}
	return nil, e
}

// decodeJSON decodes a successful answer's JSON body into dst and closes
// it; an answer of another content type is refused, as the SDK refused it.
func decodeJSON(res *http.Response, dst any) error {
	defer res.Body.Close()
	contentType := res.Header.Get("Content-Type")
	mediaType, _, _ := mime.ParseMediaType(contentType)
	if !strings.Contains(mediaType, "application/json") && !strings.HasSuffix(mediaType, "+json") {
		return fmt.Errorf("expected destination type of 'string' or '[]byte' for responses with content-type '%s' that is not 'application/json'", contentType)
	}
	contents, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	return json.Unmarshal(contents, dst)
}

// codeString is an error code as the SDK read it: a string as it is, a
// number or other scalar as its JSON text, null as empty.
func codeString(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// apiError is an HTTP error answer, as the SDK's openai.Error: its status
// and the error object's fields.
type apiError struct {
	Code, Message, Param, Type string
	StatusCode                 int
	Request                    *http.Request
	Response                   *http.Response
}

// Error is the SDK's summary, which leaves out the URL and the body (they
// may hold secrets).
func (e *apiError) Error() string {
	if text := http.StatusText(e.StatusCode); text != "" {
		return fmt.Sprintf("OpenAI API error: %d %s", e.StatusCode, text)
	}
	return fmt.Sprintf("OpenAI API error: %d", e.StatusCode)
}

func normalizedOS() string {
	switch runtime.GOOS {
	case "ios":
		return "iOS"
	case "android":
		return "Android"
	case "darwin":
		return "MacOS"
	case "windows":
		return "Windows"
	case "freebsd":
		return "FreeBSD"
	case "openbsd":
		return "OpenBSD"
	case "linux":
		return "Linux"
	}
	return "Other:" + runtime.GOOS
}

func normalizedArch() string {
	switch runtime.GOARCH {
	case "386":
		return "x32"
	case "amd64":
		return "x64"
	case "arm", "arm64":
		return runtime.GOARCH
	}
	return "other:" + runtime.GOARCH
}
