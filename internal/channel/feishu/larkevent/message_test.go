package larkevent

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustEnvelope(t testing.TB, body string) Envelope {
	t.Helper()
	env, err := DecodeEnvelope([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestDecodeMessageReceive(t *testing.T) {
	m, err := DecodeMessageReceive(mustEnvelope(t, sampleReceive))
	if err != nil {
		t.Fatal(err)
	}
	want := MessageReceive{
		SenderOpenID:    "ou_3b8f1c2d4e5a6b7c8d9e0f1a2b3c4d5e",
		SenderUnionID:   "on_9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d",
		SenderType:      "user",
		SenderTenantKey: "2ca1d211f64f6438",
		MessageID:       "om_dc13264520392913993dd051dba21dcf",
		RootID:          "om_5ce6d572455d361153b7cb51da133945",
		ParentID:        "om_5ce6d572455d361153b7cb51da133945",
		CreateTime:      1760000000321,
		ChatID:          "oc_5ad11d72b830411d72b836c20",
		ChatType:        ChatTypeGroup,
		MessageType:     "text",
		Content:         `{"text":"@_user_1 帮我总结一下 @_user_2 的方案"}`,
		Mentions: []Mention{
			{Key: "@_user_1", OpenID: "ou_bot0000000000000000000000000001", UnionID: "on_b1", Name: "Helper"},
			{Key: "@_user_2", OpenID: "ou_7c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f", UnionID: "on_c2", UserID: "u_c2", Name: "王五"},
		},
	}
	if d := cmp.Diff(want, m); d != "" {
		t.Errorf("message (-want +got):\n%s", d)
	}
}

// receiveWith is an im.message.receive_v1 envelope whose event is event.
func receiveWith(event string) Envelope {
	return Envelope{Schema: Schema2, EventID: "e1", EventType: EventMessageReceive, Event: []byte(event)}
}

func TestDecodeMessageReceiveTopic(t *testing.T) {
	m, err := DecodeMessageReceive(receiveWith(`{"sender":{"sender_id":{"open_id":"ou_a","user_id":"u_a"},"sender_type":"user"},
		"message":{"message_id":"om_1","root_id":"om_r","parent_id":"om_r","thread_id":"omt_1","create_time":"1760000000000",
		"chat_id":"oc_1","chat_type":"topic_group","message_type":"post","content":"{}","mentions":[]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.ThreadID != "omt_1" || m.ChatType != ChatTypeTopicGroup || m.SenderUserID != "u_a" || m.Mentions != nil {
		t.Errorf("got %+v", m)
	}
}

func TestDecodeMessageReceiveP2PAnonymous(t *testing.T) {
	m, err := DecodeMessageReceive(receiveWith(`{"sender":{"sender_id":null,"sender_type":"anonymous"},
		"message":{"message_id":"om_1","create_time":"1","chat_id":"oc_1","chat_type":"p2p","message_type":"text"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.SenderOpenID != "" || m.SenderType != "anonymous" || m.ChatType != ChatTypeP2P || m.CreateTime != 1 {
		t.Errorf("got %+v", m)
	}
}

func TestDecodeMessageReceiveErrors(t *testing.T) {
	const ok = `"message_id":"om_1","create_time":"1760000000000","chat_id":"oc_1","chat_type":"group","message_type":"text"`
	const sender = `"sender":{"sender_id":{"open_id":"ou_a"},"sender_type":"user"}`
	for name, event := range map[string]string{
		"not JSON":          `nope`,
		"array":             `[]`,
		"no sender":         `{"message":{` + ok + `}}`,
		"no message":        `{` + sender + `}`,
		"null message":      `{` + sender + `,"message":null}`,
		"no message_id":     `{` + sender + `,"message":{` + strings.Replace(ok, `"om_1"`, `""`, 1) + `}}`,
		"no chat_id":        `{` + sender + `,"message":{` + strings.Replace(ok, `"oc_1"`, `""`, 1) + `}}`,
		"no message_type":   `{` + sender + `,"message":{` + strings.Replace(ok, `"text"`, `""`, 1) + `}}`,
		"unknown chat_type": `{` + sender + `,"message":{` + strings.Replace(ok, `"group"`, `"channel"`, 1) + `}}`,
		"no chat_type":      `{` + sender + `,"message":{` + strings.Replace(ok, `"chat_type":"group",`, ``, 1) + `}}`,
		"no create_time":    `{` + sender + `,"message":{` + strings.Replace(ok, `"create_time":"1760000000000",`, ``, 1) + `}}`,
		"empty create_time": `{` + sender + `,"message":{` + strings.Replace(ok, `"1760000000000"`, `""`, 1) + `}}`,
		"bad create_time":   `{` + sender + `,"message":{` + strings.Replace(ok, `"1760000000000"`, `"12:00"`, 1) + `}}`,
		"content object":    `{` + sender + `,"message":{` + ok + `,"content":{"text":"hi"}}}`,
		"mentions object":   `{` + sender + `,"message":{` + ok + `,"mentions":{"key":"@_user_1"}}}`,
		"mention id string": `{` + sender + `,"message":{` + ok + `,"mentions":[{"key":"@_user_1","id":"ou_b"}]}}`,
	} {
		if m, err := DecodeMessageReceive(receiveWith(event)); err == nil {
			t.Errorf("%s: DecodeMessageReceive = %+v, want an error", name, m)
		}
	}
	env := mustEnvelope(t, sampleRecalled)
	if _, err := DecodeMessageReceive(env); err == nil {
		t.Error("a recalled event decoded as a received message")
	}
}

func TestDecodeMessageRecalled(t *testing.T) {
	r, err := DecodeMessageRecalled(mustEnvelope(t, sampleRecalled))
	if err != nil {
		t.Fatal(err)
	}
	want := MessageRecalled{
		MessageID:  "om_dc13264520392913993dd051dba21dcf",
		ChatID:     "oc_5ad11d72b830411d72b836c20",
		RecallTime: 1760000004999,
		RecallType: "message_owner",
	}
	if r != want {
		t.Errorf("got %+v, want %+v", r, want)
	}
	recalled := func(event string) Envelope {
		return Envelope{EventID: "e", EventType: EventMessageRecalled, Event: []byte(event)}
	}
	for name, env := range map[string]Envelope{
		"receive event":    mustEnvelope(t, sampleReceive),
		"not JSON":         recalled(`{`),
		"no message_id":    recalled(`{"chat_id":"oc_1"}`),
		"bad recall_time":  recalled(`{"message_id":"om_1","recall_time":"yesterday"}`),
		"message_id array": recalled(`{"message_id":["om_1"]}`),
	} {
		if r, err := DecodeMessageRecalled(env); err == nil {
			t.Errorf("%s: DecodeMessageRecalled = %+v, want an error", name, r)
		}
	}
}

func TestContentKey(t *testing.T) {
	base, err := DecodeMessageReceive(mustEnvelope(t, sampleReceive))
	if err != nil {
		t.Fatal(err)
	}
	key := ContentKey(base)
	if b, err := hex.DecodeString(key); err != nil || len(b) != 32 {
		t.Fatalf("ContentKey = %q, want 64 hex digits", key)
	}
	if strings.Contains(key, base.ChatID) {
		t.Fatal("the key holds a field in the clear")
	}

	// The same message pushed again under a fresh message_id, with other
	// mentions resolved, is the same content.
	again := base
	again.MessageID = "om_fresh"
	again.ParentID = "om_other"
	again.Mentions = nil
	again.SenderUnionID = ""
	if ContentKey(again) != key {
		t.Error("a redelivery under a fresh message_id has another key")
	}

	for name, change := range map[string]func(*MessageReceive){
		"sender":      func(m *MessageReceive) { m.SenderOpenID += "x" },
		"chat":        func(m *MessageReceive) { m.ChatID += "x" },
		"create_time": func(m *MessageReceive) { m.CreateTime++ },
		"content":     func(m *MessageReceive) { m.Content = `{"text":"other"}` },
		"root_id":     func(m *MessageReceive) { m.RootID = "" },
		"thread_id":   func(m *MessageReceive) { m.ThreadID = "omt_1" },
		// Length prefixes keep a field's end from sliding into the next.
		"sender/chat boundary": func(m *MessageReceive) {
			m.SenderOpenID, m.ChatID = m.SenderOpenID+m.ChatID[:1], m.ChatID[1:]
		},
		"root/thread boundary": func(m *MessageReceive) {
			m.RootID, m.ThreadID = m.RootID[:3], m.RootID[3:]
		},
	} {
		m := base
		change(&m)
		if ContentKey(m) == key {
			t.Errorf("changing the %s kept the key", name)
		}
	}
}

func FuzzDecodeMessageReceive(f *testing.F) {
	f.Add([]byte(mustEnvelope(f, sampleReceive).Event))
	f.Add([]byte(`{"sender":{"sender_id":null,"sender_type":"anonymous"},"message":{"message_id":"om_1","create_time":"1","chat_id":"oc_1","chat_type":"p2p","message_type":"text"}}`))
	f.Add([]byte(`{"sender":{},"message":{"message_id":"om_1","create_time":1,"chat_id":"oc_1","chat_type":"topic_group","message_type":"post","mentions":[null,{}]}}`))
	f.Fuzz(func(t *testing.T, event []byte) {
		m, err := DecodeMessageReceive(receiveWith(string(event)))
		if err != nil {
			return
		}
		if m.MessageID == "" || m.ChatID == "" || m.MessageType == "" || m.CreateTime < 0 {
			t.Fatalf("decoded %+v", m)
		}
		switch m.ChatType {
		case ChatTypeP2P, ChatTypeGroup, ChatTypeTopicGroup:
		default:
			t.Fatalf("chat type %q", m.ChatType)
		}
		key := ContentKey(m)
		if b, err := hex.DecodeString(key); err != nil || len(b) != 32 || ContentKey(m) != key {
			t.Fatalf("ContentKey = %q", key)
		}
	})
}
