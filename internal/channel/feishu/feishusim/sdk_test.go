package feishusim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	lark "github.com/larksuite/oapi-sdk-go/v3"
	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
)

const (
	chatGroup = "oc_group0000000000000000000001"
	userA     = "ou_aaaa0000000000000000000000000a"
	userB     = "ou_bbbb0000000000000000000000000b"
)

func TestTokenThenBearerCall(t *testing.T) {
	e := newEnv(t, Options{BotName: "Helper", BotOpenID: "ou_bot1"})
	ctx := context.Background()
	resp, err := e.client.Get(ctx, PathBotInfo, nil, larkcore.AccessTokenTypeTenant)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
		Bot  struct {
			OpenID         string `json:"open_id"`
			AppName        string `json:"app_name"`
			ActivateStatus int    `json:"activate_status"`
		} `json:"bot"`
	}
	must(t, json.Unmarshal(resp.RawBody, &info))
	if info.Code != 0 || info.Msg != "ok" || info.Bot.OpenID != "ou_bot1" || info.Bot.AppName != "Helper" || info.Bot.ActivateStatus != 2 {
		t.Errorf("bot info: %s", resp.RawBody)
	}
	calls := e.sim.Calls("")
	if len(calls) != 2 || calls[0].Path != PathTenantToken || calls[1].Path != PathBotInfo {
		t.Fatalf("calls: %+v", calls)
	}
	if calls[1].Token == "" || e.sim.TokensIssued() != 1 {
		t.Errorf("bot info sent token %q; %d tokens issued", calls[1].Token, e.sim.TokensIssued())
	}
	// The SDK cached the token: a second call fetches none.
	_, err = e.client.Get(ctx, PathBotInfo, nil, larkcore.AccessTokenTypeTenant)
	must(t, err)
	if n := len(e.sim.Calls(PathTenantToken)); n != 1 {
		t.Errorf("token fetched %d times, want 1", n)
	}
}

func TestTokenEndpoint(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	opts := e.sim.Options()
	req := &larkcore.SelfBuiltTenantAccessTokenReq{AppID: opts.AppID, AppSecret: opts.AppSecret}
	first, err := e.client.GetTenantAccessTokenBySelfBuiltApp(ctx, req)
	must(t, err)
	second, err := e.client.GetTenantAccessTokenBySelfBuiltApp(ctx, req)
	must(t, err)
	if !first.Success() || first.Expire != 7200 || first.TenantAccessToken == "" {
		t.Errorf("token: %+v", first)
	}
	if first.TenantAccessToken == second.TenantAccessToken {
		t.Errorf("two fetches gave the same token %q", first.TenantAccessToken)
	}

	wrong, err := e.client.GetTenantAccessTokenBySelfBuiltApp(ctx, &larkcore.SelfBuiltTenantAccessTokenReq{AppID: opts.AppID, AppSecret: "nope"})
	must(t, err)
	if wrong.Code != CodeAppSecretInvalid || wrong.TenantAccessToken != "" {
		t.Errorf("wrong secret: code %d token %q", wrong.Code, wrong.TenantAccessToken)
	}

	// A client with the wrong secret fails before its first API call.
	bad := lark.NewClient(opts.AppID+"x", "nope", lark.WithOpenBaseUrl(e.srv.URL), lark.WithLogLevel(larkcore.LogLevelError))
	_, err = bad.Get(ctx, PathBotInfo, nil, larkcore.AccessTokenTypeTenant)
	var ce larkcore.CodeError
	if !errors.As(err, &ce) || ce.Code != CodeAppIDInvalid {
		t.Errorf("client with unknown app: %v", err)
	}
}

func TestMissingOrWrongBearer(t *testing.T) {
	e := newEnv(t, Options{})
	for _, tc := range []struct {
		auth string
		code int
	}{{"", CodeTokenMissing}, {"Bearer t-forged", CodeTokenInvalid}} {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+PathBotInfo, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		res, err := http.DefaultClient.Do(req)
		must(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var env rawEnvelope
		must(t, json.Unmarshal(body, &env))
		if res.StatusCode != http.StatusBadRequest || env.Code != tc.code {
			t.Errorf("auth %q: HTTP %d %s", tc.auth, res.StatusCode, body)
		}
	}
}

func TestTokenInvalidationAndRefresh(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	chatMsg := setupChat(t, e.sim)
	get := func(opts ...larkcore.RequestOptionFunc) *larkim.GetMessageResp {
		t.Helper()
		resp, err := e.client.Im.Message.Get(ctx, larkim.NewGetMessageReqBuilder().MessageId(chatMsg).Build(), opts...)
		must(t, err)
		return resp
	}
	if r := get(); !r.Success() {
		t.Fatalf("first get: %d %s", r.Code, r.Msg)
	}
	stale := e.sim.Calls(PathMessages + "/" + chatMsg)[0].Token

	e.sim.InvalidateTokens()
	r := get()
	if r.Code != CodeTokenInvalid || r.StatusCode != http.StatusBadRequest {
		t.Fatalf("after invalidation: HTTP %d code %d", r.StatusCode, r.Code)
	}
	// The SDK retries with the cached token, which stays stale.
	calls := e.sim.Calls(PathMessages + "/" + chatMsg)
	if len(calls) != 3 {
		t.Fatalf("%d calls, want the first and two stale attempts", len(calls))
	}
	for _, c := range calls[1:] {
		if c.Token != stale || c.Code != CodeTokenInvalid {
			t.Errorf("retry carried %q (code %d), want the stale token", c.Token, c.Code)
		}
	}

	// The refresh path: fetch a fresh token and pass it explicitly.
	opts := e.sim.Options()
	fresh, err := e.client.GetTenantAccessTokenBySelfBuiltApp(ctx, &larkcore.SelfBuiltTenantAccessTokenReq{AppID: opts.AppID, AppSecret: opts.AppSecret})
	must(t, err)
	if r := get(larkcore.WithTenantAccessToken(fresh.TenantAccessToken)); !r.Success() {
		t.Errorf("with a fresh token: %d %s", r.Code, r.Msg)
	}

	// Tokens also expire with the clock.
	e.clock.Advance(DefaultTokenTTL)
	if r := get(larkcore.WithTenantAccessToken(fresh.TenantAccessToken)); r.Code != CodeTokenInvalid {
		t.Errorf("expired token: code %d", r.Code)
	}
}

// setupChat adds two users, a group and one text message in it.
func setupChat(t *testing.T, s *Sim) string {
	t.Helper()
	must(t, s.AddUser(userA, "张三"))
	must(t, s.AddUser(userB, "李四"))
	must(t, s.AddChat(chatGroup, ChatGroup))
	return mustAdd(t, s, Message{
		ID: "om_text1", ChatID: chatGroup, SenderID: userA,
		Content:  `{"text":"@_user_1 方案见附件"}`,
		Mentions: []Mention{{Key: "@_user_1", ID: userB, Name: "李四"}},
	})
}

func TestGetMessage(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	id := setupChat(t, e.sim)
	resp, err := e.client.Im.Message.Get(ctx, larkim.NewGetMessageReqBuilder().MessageId(id).UserIdType("open_id").Build())
	must(t, err)
	if !resp.Success() || len(resp.Data.Items) != 1 {
		t.Fatalf("get: %d %s %v", resp.Code, resp.Msg, resp.Data)
	}
	it := resp.Data.Items[0]
	if str(it.MessageId) != id || str(it.MsgType) != "text" || str(it.ChatId) != chatGroup ||
		str(it.Body.Content) != `{"text":"@_user_1 方案见附件"}` || str(it.Sender.Id) != userA ||
		str(it.Sender.IdType) != "open_id" || str(it.Sender.SenderType) != "user" ||
		it.Deleted == nil || *it.Deleted || it.UpperMessageId != nil {
		t.Errorf("item: %s", larkcore.Prettify(it))
	}
	if want := fmt.Sprint(newClock().Now().UnixMilli()); str(it.CreateTime) != want {
		t.Errorf("create_time %s, want %s", str(it.CreateTime), want)
	}
	if len(it.Mentions) != 1 || str(it.Mentions[0].Id) != userB || str(it.Mentions[0].Name) != "李四" || str(it.Mentions[0].Key) != "@_user_1" {
		t.Errorf("mentions: %s", larkcore.Prettify(it.Mentions))
	}

	// user_id_type converts users, not the bot.
	resp, err = e.client.Im.Message.Get(ctx, larkim.NewGetMessageReqBuilder().MessageId(id).UserIdType("union_id").Build())
	must(t, err)
	it = resp.Data.Items[0]
	if str(it.Sender.Id) != UnionID(userA) || str(it.Sender.IdType) != "union_id" || str(it.Mentions[0].Id) != UnionID(userB) {
		t.Errorf("union ids: %s", larkcore.Prettify(it))
	}

	// Unknown and recalled messages.
	resp, err = e.client.Im.Message.Get(ctx, larkim.NewGetMessageReqBuilder().MessageId("om_nowhere").Build())
	must(t, err)
	if resp.Code != CodeDeleted {
		t.Errorf("unknown message: code %d", resp.Code)
	}
	must(t, e.sim.Recall(id))
	resp, err = e.client.Im.Message.Get(ctx, larkim.NewGetMessageReqBuilder().MessageId(id).Build())
	must(t, err)
	if it := resp.Data.Items[0]; !*it.Deleted || str(it.Body.Content) != recalledText {
		t.Errorf("recalled: %s", larkcore.Prettify(it))
	}
}

func TestCardContentTypes(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	setupChat(t, e.sim)
	card := `{"schema":"2.0","header":{"title":{"tag":"plain_text","content":"构建结果"}},"body":{"elements":[{"tag":"markdown","content":"**失败**"}]}}`
	id := mustAdd(t, e.sim, Message{ChatID: chatGroup, SenderID: "cli_other", MsgType: "interactive", Content: DegradedCard, CardContent: card})
	for _, tc := range []struct{ query, want string }{
		{"", DegradedCard},
		{"?card_msg_content_type=user_card_content&user_id_type=open_id", card},
	} {
		env := decodeRaw(t)(e.client.Get(ctx, PathMessages+"/"+id+tc.query, nil, larkcore.AccessTokenTypeTenant))
		var data larkim.GetMessageRespData
		must(t, json.Unmarshal(env.Data, &data))
		it := data.Items[0]
		if str(it.Body.Content) != tc.want || str(it.Sender.IdType) != "app_id" || str(it.Sender.SenderType) != "app" {
			t.Errorf("%q: %s", tc.query, larkcore.Prettify(it))
		}
	}
}

// addForward stores the merge_forward of the reference's example: three
// children, the third a merge_forward holding one bot message.
func addForward(t *testing.T, s *Sim) string {
	t.Helper()
	must(t, s.AddChat("oc_p2p_chat", ChatP2P))
	base := time.UnixMilli(1759990000000)
	return mustAdd(t, s, Message{
		ID: "om_fwd", ChatID: "oc_p2p_chat", SenderID: userA, MsgType: "merge_forward",
		CreateTime: time.UnixMilli(1760000100000),
		Children: []Message{
			{ID: "om_c1", SenderID: userB, CreateTime: base, Content: `{"text":"@_user_1 告警已恢复"}`,
				Mentions: []Mention{{Key: "@_user_1", ID: userA, Name: "张三"}}},
			{ID: "om_c2", SenderID: userA, MsgType: "image", CreateTime: base.Add(time.Minute),
				Content: `{"image_key":"img_c2"}`, Resources: map[string][]byte{"img_c2": []byte("PNG")}},
			{ID: "om_c3", SenderID: userB, MsgType: "merge_forward", CreateTime: base.Add(2 * time.Minute),
				Children: []Message{{ID: "om_c3a", SenderID: "cli_alarm", CreateTime: base.Add(-time.Hour), Content: `{"text":"[告警] CPU > 90%"}`}}},
			{ID: "om_c4", SenderID: userA, CreateTime: base.Add(3 * time.Minute), Content: `{"text":"收到"}`},
		},
	})
}

func TestMergeForwardFlatAnswer(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	id := addForward(t, e.sim)
	get := func(id string) []*larkim.Message {
		t.Helper()
		resp, err := e.client.Im.Message.Get(ctx, larkim.NewGetMessageReqBuilder().MessageId(id).Build())
		must(t, err)
		if !resp.Success() {
			t.Fatalf("get %s: %d %s", id, resp.Code, resp.Msg)
		}
		return resp.Data.Items
	}
	items := get(id)
	upper := map[string]string{}
	var order []string
	for _, it := range items {
		upper[str(it.MessageId)] = str(it.UpperMessageId)
		order = append(order, str(it.MessageId))
	}
	want := map[string]string{"om_fwd": "<nil>", "om_c1": "om_fwd", "om_c2": "om_fwd", "om_c3": "om_fwd", "om_c3a": "om_c3", "om_c4": "om_fwd"}
	if fmt.Sprint(upper) != fmt.Sprint(want) || order[0] != "om_fwd" {
		t.Fatalf("items %v, upper ids %v", order, upper)
	}
	if c := str(items[0].Body.Content); c != mergeForwardText {
		t.Errorf("container body %q", c)
	}
	for _, it := range items {
		if str(it.MessageId) == "om_c3" && str(it.Body.Content) != `{"content":"Merged and Forwarded Message"}` {
			t.Errorf("nested container body %q", str(it.Body.Content))
		}
		if str(it.MessageId) == "om_c3a" && (str(it.Sender.IdType) != "app_id" || it.ChatId != nil) {
			t.Errorf("bot child: %s", larkcore.Prettify(it))
		}
	}
	// The container's children are not in create_time order, and the
	// order is the same every time.
	var times []string
	for _, it := range items {
		if str(it.UpperMessageId) == "om_fwd" {
			times = append(times, str(it.CreateTime))
		}
	}
	if len(times) != 4 || slices.IsSorted(times) {
		t.Errorf("children came in create_time order: %v", order)
	}
	var again []string
	for _, it := range get(id) {
		again = append(again, str(it.MessageId))
	}
	if !slices.Equal(order, again) {
		t.Errorf("order changed: %v then %v", order, again)
	}

	// One level: the nested container needs its own GET.
	e.sim.OneLevel(id)
	var ids []string
	for _, it := range get(id) {
		ids = append(ids, str(it.MessageId))
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"om_c1", "om_c2", "om_c3", "om_c4", "om_fwd"}) {
		t.Errorf("one level: %v", ids)
	}
	nested := get("om_c3")
	if len(nested) != 2 || str(nested[0].MessageId) != "om_c3" || str(nested[1].MessageId) != "om_c3a" || str(nested[1].UpperMessageId) != "om_c3" {
		t.Errorf("nested get: %s", larkcore.Prettify(nested))
	}
	// A child alone is its own items[0].
	if child := get("om_c2"); len(child) != 1 || str(child[0].MsgType) != "image" {
		t.Errorf("child get: %s", larkcore.Prettify(child))
	}
}

func TestListPaging(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	must(t, e.sim.AddUser(userA, "张三"))
	must(t, e.sim.AddChat(chatGroup, ChatGroup))
	base := time.Unix(1760000000, 0)
	var all []string
	for i := range 120 {
		m := Message{ChatID: chatGroup, SenderID: userA, CreateTime: base.Add(time.Duration(i) * time.Second), Content: fmt.Sprintf(`{"text":"%d"}`, i)}
		if i == 60 {
			m.MsgType = "merge_forward"
			m.Content = ""
			m.Children = []Message{{ID: "om_inner", SenderID: userA, Content: `{"text":"inner"}`}}
		}
		all = append(all, mustAdd(t, e.sim, m))
	}
	// A topic reply is listed in its thread, not in the chat.
	mustAdd(t, e.sim, Message{ID: "om_topic_reply", ChatID: chatGroup, SenderID: userA, RootID: all[0], ThreadID: "omt_1", CreateTime: base.Add(10 * time.Second)})

	list := func(sort string, start, end int64) []string {
		t.Helper()
		req := larkim.NewListMessageReqBuilder().ContainerIdType("chat").ContainerId(chatGroup).
			SortType(sort).PageSize(50)
		if start > 0 {
			req.StartTime(fmt.Sprint(start)).EndTime(fmt.Sprint(end))
		}
		it, err := e.client.Im.Message.ListByIterator(ctx, req.Build())
		must(t, err)
		var ids []string
		for {
			more, m, err := it.Next()
			must(t, err)
			if !more {
				return ids
			}
			if str(m.MessageId) == all[60] && str(m.Body.Content) != mergeForwardText {
				t.Errorf("merge_forward in a list: %q", str(m.Body.Content))
			}
			ids = append(ids, str(m.MessageId))
		}
	}
	before := len(e.sim.Calls(PathMessages))
	if got := list("ByCreateTimeAsc", 0, 0); !slices.Equal(got, all) {
		t.Errorf("asc: %d items, first %v", len(got), got[:min(3, len(got))])
	}
	if n := len(e.sim.Calls(PathMessages)) - before; n != 3 {
		t.Errorf("120 messages took %d pages of 50", n)
	}
	rev := slices.Clone(all)
	slices.Reverse(rev)
	if got := list("ByCreateTimeDesc", 0, 0); !slices.Equal(got, rev) {
		t.Errorf("desc: %d items", len(got))
	}
	// The range is in seconds and takes both ends.
	if got := list("ByCreateTimeAsc", base.Unix()+10, base.Unix()+19); !slices.Equal(got, all[10:20]) {
		t.Errorf("range: %v", got)
	}

	resp, err := e.client.Im.Message.List(ctx, larkim.NewListMessageReqBuilder().ContainerIdType("chat").ContainerId(chatGroup).PageSize(51).Build())
	must(t, err)
	if resp.Code != CodeFieldValidation {
		t.Errorf("page_size 51: code %d", resp.Code)
	}
	resp, err = e.client.Im.Message.List(ctx, larkim.NewListMessageReqBuilder().ContainerIdType("thread").ContainerId("omt_1").Build())
	must(t, err)
	if !resp.Success() || len(resp.Data.Items) != 1 || str(resp.Data.Items[0].MessageId) != "om_topic_reply" || *resp.Data.HasMore || resp.Data.PageToken != nil {
		t.Errorf("thread list: %d %s", resp.Code, larkcore.Prettify(resp.Data))
	}
}

func TestListCursorSurvivesNewMessages(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	setupChat(t, e.sim) // om_text1 at the clock's time
	for i := range 4 {
		e.clock.Advance(time.Second)
		mustAdd(t, e.sim, Message{ID: fmt.Sprintf("om_%d", i), ChatID: chatGroup, SenderID: userA})
	}
	req := func(token string) *larkim.ListMessageResp {
		b := larkim.NewListMessageReqBuilder().ContainerIdType("chat").ContainerId(chatGroup).SortType("ByCreateTimeDesc").PageSize(2)
		if token != "" {
			b.PageToken(token)
		}
		resp, err := e.client.Im.Message.List(ctx, b.Build())
		must(t, err)
		return resp
	}
	first := req("")
	// A new message arrives between pages; the next page does not repeat.
	e.clock.Advance(time.Second)
	mustAdd(t, e.sim, Message{ID: "om_late", ChatID: chatGroup, SenderID: userA})
	second := req(str(first.Data.PageToken))
	var ids []string
	for _, p := range []*larkim.ListMessageResp{first, second} {
		for _, it := range p.Data.Items {
			ids = append(ids, str(it.MessageId))
		}
	}
	if !slices.Equal(ids, []string{"om_3", "om_2", "om_1", "om_0"}) {
		t.Errorf("pages: %v", ids)
	}
	bad, err := e.client.Im.Message.List(ctx, larkim.NewListMessageReqBuilder().ContainerIdType("chat").ContainerId(chatGroup).PageToken("garbage!").Build())
	must(t, err)
	if bad.Code != CodeFieldValidation {
		t.Errorf("bad page token: code %d", bad.Code)
	}
}

func createText(t *testing.T, e *env, receiveType, receiveID, text, uuid string) *larkim.CreateMessageResp {
	t.Helper()
	body := larkim.NewCreateMessageReqBodyBuilder().ReceiveId(receiveID).MsgType("text").Content(textContent(text))
	if uuid != "" {
		body.Uuid(uuid)
	}
	resp, err := e.client.Im.Message.Create(context.Background(),
		larkim.NewCreateMessageReqBuilder().ReceiveIdType(receiveType).Body(body.Build()).Build())
	must(t, err)
	return resp
}

func textContent(text string) string {
	b, _ := json.Marshal(map[string]string{"text": text})
	return string(b)
}

func TestCreateAndReply(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	target := setupChat(t, e.sim)
	created := createText(t, e, larkim.ReceiveIdTypeChatId, chatGroup, "hello", "")
	if !created.Success() || str(created.Data.ChatId) != chatGroup || str(created.Data.Sender.SenderType) != "app" {
		t.Fatalf("create: %d %s %s", created.Code, created.Msg, larkcore.Prettify(created.Data))
	}
	reply, err := e.client.Im.Message.Reply(ctx, larkim.NewReplyMessageReqBuilder().MessageId(target).
		Body(larkim.NewReplyMessageReqBodyBuilder().MsgType("text").Content(textContent("re")).ReplyInThread(true).Uuid("u-reply").Build()).Build())
	must(t, err)
	if !reply.Success() || str(reply.Data.ParentId) != target || str(reply.Data.RootId) != target || reply.Data.ThreadId == nil {
		t.Fatalf("reply: %d %s %s", reply.Code, reply.Msg, larkcore.Prettify(reply.Data))
	}
	p2p := createText(t, e, larkim.ReceiveIdTypeOpenId, userB, "私聊", "")
	if !p2p.Success() {
		t.Fatalf("create to open_id: %d %s", p2p.Code, p2p.Msg)
	}
	sent := e.sim.Sent()
	want := []SentMessage{
		{MessageID: str(created.Data.MessageId), ChatID: chatGroup, ReceiveIDType: "chat_id", ReceiveID: chatGroup, MsgType: "text", Content: `{"text":"hello"}`},
		{MessageID: str(reply.Data.MessageId), ChatID: chatGroup, MsgType: "text", Content: `{"text":"re"}`, UUID: "u-reply", ReplyTo: target, ReplyInThread: true},
		{MessageID: str(p2p.Data.MessageId), ChatID: str(p2p.Data.ChatId), ReceiveIDType: "open_id", ReceiveID: userB, MsgType: "text", Content: `{"text":"私聊"}`},
	}
	for i := range sent {
		sent[i].Time = time.Time{}
	}
	if fmt.Sprintf("%+v", sent) != fmt.Sprintf("%+v", want) {
		t.Errorf("sent:\n%+v\nwant\n%+v", sent, want)
	}
	// What the bot sent can be read back.
	got, err := e.client.Im.Message.Get(ctx, larkim.NewGetMessageReqBuilder().MessageId(str(reply.Data.MessageId)).Build())
	must(t, err)
	if !got.Success() || str(got.Data.Items[0].Sender.Id) != e.sim.Options().AppID {
		t.Errorf("get sent: %d %s", got.Code, larkcore.Prettify(got.Data))
	}
	if m, _ := e.sim.Message(target); m.ThreadID != str(reply.Data.ThreadId) {
		t.Errorf("root thread %q, reply thread %q", m.ThreadID, str(reply.Data.ThreadId))
	}
	// Unknown receivers.
	if r := createText(t, e, larkim.ReceiveIdTypeChatId, "oc_unknown", "x", ""); r.Code != CodeBotNotInChat {
		t.Errorf("unknown chat: code %d", r.Code)
	}
	if r := createText(t, e, larkim.ReceiveIdTypeOpenId, "ou_unknown", "x", ""); r.Code != CodeUserUnavailable {
		t.Errorf("unknown user: code %d", r.Code)
	}
}

func TestSentCardIsStoredBothWays(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	setupChat(t, e.sim)
	card := `{"schema":"2.0","config":{"update_multi":true},"body":{"elements":[{"tag":"markdown","content":"hi"}]}}`
	resp, err := e.client.Im.Message.Create(ctx, larkim.NewCreateMessageReqBuilder().ReceiveIdType("chat_id").
		Body(larkim.NewCreateMessageReqBodyBuilder().ReceiveId(chatGroup).MsgType("interactive").Content(card).Build()).Build())
	must(t, err)
	m, ok := e.sim.Message(str(resp.Data.MessageId))
	if !resp.Success() || !ok || m.CardContent != card || m.Content != DegradedCard {
		t.Errorf("sent card stored as %+v", m)
	}
}

func TestUUIDIdempotency(t *testing.T) {
	e := newEnv(t, Options{})
	setupChat(t, e.sim)
	first := createText(t, e, "chat_id", chatGroup, "once", "reply-om_text1-0")
	again := createText(t, e, "chat_id", chatGroup, "once", "reply-om_text1-0")
	if !first.Success() || !again.Success() || str(first.Data.MessageId) != str(again.Data.MessageId) {
		t.Fatalf("same uuid: %s then %s", str(first.Data.MessageId), str(again.Data.MessageId))
	}
	if n := len(e.sim.Sent()); n != 1 {
		t.Errorf("%d messages recorded for one uuid", n)
	}
	// A reply with the uuid also returns the first message.
	resp, err := e.client.Im.Message.Reply(context.Background(), larkim.NewReplyMessageReqBuilder().MessageId("om_text1").
		Body(larkim.NewReplyMessageReqBodyBuilder().MsgType("text").Content(textContent("x")).Uuid("reply-om_text1-0").Build()).Build())
	must(t, err)
	if str(resp.Data.MessageId) != str(first.Data.MessageId) || len(e.sim.Sent()) != 1 {
		t.Errorf("reply with a used uuid: %s", str(resp.Data.MessageId))
	}
	// After an hour the uuid is free again.
	e.clock.Advance(time.Hour)
	later := createText(t, e, "chat_id", chatGroup, "once", "reply-om_text1-0")
	if str(later.Data.MessageId) == str(first.Data.MessageId) || len(e.sim.Sent()) != 2 {
		t.Errorf("uuid after an hour: %s", str(later.Data.MessageId))
	}
	if r := createText(t, e, "chat_id", chatGroup, "x", strings.Repeat("u", 51)); r.Code != CodeFieldValidation {
		t.Errorf("51-character uuid: code %d", r.Code)
	}
}

func TestSizeLimits(t *testing.T) {
	e := newEnv(t, Options{})
	setupChat(t, e.sim)
	send := func(msgType, content string) int {
		t.Helper()
		resp, err := e.client.Im.Message.Create(context.Background(), larkim.NewCreateMessageReqBuilder().ReceiveIdType("chat_id").
			Body(larkim.NewCreateMessageReqBodyBuilder().ReceiveId(chatGroup).MsgType(msgType).Content(content).Build()).Build())
		must(t, err)
		return resp.Code
	}
	pad := func(prefix, suffix string, total int) string {
		return prefix + strings.Repeat("a", total-len(prefix)-len(suffix)) + suffix
	}
	for _, tc := range []struct {
		msgType, content string
		code             int
	}{
		{"text", pad(`{"text":"`, `"}`, 150<<10), 0},
		{"text", pad(`{"text":"`, `"}`, 150<<10+1), CodeContentTooLong},
		{"post", pad(`{"zh_cn":{"title":"`, `","content":[]}}`, 30<<10), 0},
		{"post", pad(`{"zh_cn":{"title":"`, `","content":[]}}`, 30<<10+1), CodeContentTooLong},
		{"interactive", pad(`{"elements":[{"tag":"markdown","content":"`, `"}]}`, 30<<10+1), CodeContentTooLong},
		{"text", `not json`, CodeInvalidParam},
		{"bogus", `{"text":"x"}`, CodeFieldValidation},
	} {
		if code := send(tc.msgType, tc.content); code != tc.code {
			t.Errorf("%s of %d bytes: code %d, want %d", tc.msgType, len(tc.content), code, tc.code)
		}
	}
	if n := len(e.sim.Sent()); n != 2 {
		t.Errorf("%d messages recorded, want the 2 within limits", n)
	}
}

func TestReplyTargets(t *testing.T) {
	e := newEnv(t, Options{})
	id := setupChat(t, e.sim)
	addForward(t, e.sim)
	must(t, e.sim.Recall(id))
	for _, tc := range []struct {
		target string
		code   int
	}{{id, CodeRecalled}, {"om_gone", CodeDeleted}, {"om_c1", CodeReplyUnavailable}} {
		resp, err := e.client.Im.Message.Reply(context.Background(), larkim.NewReplyMessageReqBuilder().MessageId(tc.target).
			Body(larkim.NewReplyMessageReqBodyBuilder().MsgType("text").Content(textContent("x")).Build()).Build())
		if err != nil || resp.Code != tc.code || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("reply to %s: err %v, HTTP %d code %d, want %d", tc.target, err, resp.StatusCode, resp.Code, tc.code)
		}
	}
	if len(e.sim.Sent()) != 0 {
		t.Errorf("failed replies recorded: %+v", e.sim.Sent())
	}
}

func TestReactions(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	id := setupChat(t, e.sim)
	add, err := e.client.Im.MessageReaction.Create(ctx, larkim.NewCreateMessageReactionReqBuilder().MessageId(id).
		Body(larkim.NewCreateMessageReactionReqBodyBuilder().ReactionType(larkim.NewEmojiBuilder().EmojiType("Typing").Build()).Build()).Build())
	must(t, err)
	if !add.Success() || add.Data.ReactionId == nil || str(add.Data.ReactionType.EmojiType) != "Typing" || str(add.Data.Operator.OperatorType) != "app" {
		t.Fatalf("add reaction: %d %s", add.Code, larkcore.Prettify(add.Data))
	}
	if r := e.sim.Reactions(); len(r) != 1 || r[0].Removed || r[0].EmojiType != "Typing" || r[0].MessageID != id {
		t.Errorf("after add: %+v", r)
	}
	e.clock.Advance(time.Second)
	del, err := e.client.Im.MessageReaction.Delete(ctx, larkim.NewDeleteMessageReactionReqBuilder().MessageId(id).ReactionId(*add.Data.ReactionId).Build())
	must(t, err)
	if !del.Success() || str(del.Data.ReactionId) != *add.Data.ReactionId {
		t.Fatalf("delete reaction: %d %s", del.Code, del.Msg)
	}
	r := e.sim.Reactions()
	if len(r) != 1 || !r[0].Removed || !r[0].RemovedAt.After(r[0].Added) {
		t.Errorf("after delete: %+v", r)
	}
	again, err := e.client.Im.MessageReaction.Delete(ctx, larkim.NewDeleteMessageReactionReqBuilder().MessageId(id).ReactionId(*add.Data.ReactionId).Build())
	must(t, err)
	if again.Success() {
		t.Error("deleting a removed reaction succeeded")
	}
	gone, err := e.client.Im.MessageReaction.Create(ctx, larkim.NewCreateMessageReactionReqBuilder().MessageId("om_gone").
		Body(larkim.NewCreateMessageReactionReqBodyBuilder().ReactionType(larkim.NewEmojiBuilder().EmojiType("Typing").Build()).Build()).Build())
	must(t, err)
	if gone.Code != CodeDeleted {
		t.Errorf("reaction on an unknown message: code %d", gone.Code)
	}
}

func TestBasicBatch(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	setupChat(t, e.sim)
	post := func(ids []string) rawEnvelope {
		t.Helper()
		return decodeRaw(t)(e.client.Post(ctx, PathBasicBatch+"?user_id_type=open_id", map[string]any{"user_ids": ids}, larkcore.AccessTokenTypeTenant))
	}
	env := post([]string{userA, "ou_stranger", userB})
	var data struct {
		Users []struct {
			UserID   string `json:"user_id"`
			Name     string `json:"name"`
			I18nName struct {
				ZhCN string `json:"zh_cn"`
			} `json:"i18n_name"`
		} `json:"users"`
	}
	must(t, json.Unmarshal(env.Data, &data))
	if env.Code != 0 || len(data.Users) != 2 || data.Users[0].UserID != userA || data.Users[0].Name != "张三" ||
		data.Users[1].Name != "李四" || data.Users[1].I18nName.ZhCN != "李四" {
		t.Errorf("basic_batch: %+v", env)
	}
	eleven := make([]string, 11)
	for i := range eleven {
		eleven[i] = fmt.Sprintf("ou_%d", i)
	}
	if env := post(eleven); env.Code != CodeFieldValidation {
		t.Errorf("11 ids: code %d", env.Code)
	}
	if env := post(eleven[:10]); env.Code != 0 {
		t.Errorf("10 ids: code %d", env.Code)
	}
	if got := e.sim.BasicBatchSizes(); !slices.Equal(got, []int{3, 11, 10}) {
		t.Errorf("batch sizes %v", got)
	}
	// Other id types map back to the same users.
	env = decodeRaw(t)(e.client.Post(ctx, PathBasicBatch+"?user_id_type=union_id", map[string]any{"user_ids": []string{UnionID(userB)}}, larkcore.AccessTokenTypeTenant))
	must(t, json.Unmarshal(env.Data, &data))
	if len(data.Users) != 1 || data.Users[0].Name != "李四" {
		t.Errorf("union_id lookup: %+v", data)
	}
}

func TestResources(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	setupChat(t, e.sim)
	fileMsg := mustAdd(t, e.sim, Message{ChatID: chatGroup, SenderID: userA, MsgType: "file",
		Content: `{"file_key":"file_v3_a","file_name":"报告.pdf"}`, Resources: map[string][]byte{"file_v3_a": []byte("%PDF-1.7")}})
	addForward(t, e.sim)
	get := func(msg, key, typ string) *larkim.GetMessageResourceResp {
		t.Helper()
		resp, err := e.client.Im.MessageResource.Get(ctx, larkim.NewGetMessageResourceReqBuilder().MessageId(msg).FileKey(key).Type(typ).Build())
		must(t, err)
		return resp
	}
	r := get(fileMsg, "file_v3_a", "file")
	if !r.Success() || r.File == nil || r.FileName != "报告.pdf" {
		t.Fatalf("download: %d %s name %q", r.Code, r.Msg, r.FileName)
	}
	if b, _ := io.ReadAll(r.File); string(b) != "%PDF-1.7" {
		t.Errorf("bytes %q", b)
	}
	if r := get(fileMsg, "file_v3_other", "file"); r.Code != CodeFileNotInMessage {
		t.Errorf("wrong key: code %d", r.Code)
	}
	// A forwarded image downloads through the child or the container.
	for _, id := range []string{"om_c2", "om_fwd"} {
		if r := get(id, "img_c2", "image"); !r.Success() {
			t.Errorf("image through %s: code %d", id, r.Code)
		}
	}
	if r := get("om_c1", "img_c2", "image"); r.Code != CodeFileNotInMessage {
		t.Errorf("image through a sibling: code %d", r.Code)
	}
}

func TestScriptedFaults(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	id := setupChat(t, e.sim)
	getMsg := func() *larkim.GetMessageResp {
		t.Helper()
		resp, err := e.client.Im.Message.Get(ctx, larkim.NewGetMessageReqBuilder().MessageId(id).Build())
		must(t, err)
		return resp
	}
	e.sim.FailNext(PathMessages+"/"+id, CodeNoPermission)
	if r := getMsg(); r.Code != CodeNoPermission || r.StatusCode != http.StatusBadRequest || r.Msg == "" {
		t.Errorf("scripted 230027: HTTP %d code %d %q", r.StatusCode, r.Code, r.Msg)
	}
	if r := getMsg(); !r.Success() {
		t.Errorf("after the fault: code %d", r.Code)
	}
	e.sim.FailNext(PathMessages+"/"+id+"?card_msg_content_type=user_card_content", CodeInvisible)
	if r := getMsg(); r.Code != CodeInvisible {
		t.Errorf("fault keyed with a query: code %d", r.Code)
	}

	e.sim.QueueFault(PathMessages+"/"+id, RateLimited(7))
	r := getMsg()
	if r.Code != CodeRateLimited || r.StatusCode != http.StatusTooManyRequests || r.Header.Get("x-ogw-ratelimit-reset") != "7" {
		t.Errorf("rate limited: HTTP %d code %d reset %q", r.StatusCode, r.Code, r.Header.Get("x-ogw-ratelimit-reset"))
	}

	// Method-qualified keys take precedence; queues drain in order.
	e.sim.QueueFault("post "+PathMessages, Fault{Code: CodeIMRateLimited})
	e.sim.FailNext(PathMessages, CodeBotNotInChat)
	if r := createText(t, e, "chat_id", chatGroup, "x", ""); r.Code != CodeIMRateLimited {
		t.Errorf("first create: code %d", r.Code)
	}
	if r := createText(t, e, "chat_id", chatGroup, "x", ""); r.Code != CodeBotNotInChat {
		t.Errorf("second create: code %d", r.Code)
	}
	if r := createText(t, e, "chat_id", chatGroup, "x", ""); !r.Success() {
		t.Errorf("third create: code %d", r.Code)
	}

	// A proxy's HTML error page is not JSON: the SDK reports an error.
	e.sim.QueueFault(PathMessages+"/"+id, Fault{Status: http.StatusBadGateway, Body: []byte("<html>502</html>")})
	if _, err := e.client.Im.Message.Get(ctx, larkim.NewGetMessageReqBuilder().MessageId(id).Build()); err == nil {
		t.Error("HTML 502 gave no error")
	}
	if c := e.sim.Calls(PathMessages + "/" + id); c[len(c)-1].Status != http.StatusBadGateway {
		t.Errorf("last call recorded %+v", c[len(c)-1])
	}

	// A fault never hides a bad token.
	e.sim.FailNext(PathBotInfo, CodeNoPermission)
	e.sim.InvalidateTokens()
	resp, err := e.client.Get(ctx, PathBotInfo, nil, larkcore.AccessTokenTypeTenant)
	if env := decodeRaw(t)(resp, err); env.Code != CodeTokenInvalid {
		t.Errorf("fault with a bad token: code %d", env.Code)
	}
	e.sim.ClearFaults()
}

func TestSendRateLimit(t *testing.T) {
	e := newEnv(t, Options{})
	setupChat(t, e.sim)
	must(t, e.sim.AddChat("oc_other", ChatGroup))
	for i := range 8 {
		if r := createText(t, e, "chat_id", chatGroup, "x", ""); !r.Success() {
			t.Fatalf("send %d with the limit off: code %d", i, r.Code)
		}
	}
	e.sim.SetSendRateLimit(true)
	for i := range 5 {
		if r := createText(t, e, "chat_id", chatGroup, "x", ""); !r.Success() {
			t.Fatalf("send %d: code %d", i, r.Code)
		}
	}
	if r := createText(t, e, "chat_id", chatGroup, "x", ""); r.Code != CodeIMRateLimited {
		t.Errorf("sixth send in a second: code %d", r.Code)
	}
	if r := createText(t, e, "chat_id", "oc_other", "x", ""); !r.Success() {
		t.Errorf("another chat: code %d", r.Code)
	}
	e.clock.Advance(time.Second)
	if r := createText(t, e, "chat_id", chatGroup, "x", ""); !r.Success() {
		t.Errorf("a second later: code %d", r.Code)
	}
}
