package feishusim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// fuzzSim is a simulator with a little of everything, and a valid token.
func fuzzSim(t testing.TB) (*Sim, string) {
	clock := newClock()
	s := New(Options{Now: clock.Now})
	for _, err := range []error{s.AddUser(userA, "张三"), s.AddUser(userB, "李四"), s.AddChat(chatGroup, ChatGroup), s.AddP2PChat("oc_dm", userA)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AddMessage(Message{ID: "om_text1", ChatID: chatGroup, SenderID: userA, Content: `{"text":"hi"}`,
		Resources: map[string][]byte{"file_1": []byte("data")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddMessage(Message{ID: "om_fwd", ChatID: "oc_dm", MsgType: "merge_forward", Children: []Message{
		{ID: "om_c1", SenderID: userB}, {ID: "om_c2", SenderID: userA, MsgType: "merge_forward", Children: []Message{{ID: "om_c2a", SenderID: "cli_x"}}},
	}}); err != nil {
		t.Fatal(err)
	}
	opts := s.Options()
	body, _ := json.Marshal(map[string]string{"app_id": opts.AppID, "app_secret": opts.AppSecret})
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, PathTenantToken, bytes.NewReader(body)))
	var tok struct {
		Token string `json:"tenant_access_token"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &tok); err != nil || tok.Token == "" {
		t.Fatalf("token: %s", rec.Body)
	}
	return s, tok.Token
}

// FuzzHandler sends arbitrary requests: the simulator never panics, and
// every JSON answer has a code that is 0 exactly when the status is 200.
func FuzzHandler(f *testing.F) {
	seeds := []struct{ method, path, query, body string }{
		{"GET", "/open-apis/im/v1/messages/om_fwd", "card_msg_content_type=user_card_content&user_id_type=union_id", ""},
		{"GET", "/open-apis/im/v1/messages", "container_id_type=chat&container_id=" + chatGroup + "&start_time=0&end_time=9999999999&sort_type=ByCreateTimeDesc&page_size=1", ""},
		{"GET", "/open-apis/im/v1/messages", "container_id_type=chat&container_id=" + chatGroup + "&page_token=c2ltMS4xLjE", ""},
		{"POST", "/open-apis/im/v1/messages", "receive_id_type=chat_id", `{"receive_id":"` + chatGroup + `","msg_type":"text","content":"{\"text\":\"x\"}","uuid":"u1"}`},
		{"POST", "/open-apis/im/v1/messages", "receive_id_type=open_id", `{"receive_id":"` + userB + `","msg_type":"post","content":"{}"}`},
		{"POST", "/open-apis/im/v1/messages/om_text1/reply", "", `{"msg_type":"interactive","content":"{\"elements\":[]}","reply_in_thread":true}`},
		{"POST", "/open-apis/im/v1/messages/om_text1/reactions", "", `{"reaction_type":{"emoji_type":"Typing"}}`},
		{"DELETE", "/open-apis/im/v1/messages/om_text1/reactions/ZCsim0000000000000001", "", ""},
		{"GET", "/open-apis/im/v1/messages/om_fwd/resources/file_1", "type=file", ""},
		{"POST", "/open-apis/contact/v3/users/basic_batch", "user_id_type=open_id", `{"user_ids":["` + userA + `"]}`},
		{"GET", "/open-apis/bot/v3/info", "", ""},
		{"POST", "/open-apis/im/v1/images", "", "--x\r\nContent-Disposition: form-data; name=\"image_type\"\r\n\r\nmessage\r\n--x--\r\n"},
		{"POST", "/open-apis/im/v1/messages", "receive_id_type=chat_id", `{"receive_id":"` + chatGroup + `","msg_type":"image","content":"{\"image_key\":\"img_x\"}"}`},
		{"POST", "/open-apis/auth/v3/tenant_access_token/internal", "", `{"app_id":1}`},
		{"PUT", "/open-apis/im/v1/messages//x/", "%zz", `{`},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.query, s.body, true)
	}
	f.Fuzz(func(t *testing.T, method, path, query, body string, auth bool) {
		s, token := fuzzSim(t)
		if !validMethod(method) {
			return
		}
		r := &http.Request{
			Method: method, URL: &url.URL{Path: path, RawQuery: query},
			Header: http.Header{}, Body: http.NoBody, Host: "sim",
		}
		if body != "" {
			r.Body = httpBody(body)
		}
		if auth {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, r)
		if !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			return
		}
		var env struct {
			Code *int `json:"code"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Code == nil {
			t.Fatalf("%s %s?%s: JSON answer without a code: %s", method, path, query, rec.Body)
		}
		if (*env.Code == 0) != (rec.Code == http.StatusOK) {
			t.Fatalf("%s %s?%s: HTTP %d with code %d", method, path, query, rec.Code, *env.Code)
		}
		for _, m := range s.Sent() {
			var obj map[string]any
			if json.Unmarshal([]byte(m.Content), &obj) != nil {
				t.Fatalf("sent content that is not a JSON object: %q", m.Content)
			}
		}
	})
}

func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, c := range m {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", c) {
			return false
		}
	}
	return true
}

func httpBody(s string) *bodyReader { return &bodyReader{Reader: strings.NewReader(s)} }

type bodyReader struct{ *strings.Reader }

func (bodyReader) Close() error { return nil }

// FuzzPageToken: a page token reads back as the position it was made
// from, and garbage never panics.
func FuzzPageToken(f *testing.F) {
	f.Add(int64(1760000000000), uint64(7), "c2ltMS4xLjE")
	f.Add(int64(-1), uint64(0), "!!")
	f.Fuzz(func(t *testing.T, msv int64, seq uint64, garbage string) {
		c := cursorKey{msv, seq}
		got, err := parsePageToken(c.token())
		if err != nil || got != c {
			t.Fatalf("token of %+v read back as %+v, %v", c, got, err)
		}
		if g, err := parsePageToken(garbage); err == nil && g.token() != garbage {
			// Other spellings of a position are fine as long as they parse
			// to a position whose own token parses back to it.
			if back, err := parsePageToken(g.token()); err != nil || back != g {
				t.Fatalf("%q read as %+v, which does not round-trip", garbage, g)
			}
		}
	})
}
