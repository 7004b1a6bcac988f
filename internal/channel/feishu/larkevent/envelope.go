package larkevent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Event schemas, the values of Envelope.Schema.
const (
	// Schema2 is the event schema 2.0: {"schema":"2.0","header":{…},"event":{…}}.
	Schema2 = "2.0"
	// Schema1 is the older v1 schema, which carries no schema field:
	// {"uuid","ts","token","type":"event_callback","event":{"type":…}}.
	Schema1 = "1.0"
)

// Event types that have decoders here.
const (
	EventMessageReceive  = "im.message.receive_v1"
	EventMessageRecalled = "im.message.recalled_v1"
)

// Envelope is what every event has, whatever its type and schema.
type Envelope struct {
	// Schema is Schema2 or Schema1.
	Schema string
	// EventID identifies the event across the platform's redeliveries:
	// header.event_id in schema 2.0, uuid in v1. Never empty.
	EventID string
	// EventType is header.event_type in schema 2.0, event.type in v1, such
	// as "im.message.receive_v1". Never empty.
	EventType string
	// CreateTime is when the event was created, in Unix milliseconds:
	// header.create_time in schema 2.0, ts (seconds with a fraction) in v1.
	// 0 when the event does not say.
	CreateTime int64
	// Token is the Verification Token the event carries: header.token in
	// schema 2.0, the top-level token in v1.
	Token string
	// AppID and TenantKey are the app and the tenant the event is for: in
	// the header in schema 2.0, in the event object in v1.
	AppID     string
	TenantKey string
	// Event is the raw JSON of the event object, for the decoder of its
	// type. It is a copy: it does not share memory with the input.
	Event json.RawMessage
}

// wire is a pushed body of any kind: an encrypted body, a URL
// verification challenge, or an event of either schema.
type wire struct {
	Encrypt   *string         `json:"encrypt"`
	Schema    string          `json:"schema"`
	Type      string          `json:"type"`
	Challenge string          `json:"challenge"`
	Token     string          `json:"token"`
	UUID      string          `json:"uuid"`
	TS        json.RawMessage `json:"ts"`
	Header    *wireHeader     `json:"header"`
	Event     json.RawMessage `json:"event"`
}

type wireHeader struct {
	EventID    string          `json:"event_id"`
	EventType  string          `json:"event_type"`
	CreateTime json.RawMessage `json:"create_time"`
	Token      string          `json:"token"`
	AppID      string          `json:"app_id"`
	TenantKey  string          `json:"tenant_key"`
}

// wireV1Event is what the envelope needs of a v1 event object.
type wireV1Event struct {
	Type      string `json:"type"`
	AppID     string `json:"app_id"`
	TenantKey string `json:"tenant_key"`
}

const (
	typeChallenge     = "url_verification"
	typeEventCallback = "event_callback"
)

// errNotEvent reports a URL verification challenge given as an event.
var errNotEvent = errors.New("a url_verification challenge, not an event")

// DecodeEnvelope decodes the plaintext JSON of an event, of schema 2.0 or
// v1. It is an error when the input is not a JSON object, is still
// encrypted, is a URL verification challenge, has an unknown schema, or
// lacks the event id, the event type or the event object.
func DecodeEnvelope(plain []byte) (Envelope, error) {
	var w wire
	if err := json.Unmarshal(plain, &w); err != nil {
		return Envelope{}, fmt.Errorf("larkevent: decode envelope: %w", err)
	}
	return w.envelope()
}

func (w *wire) envelope() (Envelope, error) {
	switch {
	case w.Encrypt != nil:
		return Envelope{}, errors.New("larkevent: decode envelope: the body is encrypted")
	case w.Type == typeChallenge:
		return Envelope{}, fmt.Errorf("larkevent: decode envelope: %w", errNotEvent)
	case w.Schema == Schema2:
		return w.envelope2()
	case w.Schema != "":
		return Envelope{}, fmt.Errorf("larkevent: decode envelope: unknown schema %q", w.Schema)
	case w.Type == typeEventCallback:
		return w.envelope1()
	case w.Type != "":
		return Envelope{}, fmt.Errorf("larkevent: decode envelope: unknown type %q", w.Type)
	}
	return Envelope{}, errors.New("larkevent: decode envelope: neither a schema nor a type")
}

func (w *wire) envelope2() (Envelope, error) {
	h := w.Header
	if h == nil {
		return Envelope{}, errors.New("larkevent: decode envelope: schema 2.0 without a header")
	}
	if h.EventID == "" {
		return Envelope{}, errors.New("larkevent: decode envelope: no header.event_id")
	}
	if h.EventType == "" {
		return Envelope{}, fmt.Errorf("larkevent: decode envelope: event %s: no header.event_type", h.EventID)
	}
	if !isObject(w.Event) {
		return Envelope{}, fmt.Errorf("larkevent: decode envelope: event %s: event is not an object", h.EventID)
	}
	created, err := decodeMillis(h.CreateTime)
	if err != nil {
		return Envelope{}, fmt.Errorf("larkevent: decode envelope: event %s: header.create_time: %w", h.EventID, err)
	}
	return Envelope{
		Schema:     Schema2,
		EventID:    h.EventID,
		EventType:  h.EventType,
		CreateTime: created,
		Token:      h.Token,
		AppID:      h.AppID,
		TenantKey:  h.TenantKey,
		Event:      w.Event,
	}, nil
}

func (w *wire) envelope1() (Envelope, error) {
	if w.UUID == "" {
		return Envelope{}, errors.New("larkevent: decode envelope: v1 event without a uuid")
	}
	if !isObject(w.Event) {
		return Envelope{}, fmt.Errorf("larkevent: decode envelope: event %s: event is not an object", w.UUID)
	}
	var ev wireV1Event
	if err := json.Unmarshal(w.Event, &ev); err != nil {
		return Envelope{}, fmt.Errorf("larkevent: decode envelope: event %s: %w", w.UUID, err)
	}
	if ev.Type == "" {
		return Envelope{}, fmt.Errorf("larkevent: decode envelope: event %s: no event.type", w.UUID)
	}
	created, err := decodeSeconds(w.TS)
	if err != nil {
		return Envelope{}, fmt.Errorf("larkevent: decode envelope: event %s: ts: %w", w.UUID, err)
	}
	return Envelope{
		Schema:     Schema1,
		EventID:    w.UUID,
		EventType:  ev.Type,
		CreateTime: created,
		Token:      w.Token,
		AppID:      ev.AppID,
		TenantKey:  ev.TenantKey,
		Event:      w.Event,
	}, nil
}

// isObject reports whether raw, valid JSON, is an object.
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}

// numberText returns the text of a timestamp given as a JSON string or a
// JSON number, and whether one was given at all (absent, null and "" are
// not).
func numberText(raw json.RawMessage) (string, bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	if raw[0] != '"' {
		return string(raw), true, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, fmt.Errorf("%s: %w", raw, err)
	}
	return s, s != "", nil
}

// decodeMillis decodes a count of milliseconds, a decimal integer given
// as a string (as the platform sends it) or a number; 0 when absent.
func decodeMillis(raw json.RawMessage) (int64, error) {
	s, ok, err := numberText(raw)
	if err != nil || !ok {
		return 0, err
	}
	return parseMillis(s)
}

func parseMillis(s string) (int64, error) {
	if !isDigits(s) {
		return 0, fmt.Errorf("%q is not a count of milliseconds", s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	return n, nil
}

// decodeSeconds decodes a v1 ts, seconds with an optional decimal
// fraction ("1502199207.7171419"), given as a string or a number, into
// milliseconds (the fraction truncated); 0 when absent.
func decodeSeconds(raw json.RawMessage) (int64, error) {
	s, ok, err := numberText(raw)
	if err != nil || !ok {
		return 0, err
	}
	whole, frac, dotted := strings.Cut(s, ".")
	if !isDigits(whole) || dotted && !isDigits(frac) {
		return 0, fmt.Errorf("%q is not a count of seconds", s)
	}
	secs, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || secs > math.MaxInt64/1000-1 {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	ms := secs * 1000
	for i, scale := 0, int64(100); i < 3 && i < len(frac); i, scale = i+1, scale/10 {
		ms += int64(frac[i]-'0') * scale
	}
	return ms, nil
}

// isDigits reports whether s is a non-empty run of ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
