package feishusim

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
)

func TestAddMessageRejectsBadInput(t *testing.T) {
	s := New(Options{})
	must(t, s.AddChat(chatGroup, ChatGroup))
	if err := s.AddChat("", ChatGroup); err == nil {
		t.Error("empty chat id accepted")
	}
	if err := s.AddChat("oc_x", "channel"); err == nil {
		t.Error("unknown chat kind accepted")
	}
	if err := s.AddUser("", "x"); err == nil {
		t.Error("empty open_id accepted")
	}
	mustAdd(t, s, Message{ID: "om_1", ChatID: chatGroup, SenderID: userA})
	for name, m := range map[string]Message{
		"unknown chat":       {ChatID: "oc_nowhere", SenderID: userA},
		"duplicate id":       {ID: "om_1", ChatID: chatGroup, SenderID: userA},
		"no sender":          {ChatID: chatGroup},
		"children on text":   {ChatID: chatGroup, SenderID: userA, Children: []Message{{SenderID: userA}}},
		"duplicate child id": {ChatID: chatGroup, SenderID: userA, MsgType: "merge_forward", Children: []Message{{ID: "om_x", SenderID: userA}, {ID: "om_x", SenderID: userA}}},
		"child reuses an id": {ID: "om_2", ChatID: chatGroup, SenderID: userA, MsgType: "merge_forward", Children: []Message{{ID: "om_1", SenderID: userA}}},
	} {
		if _, err := s.AddMessage(m); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Nothing of a rejected tree was stored.
	if _, ok := s.Message("om_2"); ok {
		t.Error("the container of a rejected tree was stored")
	}
	if _, ok := s.Message("om_x"); ok {
		t.Error("a child of a rejected tree was stored")
	}
	// Nesting deeper than the limit is an error, not a stack overflow.
	deep := Message{SenderID: userA}
	for range maxTreeDepth + 2 {
		deep = Message{SenderID: userA, MsgType: "merge_forward", Children: []Message{deep}}
	}
	deep.ChatID = chatGroup
	if _, err := s.AddMessage(deep); err == nil {
		t.Error("over-deep merge_forward accepted")
	}
}

func TestAddMessageDefaultsAndCopies(t *testing.T) {
	clock := newClock()
	s := New(Options{Now: clock.Now})
	must(t, s.AddP2PChat("oc_dm", userA))
	res := map[string][]byte{"k": []byte("v")}
	id := mustAdd(t, s, Message{ChatID: "oc_dm", Resources: res, Children: nil})
	res["k"][0] = 'X'
	m, ok := s.Message(id)
	if !ok || m.SenderID != userA || m.SenderType != SenderUser || m.MsgType != "text" || !m.CreateTime.Equal(clock.Now()) ||
		!m.UpdateTime.Equal(m.CreateTime) || string(m.Resources["k"]) != "v" || !strings.HasPrefix(id, "om_") {
		t.Errorf("stored %+v", m)
	}
	bot := mustAdd(t, s, Message{ChatID: "oc_dm", SenderID: "cli_other"})
	if m, _ := s.Message(bot); m.SenderType != SenderApp {
		t.Errorf("app sender stored as %q", m.SenderType)
	}
	fwd := mustAdd(t, s, Message{ChatID: "oc_dm", MsgType: "merge_forward", Children: []Message{{ID: "om_k", SenderID: userB, ChatID: "oc_elsewhere"}}})
	if m, _ := s.Message(fwd); len(m.Children) != 1 || m.Children[0].UpperMessageID != fwd || m.Children[0].ChatID != "" {
		t.Errorf("merge_forward stored as %+v", m)
	}
}

func TestCallLogIsBounded(t *testing.T) {
	e := newEnv(t, Options{MaxCalls: 3})
	for range 5 {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+PathBotInfo, nil)
		res, err := http.DefaultClient.Do(req)
		must(t, err)
		res.Body.Close()
	}
	if n := len(e.sim.Calls("")); n != 3 {
		t.Errorf("kept %d calls, want 3", n)
	}
	quiet := New(Options{MaxCalls: -1})
	quiet.Handler().ServeHTTP(discard{}, mustRequest(t, PathBotInfo))
	if n := len(quiet.Calls("")); n != 0 {
		t.Errorf("MaxCalls -1 kept %d calls", n)
	}
}

type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

func mustRequest(t *testing.T, path string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, "http://sim"+path, nil)
	must(t, err)
	return r
}

func TestUnknownPathsAndMethods(t *testing.T) {
	e := newEnv(t, Options{})
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/open-apis/im/v1/chats", http.StatusNotFound},
		{http.MethodGet, PathMessages + "/om_1/reply", http.StatusMethodNotAllowed},
		{http.MethodDelete, PathMessages, http.StatusMethodNotAllowed},
		{http.MethodGet, PathMessages + "/om_1/reactions/", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(tc.method, e.srv.URL+tc.path, nil)
		res, err := http.DefaultClient.Do(req)
		must(t, err)
		res.Body.Close()
		if res.StatusCode != tc.status {
			t.Errorf("%s %s: HTTP %d, want %d", tc.method, tc.path, res.StatusCode, tc.status)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	e := newEnv(t, Options{})
	setupChat(t, e.sim)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 10 {
				resp, err := e.client.Im.Message.Create(context.Background(), larkim.NewCreateMessageReqBuilder().ReceiveIdType("chat_id").
					Body(larkim.NewCreateMessageReqBodyBuilder().ReceiveId(chatGroup).MsgType("text").
						Content(textContent("x")).Uuid(fmt.Sprintf("u-%d-%d", g, i%5)).Build()).Build())
				if err != nil || !resp.Success() {
					t.Errorf("create: %v", err)
					return
				}
			}
		})
		wg.Go(func() {
			for range 10 {
				_ = e.sim.Sent()
				_ = e.sim.Calls(PathMessages)
				mustAdd(t, e.sim, Message{ChatID: chatGroup, SenderID: userB, CreateTime: time.Unix(1, 0)})
			}
		})
	}
	wg.Wait()
	if n := len(e.sim.Sent()); n != 20 {
		t.Errorf("%d messages sent for 20 distinct uuids", n)
	}
}

func TestScrambleNeverSortsSiblings(t *testing.T) {
	mk := func(times map[string]time.Time) []*record {
		var rs []*record
		for i := range 6 {
			id := fmt.Sprintf("om_s%d", i)
			rs = append(rs, &record{m: Message{ID: id, UpperMessageID: "om_top", CreateTime: times[id]}})
		}
		return rs
	}
	first := scramble(mk(nil), "om_top")
	// Give the children times that follow the order scramble chose: the
	// order it picks now must still not be create_time order.
	times := map[string]time.Time{}
	for i, r := range first {
		times[r.m.ID] = time.Unix(int64(i), 0)
	}
	second := scramble(mk(times), "om_top")
	if slices.IsSortedFunc(second, func(a, b *record) int { return a.m.CreateTime.Compare(b.m.CreateTime) }) {
		t.Errorf("siblings in create_time order")
	}
	if again := scramble(mk(times), "om_top"); !slices.EqualFunc(again, second, func(a, b *record) bool { return a.m.ID == b.m.ID }) {
		t.Error("the order is not deterministic")
	}
}
