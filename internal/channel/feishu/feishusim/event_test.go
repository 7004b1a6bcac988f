package feishusim

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	"github.com/larksuite/oapi-sdk-go/v3/core/httpserverext"
	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
)

const testEncryptKey = "test-encrypt-key"

// decryptEvent is the receiver's side of Encrypt, written from the
// platform's description: base64, a 16-byte IV, AES-256-CBC with the key
// SHA256(encryptKey), and strictly checked PKCS#7 padding.
func decryptEvent(encryptKey, encoded string) ([]byte, error) {
	buf, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, err
	}
	if len(buf) < 2*aes.BlockSize || len(buf)%aes.BlockSize != 0 {
		return nil, fmt.Errorf("ciphertext of %d bytes", len(buf))
	}
	key := sha256.Sum256([]byte(encryptKey))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(buf)-aes.BlockSize)
	cipher.NewCBCDecrypter(block, buf[:aes.BlockSize]).CryptBlocks(out, buf[aes.BlockSize:])
	pad := int(out[len(out)-1])
	if pad < 1 || pad > aes.BlockSize {
		return nil, fmt.Errorf("pad byte %d", pad)
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, errors.New("inconsistent padding")
		}
	}
	return out[:len(out)-pad], nil
}

// receiver is a tiny webhook endpoint checking what the platform
// promises: signature, timestamp, encryption and token.
type receiver struct {
	key, token string
	now        func() time.Time

	mu     sync.Mutex
	events []map[string]any
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	if rc.key != "" {
		ts := r.Header.Get(HeaderTimestamp)
		mac := sha256.Sum256([]byte(ts + r.Header.Get(HeaderNonce) + rc.key + string(raw)))
		want := hex.EncodeToString(mac[:])
		if subtle.ConstantTimeCompare([]byte(want), []byte(r.Header.Get(HeaderSignature))) != 1 {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		sec, err := strconv.ParseInt(ts, 10, 64)
		if d := rc.now().Sub(time.Unix(sec, 0)); err != nil || d > 300*time.Second || d < -300*time.Second {
			http.Error(w, "stale", http.StatusUnauthorized)
			return
		}
		var enc struct {
			Encrypt string `json:"encrypt"`
		}
		if json.Unmarshal(raw, &enc) != nil || enc.Encrypt == "" {
			http.Error(w, "not encrypted", http.StatusBadRequest)
			return
		}
		plain, err := decryptEvent(rc.key, enc.Encrypt)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		raw = plain
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if body["type"] == "url_verification" {
		if body["token"] != rc.token {
			http.Error(w, "bad token", http.StatusForbidden)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"challenge": body["challenge"]})
		return
	}
	if h, _ := body["header"].(map[string]any); h == nil || h["token"] != rc.token {
		http.Error(w, "bad token", http.StatusForbidden)
		return
	}
	rc.mu.Lock()
	rc.events = append(rc.events, body)
	rc.mu.Unlock()
	_, _ = w.Write([]byte(`{}`))
}

func TestSignatureKnownAnswer(t *testing.T) {
	// hex(sha256("1760000000" + "n0nce" + "test-encrypt-key" + `{"encrypt":"abc"}`)), computed separately.
	const want = "9ebfe04689eaa01236651d549df0c1f82774b0913d6f52ebe4a799b7ce4e39bc"
	if got := Signature("1760000000", "n0nce", testEncryptKey, []byte(`{"encrypt":"abc"}`)); got != want {
		t.Errorf("signature %s, want %s", got, want)
	}
}

func TestEncryptRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 15, 16, 17, 1000} {
		plain := bytes.Repeat([]byte("x"), n)
		enc, err := Encrypt(testEncryptKey, plain)
		must(t, err)
		got, err := decryptEvent(testEncryptKey, enc)
		if err != nil || !bytes.Equal(got, plain) {
			t.Errorf("%d bytes: %v, got %d bytes", n, err, len(got))
		}
		// The SDK's decryptor agrees (on JSON-shaped text, which it needs).
		if n > 0 {
			js := []byte(`{"a":"` + string(plain) + `"}`)
			enc, err := Encrypt(testEncryptKey, js)
			must(t, err)
			if got, err := larkevent.EventDecrypt(enc, testEncryptKey); err != nil || !bytes.Equal(got, js) {
				t.Errorf("SDK decrypt of %d bytes: %v %q", len(js), err, got)
			}
		}
	}
	a, _ := Encrypt(testEncryptKey, []byte("same"))
	b, _ := Encrypt(testEncryptKey, []byte("same"))
	if a == b {
		t.Error("two encryptions share an IV")
	}
}

func TestPostEventRoundTrip(t *testing.T) {
	clock := newClock()
	sim := New(Options{AppID: "cli_events", VerificationToken: "vt", EncryptKey: testEncryptKey, Now: clock.Now, TenantKey: "tk"})
	rc := &receiver{key: testEncryptKey, token: "vt", now: clock.Now}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	ctx := context.Background()
	must(t, sim.AddUser(userA, "张三"))
	must(t, sim.AddChat(chatGroup, ChatGroup))

	d, err := sim.PostEvent(ctx, srv.URL, URLVerification{Challenge: "ajls384kdjx98XX"}, EventOptions{})
	must(t, err)
	if d.Status != http.StatusOK || !bytes.Contains(d.Response, []byte(`"challenge":"ajls384kdjx98XX"`)) {
		t.Errorf("challenge: %d %s", d.Status, d.Response)
	}

	d, err = sim.PostEvent(ctx, srv.URL, Message{
		ID: "om_in1", ChatID: chatGroup, SenderID: userA, Content: `{"text":"@_user_1 hi"}`,
		ParentID: "om_p", RootID: "om_p",
		Mentions: []Mention{{Key: "@_user_1", ID: sim.Options().BotOpenID, Name: "Pincer Sim"}},
	}, EventOptions{})
	must(t, err)
	if d.Status != http.StatusOK || d.EventID == "" || !bytes.HasPrefix(d.Body, []byte(`{"encrypt":`)) {
		t.Fatalf("event: %d %s (body %s)", d.Status, d.Response, d.Body)
	}
	if _, stored := sim.Message("om_in1"); !stored {
		t.Error("the posted message is not stored")
	}
	rc.mu.Lock()
	got := rc.events
	rc.mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("receiver saw %d events", len(got))
	}
	want := fmt.Sprintf(`{"event":{"message":{"chat_id":%q,"chat_type":"group","content":"{\"text\":\"@_user_1 hi\"}","create_time":"%d","mentions":[{"id":{"open_id":%q,"union_id":%q,"user_id":%q},"key":"@_user_1","name":"Pincer Sim","tenant_key":"tk"}],"message_id":"om_in1","message_type":"text","parent_id":"om_p","root_id":"om_p","update_time":"%d"},"sender":{"sender_id":{"open_id":%q,"union_id":%q,"user_id":%q},"sender_type":"user","tenant_key":"tk"}},"header":{"app_id":"cli_events","create_time":"%d","event_id":%q,"event_type":"im.message.receive_v1","tenant_key":"tk","token":"vt"},"schema":"2.0"}`,
		chatGroup, clock.Now().UnixMilli(), DefaultBotOpenID, UnionID(DefaultBotOpenID), UserID(DefaultBotOpenID), clock.Now().UnixMilli(),
		userA, UnionID(userA), UserID(userA), clock.Now().UnixMilli(), d.EventID)
	if gotJSON, _ := json.Marshal(got[0]); string(gotJSON) != want {
		t.Errorf("event\n%s\nwant\n%s", gotJSON, want)
	}

	// A redelivery reuses the event id; the message stays one.
	d2, err := sim.PostEvent(ctx, srv.URL, "om_in1", EventOptions{EventID: d.EventID})
	must(t, err)
	if d2.Status != http.StatusOK || d2.EventID != d.EventID {
		t.Errorf("redelivery: %d %s", d2.Status, d2.EventID)
	}

	// The receiver's checks see tampering.
	for name, opts := range map[string]EventOptions{
		"bad signature": {Signature: "00"},
		"stale":         {Timestamp: clock.Now().Add(-time.Hour)},
		"wrong token":   {Token: "other"},
		"plaintext":     {Plaintext: true},
	} {
		d, err := sim.PostEvent(ctx, srv.URL, "om_in1", opts)
		must(t, err)
		if d.Status == http.StatusOK {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := sim.PostEvent(ctx, srv.URL, "om_unknown", EventOptions{}); err == nil {
		t.Error("event for an unknown message: no error")
	}
	if _, err := sim.PostEvent(ctx, srv.URL, 42, EventOptions{}); err == nil {
		t.Error("event of an unsupported type: no error")
	}
}

func TestPostEventPlaintext(t *testing.T) {
	sim := New(Options{VerificationToken: "vt"})
	rc := &receiver{token: "vt", now: time.Now}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	must(t, sim.AddP2PChat("oc_dm", userA))
	d, err := sim.PostEvent(context.Background(), srv.URL, &Message{ChatID: "oc_dm", MsgType: "merge_forward",
		Children: []Message{{SenderID: userB, Content: `{"text":"inner"}`}}}, EventOptions{})
	must(t, err)
	if d.Status != http.StatusOK || !bytes.HasPrefix(d.Body, []byte(`{"schema":"2.0"`)) {
		t.Fatalf("plaintext event: %d %s", d.Status, d.Body)
	}
	msg := rc.events[0]["event"].(map[string]any)["message"].(map[string]any)
	sender := rc.events[0]["event"].(map[string]any)["sender"].(map[string]any)["sender_id"].(map[string]any)
	if msg["chat_type"] != "p2p" || msg["message_type"] != "merge_forward" || msg["content"] != `{"text":"Merged and Forwarded Message"}` || sender["open_id"] != userA {
		t.Errorf("merge_forward event: %v", rc.events[0])
	}
	v1 := json.RawMessage(`{"uuid":"u1","ts":"1","token":"vt","type":"event_callback","event":{"type":"message"}}`)
	raw, err := sim.PostEvent(context.Background(), srv.URL, v1, EventOptions{})
	must(t, err)
	if !bytes.Equal(raw.Body, v1) || raw.EventID != "" {
		t.Errorf("raw body posted as %s", raw.Body)
	}
	custom, err := sim.PostEvent(context.Background(), srv.URL, CustomEvent{Type: "im.message.recalled_v1", Event: map[string]string{"message_id": "om_x"}}, EventOptions{})
	must(t, err)
	if !bytes.Contains(custom.Payload, []byte(`"event_type":"im.message.recalled_v1"`)) || !bytes.Contains(custom.Payload, []byte(`"event":{"message_id":"om_x"}`)) {
		t.Errorf("custom event: %s", custom.Payload)
	}
}

// TestSDKDispatcherAcceptsEvents checks the simulator's encryption,
// signature and envelope against the official SDK's webhook handler.
func TestSDKDispatcherAcceptsEvents(t *testing.T) {
	sim := New(Options{VerificationToken: "vt", EncryptKey: testEncryptKey})
	must(t, sim.AddUser(userA, "张三"))
	must(t, sim.AddChat(chatGroup, ChatTopicGroup))
	got := make(chan *larkim.P2MessageReceiveV1, 1)
	d := dispatcher.NewEventDispatcher("vt", testEncryptKey).OnP2MessageReceiveV1(func(_ context.Context, ev *larkim.P2MessageReceiveV1) error {
		got <- ev
		return nil
	})
	d.InitConfig(larkevent.WithLogLevel(larkcore.LogLevelError))
	srv := httptest.NewServer(http.HandlerFunc(httpserverext.NewEventHandlerFunc(d)))
	defer srv.Close()
	ctx := context.Background()

	del, err := sim.PostEvent(ctx, srv.URL, URLVerification{Challenge: "c1"}, EventOptions{})
	must(t, err)
	if del.Status != http.StatusOK || !bytes.Contains(del.Response, []byte(`"c1"`)) {
		t.Errorf("SDK challenge: %d %s", del.Status, del.Response)
	}
	del, err = sim.PostEvent(ctx, srv.URL, Message{ID: "om_sdk", ChatID: chatGroup, SenderID: userA, ThreadID: "omt_9", Content: `{"text":"hi"}`}, EventOptions{})
	must(t, err)
	if del.Status != http.StatusOK {
		t.Fatalf("SDK rejected the event: %d %s", del.Status, del.Response)
	}
	var ev *larkim.P2MessageReceiveV1
	select {
	case ev = <-got: // the SDK handles webhook events before it answers
	default:
		t.Fatal("the SDK answered without dispatching the event")
	}
	m := ev.Event.Message
	if h := ev.EventV2Base.Header; h == nil || h.EventType != EventMessageReceive || h.Token != "vt" || h.AppID != DefaultAppID {
		t.Fatalf("SDK header: %s", larkcore.Prettify(ev.EventV2Base))
	}
	if ev.EventV2Base.Header.EventID != del.EventID || str(m.MessageId) != "om_sdk" || str(m.ChatType) != "topic_group" ||
		str(m.ThreadId) != "omt_9" || str(ev.Event.Sender.SenderId.OpenId) != userA {
		t.Errorf("SDK decoded: %s", larkcore.Prettify(ev))
	}
	del, err = sim.PostEvent(ctx, srv.URL, "om_sdk", EventOptions{Signature: "00"})
	must(t, err)
	if del.Status == http.StatusOK {
		t.Error("SDK accepted a bad signature")
	}
}

// FuzzEncrypt: whatever the key and body, the receiver's decryption gives
// the body back.
func FuzzEncrypt(f *testing.F) {
	f.Add("key", []byte(`{"schema":"2.0"}`))
	f.Add("", []byte{})
	f.Fuzz(func(t *testing.T, key string, plain []byte) {
		enc, err := Encrypt(key, plain)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decryptEvent(key, enc)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("round trip: %v, %q != %q", err, got, plain)
		}
	})
}
