package feishusim

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Webhook request headers the platform signs with.
const (
	HeaderTimestamp = "X-Lark-Request-Timestamp"
	HeaderNonce     = "X-Lark-Request-Nonce"
	HeaderSignature = "X-Lark-Signature"
)

// EventMessageReceive is the event type of a new message.
const EventMessageReceive = "im.message.receive_v1"

// URLVerification is the request the platform sends to check a webhook
// URL; the receiver must echo Challenge.
type URLVerification struct {
	Challenge string
}

// CustomEvent is a schema 2.0 event of any type whose event object is
// Event (marshalled as JSON), e.g. im.message.recalled_v1.
type CustomEvent struct {
	Type  string
	Event any
}

// EventOptions adjusts one delivery. The zero value delivers as the
// platform does: encrypted and signed when Options.EncryptKey is set.
type EventOptions struct {
	// EventID is header.event_id; empty means a fresh one. Reuse an id to
	// simulate a redelivery.
	EventID string
	// Token replaces the verification token in the body.
	Token string
	// Plaintext sends the body unencrypted even with an encrypt key.
	Plaintext bool
	// Unsigned leaves out the signature headers.
	Unsigned bool
	// Signature replaces the computed X-Lark-Signature.
	Signature string
	// Timestamp is X-Lark-Request-Timestamp; zero means the clock.
	Timestamp time.Time
	// Nonce is X-Lark-Request-Nonce; empty means a random one.
	Nonce string
	// Client posts the request; nil means http.DefaultClient.
	Client *http.Client
	// Chunks splits a long-connection delivery (PushEvent) into that
	// many frames, as the platform splits large payloads; 0 or 1 sends
	// one frame.
	Chunks int
}

// Delivery is what happened to one posted event.
type Delivery struct {
	// EventID is header.event_id (empty for URL verification).
	EventID string
	// Payload is the plaintext JSON; Body what was posted (the same, or
	// {"encrypt":…}).
	Payload []byte
	Body    []byte
	// Status and Response are the receiver's answer: over the long
	// connection, the acknowledgement's code and payload.
	Status   int
	Response []byte
	// Attempts is how many times the event was delivered (PushEvent
	// delivers again what was not acknowledged); 1 for PostEvent.
	Attempts int
}

type eventHeader struct {
	EventID    string `json:"event_id"`
	EventType  string `json:"event_type"`
	CreateTime string `json:"create_time"`
	Token      string `json:"token"`
	AppID      string `json:"app_id"`
	TenantKey  string `json:"tenant_key"`
}

type eventEnvelope struct {
	Schema string      `json:"schema"`
	Header eventHeader `json:"header"`
	Event  any         `json:"event"`
}

type eventUserID struct {
	OpenID  string `json:"open_id,omitempty"`
	UnionID string `json:"union_id,omitempty"`
	UserID  string `json:"user_id,omitempty"`
}

type eventMention struct {
	Key       string      `json:"key"`
	ID        eventUserID `json:"id"`
	Name      string      `json:"name"`
	TenantKey string      `json:"tenant_key"`
}

type eventMessage struct {
	MessageID   string         `json:"message_id"`
	RootID      string         `json:"root_id,omitempty"`
	ParentID    string         `json:"parent_id,omitempty"`
	CreateTime  string         `json:"create_time"`
	UpdateTime  string         `json:"update_time"`
	ChatID      string         `json:"chat_id"`
	ThreadID    string         `json:"thread_id,omitempty"`
	ChatType    string         `json:"chat_type"`
	MessageType string         `json:"message_type"`
	Content     string         `json:"content"`
	Mentions    []eventMention `json:"mentions,omitempty"`
}

type eventSender struct {
	SenderID   eventUserID `json:"sender_id"`
	SenderType string      `json:"sender_type"`
	TenantKey  string      `json:"tenant_key"`
}

type receiveEvent struct {
	Sender  eventSender  `json:"sender"`
	Message eventMessage `json:"message"`
}

func userIDs(openID string) eventUserID {
	if isAppID(openID) {
		return eventUserID{}
	}
	return eventUserID{OpenID: openID, UnionID: UnionID(openID), UserID: UserID(openID)}
}

// PostEvent delivers one event to a webhook at url, as the platform does:
// a JSON POST, encrypted and signed when Options.EncryptKey is set. The
// event is one of:
//   - Message or *Message: stored (as AddMessage does), then delivered as
//     im.message.receive_v1, as when a user sends it; it stays stored
//     when the delivery fails;
//   - string: the id of a stored message, delivered as
//     im.message.receive_v1 (a redelivery, with EventOptions.EventID);
//   - URLVerification: the url_verification challenge;
//   - CustomEvent: a schema 2.0 envelope around any event object;
//   - json.RawMessage: a complete plaintext body (a v1 schema event, say),
//     encrypted and signed like the others but otherwise sent as is.
//
// A receiver's non-2xx answer is not an error: Delivery.Status has it.
func (s *Sim) PostEvent(ctx context.Context, url string, event any, opts EventOptions) (*Delivery, error) {
	payload, eventID, err := s.eventPayload(event, opts)
	if err != nil {
		return nil, err
	}
	d := &Delivery{EventID: eventID, Payload: payload, Body: payload, Attempts: 1}
	key := s.opts.EncryptKey
	if key != "" && !opts.Plaintext {
		enc, err := Encrypt(key, payload)
		if err != nil {
			return nil, fmt.Errorf("feishusim: post event: %w", err)
		}
		d.Body, err = json.Marshal(struct {
			Encrypt string `json:"encrypt"`
		}{enc})
		if err != nil {
			return nil, fmt.Errorf("feishusim: post event: %w", err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(d.Body))
	if err != nil {
		return nil, fmt.Errorf("feishusim: post event: %w", err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "Feishu-Sim-Event-Dispatcher")
	if key != "" && !opts.Unsigned {
		ts := opts.Timestamp
		if ts.IsZero() {
			ts = s.now()
		}
		nonce := opts.Nonce
		if nonce == "" {
			nonce = rand.Text()
		}
		tsText := strconv.FormatInt(ts.Unix(), 10)
		sig := opts.Signature
		if sig == "" {
			sig = Signature(tsText, nonce, key, d.Body)
		}
		req.Header.Set(HeaderTimestamp, tsText)
		req.Header.Set(HeaderNonce, nonce)
		req.Header.Set(HeaderSignature, sig)
	}
	client := opts.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("feishusim: post event to %s: %w", url, err)
	}
	defer resp.Body.Close()
	d.Status = resp.StatusCode
	d.Response, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return d, fmt.Errorf("feishusim: post event to %s: reading the answer: %w", url, err)
	}
	return d, nil
}

// eventPayload builds the plaintext body of an event.
func (s *Sim) eventPayload(event any, opts EventOptions) ([]byte, string, error) {
	token := opts.Token
	if token == "" {
		token = s.opts.VerificationToken
	}
	var (
		typ  string
		body any
	)
	switch e := event.(type) {
	case URLVerification:
		b, err := json.Marshal(struct {
			Challenge string `json:"challenge"`
			Token     string `json:"token"`
			Type      string `json:"type"`
		}{e.Challenge, token, "url_verification"})
		if err != nil {
			return nil, "", fmt.Errorf("feishusim: url verification: %w", err)
		}
		return b, "", nil
	case json.RawMessage:
		return bytes.Clone(e), "", nil
	case CustomEvent:
		if e.Type == "" {
			return nil, "", errors.New("feishusim: custom event without a type")
		}
		typ, body = e.Type, e.Event
	case *Message:
		if e == nil {
			return nil, "", errors.New("feishusim: post event: nil message")
		}
		return s.eventPayload(*e, opts)
	case Message:
		s.mu.Lock()
		id, err := s.addMessageLocked(e)
		if err == nil {
			typ, body = EventMessageReceive, s.receiveEventLocked(id)
		}
		s.mu.Unlock()
		if err != nil {
			return nil, "", fmt.Errorf("feishusim: post event: %w", err)
		}
	case string:
		s.mu.Lock()
		var err error
		if _, known := s.msgs[e]; !known {
			err = fmt.Errorf("feishusim: post event: unknown message %q", e)
		} else if s.msgs[e].m.ChatID == "" {
			err = fmt.Errorf("feishusim: post event: message %q is inside a merge_forward", e)
		} else {
			typ, body = EventMessageReceive, s.receiveEventLocked(e)
		}
		s.mu.Unlock()
		if err != nil {
			return nil, "", err
		}
	default:
		return nil, "", fmt.Errorf("feishusim: post event: unsupported event %T", event)
	}
	s.mu.Lock()
	now := s.now()
	eventID := opts.EventID
	if eventID == "" {
		s.eventSeq++
		eventID = derivedID(fmt.Sprintf("event.%s.%d", s.opts.AppID, s.eventSeq), "", 32)
	}
	s.mu.Unlock()
	b, err := json.Marshal(eventEnvelope{
		Schema: "2.0",
		Header: eventHeader{
			EventID: eventID, EventType: typ, CreateTime: ms(now), Token: token,
			AppID: s.opts.AppID, TenantKey: s.opts.TenantKey,
		},
		Event: body,
	})
	if err != nil {
		return nil, "", fmt.Errorf("feishusim: %s event: %w", typ, err)
	}
	return b, eventID, nil
}

// receiveEventLocked is the event object of im.message.receive_v1 for a
// stored top-level message.
func (s *Sim) receiveEventLocked(id string) receiveEvent {
	r := s.msgs[id]
	m := r.m
	content := m.Content
	if m.MsgType == "merge_forward" && content == "" {
		content = `{"text":"` + mergeForwardText + `"}`
	}
	kind := ChatGroup
	if c, known := s.chats[m.ChatID]; known {
		kind = c.kind
	}
	ev := receiveEvent{
		Sender: eventSender{SenderID: userIDs(m.SenderID), SenderType: m.SenderType, TenantKey: s.opts.TenantKey},
		Message: eventMessage{
			MessageID: m.ID, RootID: m.RootID, ParentID: m.ParentID,
			CreateTime: ms(m.CreateTime), UpdateTime: ms(m.UpdateTime),
			ChatID: m.ChatID, ThreadID: m.ThreadID, ChatType: string(kind),
			MessageType: m.MsgType, Content: content,
		},
	}
	for _, mn := range m.Mentions {
		ev.Message.Mentions = append(ev.Message.Mentions, eventMention{
			Key: mn.Key, ID: userIDs(mn.ID), Name: mn.Name, TenantKey: s.opts.TenantKey,
		})
	}
	return ev
}

// Encrypt encrypts an event body as the platform does: AES-256-CBC with
// the key SHA256(encryptKey), a random IV, PKCS#7 padding, and the IV
// followed by the ciphertext in standard base64.
func Encrypt(encryptKey string, plaintext []byte) (string, error) {
	key := sha256.Sum256([]byte(encryptKey))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return "", fmt.Errorf("encrypting event: %w", err)
	}
	pad := aes.BlockSize - len(plaintext)%aes.BlockSize
	buf := make([]byte, aes.BlockSize+len(plaintext)+pad)
	iv := buf[:aes.BlockSize]
	if _, err := rand.Read(iv); err != nil {
		return "", fmt.Errorf("encrypting event: %w", err)
	}
	data := buf[aes.BlockSize:]
	copy(data, plaintext)
	for i := len(plaintext); i < len(data); i++ {
		data[i] = byte(pad)
	}
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(data, data)
	return base64.StdEncoding.EncodeToString(buf), nil
}

// Signature is X-Lark-Signature for a webhook request:
// hex(SHA256(timestamp + nonce + encryptKey + body)).
func Signature(timestamp, nonce, encryptKey string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(timestamp))
	h.Write([]byte(nonce))
	h.Write([]byte(encryptKey))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}
