package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/outbox"
)

var group = msg.Peer{Kind: msg.Group, ID: groupChat}

// send sends out through SendParts from part 0 and returns the ids.
func send(t *testing.T, a *Account, out msg.Outbound) ([]msg.MessageID, error) {
	t.Helper()
	var ids []msg.MessageID
	err := a.SendParts(context.Background(), out, 0, func(_ int, id msg.MessageID, _ bool) { ids = append(ids, id) })
	return ids, err
}

// postText is the text of a sent message: a text's text, or a post's md
// elements, one per line.
func sentText(t *testing.T, s feishusim.SentMessage) string {
	t.Helper()
	switch s.MsgType {
	case "text":
		var v struct{ Text string }
		must(t, json.Unmarshal([]byte(s.Content), &v))
		return v.Text
	case "post":
		var els []string
		for _, e := range postElements(t, s.Content) {
			els = append(els, e.Text)
		}
		return strings.Join(els, "\n\n")
	}
	t.Fatalf("msg_type %s", s.MsgType)
	return ""
}

type postEl struct{ Tag, Text string }

// postElements returns a post's elements, checking each row has one.
func postElements(t *testing.T, content string) []postEl {
	t.Helper()
	var v struct {
		ZhCN struct {
			Content [][]postEl `json:"content"`
		} `json:"zh_cn"`
	}
	must(t, json.Unmarshal([]byte(content), &v))
	var out []postEl
	for _, row := range v.ZhCN.Content {
		if len(row) != 1 || row[0].Tag != "md" {
			t.Fatalf("row %+v: want one md element", row)
		}
		out = append(out, row[0])
	}
	return out
}

// TestPartUUID: the uuid is stable for a payload's part, differs between
// parts and payloads, and fits the platform's 50 characters.
func TestPartUUID(t *testing.T) {
	u := partUUID("turn#1", 0)
	if u != partUUID("turn#1", 0) || u == partUUID("turn#1", 1) || u == partUUID("turn#2", 0) {
		t.Error("uuid not stable per (payload, part)")
	}
	if len(u) == 0 || len(u) > 50 {
		t.Errorf("uuid %q", u)
	}
	if partUUID("", 0) != "" {
		t.Error("a payload without an id has no uuid")
	}
}

// TestSendRetryFromPart: a send that failed after the platform took some
// parts, retried from a part it already took, posts nothing twice.
func TestSendRetryFromPart(t *testing.T) {
	r := newRig(t, func(o *Options) { o.ChunkLimit = 200 })
	para := strings.Repeat("字", 150)
	out := msg.Outbound{ID: "turn#0", Peer: group, Text: para + "\n\n" + para + "\n\n" + para}
	var posts atomic.Int32
	r.setIntercept(func(w http.ResponseWriter, req *http.Request) bool {
		if req.Method == http.MethodPost && req.URL.Path == feishusim.PathMessages && posts.Add(1) == 3 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte(`{"code":1,"msg":"upstream failed"}`))
			return true
		}
		return false
	})
	first := map[int]msg.MessageID{}
	err := r.a.SendParts(context.Background(), out, 0, func(p int, id msg.MessageID, _ bool) { first[p] = id })
	if err == nil || outbox.IsPermanent(err) || len(first) != 2 {
		t.Fatalf("a server error on part 2: %v (permanent %v), confirmed %v", err, outbox.IsPermanent(err), first)
	}
	// The platform took part 1 but the outbox did not learn it: it
	// retries from part 1.
	again := map[int]msg.MessageID{}
	must(t, r.a.SendParts(context.Background(), out, 1, func(p int, id msg.MessageID, _ bool) { again[p] = id }))
	sent := r.sim.Sent()
	if len(sent) != 3 || len(again) != 2 || again[1] != first[1] {
		t.Fatalf("%d messages posted (want 3); part 1 was %s, then %s", len(sent), first[1], again[1])
	}
	for i, s := range sent {
		if s.UUID != partUUID(out.ID, i) {
			t.Errorf("part %d uuid %q", i, s.UUID)
		}
	}
}

// TestComposeTextOrPost: plain text is a text message; markdown is a post
// of md elements, one per paragraph, a fenced code block with blank
// lines kept in one.
func TestComposeTextOrPost(t *testing.T) {
	r := newRig(t, nil)
	_, err := send(t, r.a, msg.Outbound{ID: "p#0", Peer: group, Text: "你好,\n\n这是普通文字。"})
	must(t, err)
	md := "**结论**\n- 第一点\n\n```go\nfunc f() {\n\n\treturn\n}\n```\n\n结尾"
	_, err = send(t, r.a, msg.Outbound{ID: "p#1", Peer: group, Text: md})
	must(t, err)
	sent := r.sim.Sent()
	if sent[0].MsgType != "text" || sentText(t, sent[0]) != "你好,\n\n这是普通文字。" {
		t.Errorf("plain: %s %s", sent[0].MsgType, sent[0].Content)
	}
	if sent[1].MsgType != "post" {
		t.Fatalf("markdown sent as %s", sent[1].MsgType)
	}
	els := postElements(t, sent[1].Content)
	want := []string{"**结论**\n- 第一点", "```go\nfunc f() {\n\n\treturn\n}\n```", "结尾"}
	if len(els) != len(want) {
		t.Fatalf("elements %+v", els)
	}
	for i, e := range els {
		if e.Text != want[i] {
			t.Errorf("element %d %q, want %q", i, e.Text, want[i])
		}
	}
}

// TestChunking: parts stay under the chunk limit and, however long a
// limit is configured, under the platform's size limits; a code fence cut
// in two is closed and opened again.
func TestChunking(t *testing.T) {
	for _, limit := range []int{150, 500, 4000} {
		text := strings.Repeat("一段文字,有标点。", 40) + "\n\n" + strings.Repeat("word ", 300) + "\n\n" + strings.Repeat("长", 1000)
		pieces := chunkText(text, limit, 1<<20)
		var joined strings.Builder
		for _, p := range pieces {
			if n := utf8.RuneCountInString(p); n > limit || n == 0 {
				t.Errorf("limit %d: a piece of %d characters", limit, n)
			}
			joined.WriteString(p)
		}
		if strip(joined.String()) != strip(text) {
			t.Errorf("limit %d: text lost in chunking", limit)
		}
	}
	code := "```python\n" + strings.Repeat("print('x')\n", 60) + "```"
	pieces := chunkText(code, 300, 1<<20)
	if len(pieces) < 2 {
		t.Fatalf("%d pieces", len(pieces))
	}
	for i, p := range pieces {
		if !strings.HasPrefix(p, "```python\n") || !strings.HasSuffix(p, "\n```") || utf8.RuneCountInString(p) > 300 {
			t.Errorf("piece %d is not a whole code block: %q", i, p)
		}
	}
	// A very long limit: posts stay under 30 KB and the platform takes
	// them (it refuses a longer one with 230025).
	r := newRig(t, func(o *Options) { o.ChunkLimit = 100000 })
	long := "# 标题\n\n" + strings.Repeat("很长的一段 markdown 文字。", 4000)
	if _, err := send(t, r.a, msg.Outbound{ID: "long#0", Peer: group, Text: long}); err != nil {
		t.Fatal(err)
	}
	for _, s := range r.sim.Sent() {
		if s.MsgType != "post" || len(s.Content) > 30<<10 {
			t.Errorf("a %s of %d bytes", s.MsgType, len(s.Content))
		}
	}
}

func strip(s string) string {
	return strings.Join(strings.Fields(s), "")
}

// TestMentions: "@Name" of a mentionable sender becomes an at tag, the
// longest name first; nobody else is mentioned, and nobody at all in an
// error notice, a payload that must not mention, or one that answers no
// conversation.
func TestMentions(t *testing.T) {
	senders := []msg.Sender{{ID: userA, Name: "张三"}, {ID: userB, Name: "张三丰"}, {ID: "cli_bot", Name: "机器人"}}
	text := "@张三丰 和 @张三 看看,@王五 和 @机器人 不算"
	got := mentioner(msg.Outbound{Mentionable: senders}, textAt)(text)
	want := `<at user_id="` + userB + `">张三丰</at> 和 <at user_id="` + userA + `">张三</at> 看看,@王五 和 @机器人 不算`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, out := range []msg.Outbound{{Mentionable: senders, NoMentions: true}, {Mentionable: senders, IsError: true}, {}} {
		if got := mentioner(out, textAt)(text); got != text {
			t.Errorf("%+v rewrote mentions: %s", out, got)
		}
	}
	// Two senders with one name: neither is mentioned.
	same := []msg.Sender{{ID: userA, Name: "小明"}, {ID: userB, Name: "小明"}}
	if got := mentioner(msg.Outbound{Mentionable: same}, textAt)("@小明 你好"); got != "@小明 你好" {
		t.Errorf("an ambiguous name was mentioned: %s", got)
	}
	// Through the replier: the trigger's sender is mentionable.
	r := newRig(t, nil)
	rep := r.a.ReplierFor(msg.Message{ID: "om_trigger", Peer: group, Sender: msg.Sender{ID: userA, Name: "张三"}})
	must(t, r.sim.AddChat(groupChat, feishusim.ChatGroup))
	if _, err := rep.Deliver(context.Background(), msg.Outbound{ID: "m#0", Peer: group, Text: "@张三 好的"}); err != nil {
		t.Fatal(err)
	}
	if s := r.sim.Sent(); len(s) != 1 || !strings.Contains(s[0].Content, `<at user_id=\"`+userA+`\">张三</at>`) {
		t.Errorf("sent %+v", s)
	}
}

// TestReplyTargetGone: a reply whose target was recalled, deleted or is
// unavailable is posted to the chat instead, with the same uuid.
func TestReplyTargetGone(t *testing.T) {
	r := newRig(t, nil)
	recalled, err := r.sim.AddMessage(feishusim.Message{ChatID: groupChat, SenderID: userA, Content: `{"text":"撤回了"}`})
	must(t, err)
	must(t, r.sim.Recall(recalled))
	plain, err := r.sim.AddMessage(feishusim.Message{ChatID: groupChat, SenderID: userA, Content: `{"text":"还在"}`})
	must(t, err)
	r.sim.FailNext(feishusim.PathMessages+"/"+plain+"/reply", feishusim.CodeReplyUnavailable)
	for i, target := range []string{recalled, "om_never_existed", plain} {
		out := msg.Outbound{ID: "gone#" + target, Peer: group, Text: "回复", ReplyTo: msg.MessageID(target)}
		if _, err := send(t, r.a, out); err != nil {
			t.Fatalf("target %s: %v", target, err)
		}
		s := r.sim.Sent()[i]
		if s.ReplyTo != "" || s.ReceiveIDType != "chat_id" || s.ReceiveID != groupChat || s.UUID != partUUID(out.ID, 0) {
			t.Errorf("target %s: sent %+v", target, s)
		}
	}
	var codes []int
	for _, c := range r.sim.Calls("") {
		if strings.HasSuffix(c.Path, "/reply") {
			codes = append(codes, c.Code)
		}
	}
	if len(codes) != 3 || codes[0] != feishusim.CodeRecalled || codes[1] != feishusim.CodeDeleted || codes[2] != feishusim.CodeReplyUnavailable {
		t.Errorf("reply answers %v", codes)
	}
}

// TestSendThrottled: 230020 and 99991400 (HTTP 429) are errors the
// outbox retries after the platform's wait, at least a second.
func TestSendThrottled(t *testing.T) {
	r := newRig(t, nil)
	out := msg.Outbound{ID: "t#0", Peer: group, Text: "限流"}
	for _, c := range []struct {
		fault feishusim.Fault
		wait  time.Duration
	}{
		{feishusim.Fault{Code: feishusim.CodeIMRateLimited}, time.Second},
		{feishusim.RateLimited(7), 7 * time.Second},
	} {
		r.sim.QueueFault("POST "+feishusim.PathMessages, c.fault)
		_, err := send(t, r.a, out)
		var ra outbox.RetryAfter
		if !errors.As(err, &ra) || ra.RetryAfter() != c.wait || outbox.IsPermanent(err) {
			t.Errorf("%+v: %v (retry after %v)", c.fault, err, ra)
		}
	}
	if n := len(r.sim.Sent()); n != 0 {
		t.Errorf("%d sent", n)
	}
}

// TestSendRefused: a send the platform refuses for good is permanent; a
// markdown post it refuses as such goes again as text.
func TestSendRefused(t *testing.T) {
	r := newRig(t, nil)
	for _, code := range []int{feishusim.CodeContentTooLong, feishusim.CodeInvalidParam, feishusim.CodeBotNotInChat} {
		r.sim.FailNext("POST "+feishusim.PathMessages, code)
		if _, err := send(t, r.a, msg.Outbound{ID: "r#0", Peer: group, Text: "文字"}); !outbox.IsPermanent(err) || codeOf(err) != code {
			t.Errorf("code %d: %v", code, err)
		}
	}
	if _, err := send(t, r.a, msg.Outbound{Peer: msg.Peer{Kind: msg.Group, ID: "oc_unknown"}, Text: "文字"}); !outbox.IsPermanent(err) {
		t.Errorf("an unknown chat: %v", err)
	}
	r.sim.FailNext("POST "+feishusim.PathMessages, feishusim.CodeInvalidParam)
	if _, err := send(t, r.a, msg.Outbound{ID: "r#1", Peer: group, Text: "**重点**"}); err != nil {
		t.Fatal(err)
	}
	if s := r.sim.Sent(); len(s) != 1 || s[0].MsgType != "text" || sentText(t, s[0]) != "**重点**" || s[0].UUID != partUUID("r#1", 0) {
		t.Errorf("sent %+v", s)
	}
}

// TestTokenRefresh: a call refused with 99991663 gets a fresh tenant
// token and goes through, once.
func TestTokenRefresh(t *testing.T) {
	r := newRig(t, nil)
	_, err := send(t, r.a, msg.Outbound{ID: "k#0", Peer: group, Text: "一"})
	must(t, err)
	r.sim.InvalidateTokens()
	_, err = send(t, r.a, msg.Outbound{ID: "k#1", Peer: group, Text: "二"})
	must(t, err)
	if n := r.sim.TokensIssued(); n != 2 {
		t.Errorf("%d tokens issued, want 2", n)
	}
	var codes []int
	for _, c := range r.sim.Calls(feishusim.PathMessages) {
		codes = append(codes, c.Code)
	}
	if len(codes) != 3 || codes[1] != feishusim.CodeTokenInvalid || len(r.sim.Sent()) != 2 {
		t.Errorf("answers %v, %d sent", codes, len(r.sim.Sent()))
	}
	// Bot info, asked at start-up, refreshes the token too.
	r.sim.InvalidateTokens()
	if id, _, err := r.a.api.botInfo(context.Background()); err != nil || id != botID {
		t.Errorf("bot info: %q %v", id, err)
	}
}

// TestSendDirect: a direct chat's message without a reply target goes to
// its user by open_id.
func TestSendDirect(t *testing.T) {
	r := newRig(t, nil)
	if _, err := send(t, r.a, msg.Outbound{ID: "d#0", Peer: msg.Peer{Kind: msg.Direct, ID: userA}, Text: "私聊"}); err != nil {
		t.Fatal(err)
	}
	if s := r.sim.Sent(); len(s) != 1 || s[0].ReceiveIDType != "open_id" || s[0].ReceiveID != userA || s[0].ChatID != p2pChat {
		t.Errorf("sent %+v", s)
	}
}

// TestSendRecordsSent: the bot's sent messages are in the Sent log.
func TestSendRecordsSent(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "p.db"))
	r := newRig(t, func(o *Options) { o.Sent = st })
	ids, err := send(t, r.a, msg.Outbound{ID: "s#0", Peer: group, Text: "记下"})
	must(t, err)
	mine := func(id msg.MessageID) bool { ok, _ := r.a.SentByBot(context.Background(), msg.Peer{}, id); return ok }
	if len(ids) != 1 || !mine(ids[0]) || mine("om_other") {
		t.Errorf("sent %v not recorded", ids)
	}
}

// TestAMessageIsRecordedAfterItsPartIsConfirmed: a sent message goes
// into the Sent log only once its part's confirmation returned, by which
// time the outbox has stored that the part went (see outbox.Confirmed).
func TestAMessageIsRecordedAfterItsPartIsConfirmed(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "p.db"))
	r := newRig(t, func(o *Options) { o.Sent = st })
	var recordedAtConfirm []bool
	err := r.a.SendParts(context.Background(), msg.Outbound{ID: "order#0", Peer: group, Text: "先确认"}, 0, func(_ int, id msg.MessageID, _ bool) {
		ok, err := st.WasSent(context.Background(), ChannelID, r.a.opts.ID, id)
		must(t, err)
		recordedAtConfirm = append(recordedAtConfirm, ok)
	})
	must(t, err)
	if len(recordedAtConfirm) != 1 || recordedAtConfirm[0] {
		t.Errorf("recorded as sent when its confirmation came: %v, want [false]", recordedAtConfirm)
	}
}

// TestSendRateLimit: sends to one chat are spaced at five a second, so
// the platform's per-chat limit never refuses one, while another chat is
// not held back. The account talks to the simulator in process, inside
// a bubble of fake time.
func TestSendRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := feishusim.New(feishusim.Options{})
		must(t, sim.AddChat(groupChat, feishusim.ChatGroup))
		must(t, sim.AddChat(topicChat, feishusim.ChatGroup))
		sim.SetSendRateLimit(true)
		a := New(Options{
			AppID: feishusim.DefaultAppID, AppSecret: feishusim.DefaultAppSecret, BaseURL: "http://feishu.sim",
			HTTPClient: &http.Client{Transport: handlerTransport{sim.Handler()}}, ChunkLimit: 10,
		})
		text := strings.TrimSpace(strings.Repeat("一二三四五六七八九十\n\n", 12))
		start := time.Now()
		ids, err := send(t, a, msg.Outbound{ID: "burst#0", Peer: group, Text: text})
		must(t, err)
		if len(ids) != 12 {
			t.Fatalf("%d parts", len(ids))
		}
		if _, err := send(t, a, msg.Outbound{ID: "other#0", Peer: msg.Peer{Kind: msg.Group, ID: topicChat}, Text: "另一个群"}); err != nil {
			t.Fatal(err)
		}
		var prev time.Time
		for i, s := range sim.Sent() {
			switch {
			case s.ChatID == topicChat:
				if s.Time.Sub(prev) != 0 {
					t.Errorf("another chat's send waited %v", s.Time.Sub(prev))
				}
			case i > 0 && s.Time.Sub(prev) < 200*time.Millisecond:
				t.Errorf("sends %d and %d %v apart", i-1, i, s.Time.Sub(prev))
			}
			prev = s.Time
		}
		if d := time.Since(start); d != 11*200*time.Millisecond {
			t.Errorf("12 sends took %v of fake time, want 2.2s", d)
		}
		for _, c := range sim.Calls(feishusim.PathMessages) {
			if c.Code != 0 {
				t.Errorf("a send got %d", c.Code)
			}
		}
	})
}

// TestComposeCard: a text with a markdown table goes as a card of
// markdown, which renders it (a post would show it as typed), with card
// mentions; a card the platform refuses goes again as text.
func TestComposeCard(t *testing.T) {
	r := newRig(t, nil)
	table := "@张三 结果如下:\n\n| 项目 | 状态 |\n| --- | :---: |\n| 构建 | 通过 |"
	out := msg.Outbound{ID: "c#0", Peer: group, Text: table, Mentionable: []msg.Sender{{ID: userA, Name: "张三"}}}
	if _, err := send(t, r.a, out); err != nil {
		t.Fatal(err)
	}
	s := r.sim.Sent()[0]
	var card struct {
		Schema string
		Config struct {
			UpdateMulti bool `json:"update_multi"`
		}
		Body struct {
			Elements []struct{ Tag, Content string }
		}
	}
	must(t, json.Unmarshal([]byte(s.Content), &card))
	want := "<at id=" + userA + "></at> 结果如下:\n\n| 项目 | 状态 |\n| --- | :---: |\n| 构建 | 通过 |"
	if s.MsgType != "interactive" || card.Schema != "2.0" || !card.Config.UpdateMulti || len(card.Body.Elements) != 1 ||
		card.Body.Elements[0].Tag != "markdown" || card.Body.Elements[0].Content != want {
		t.Errorf("sent %s %s", s.MsgType, s.Content)
	}
	r.sim.FailNext("POST "+feishusim.PathMessages, 230099)
	out.ID = "c#1"
	if _, err := send(t, r.a, out); err != nil {
		t.Fatal(err)
	}
	if s := r.sim.Sent()[1]; s.MsgType != "text" || !strings.Contains(s.Content, `<at user_id=\"`+userA+`\">张三</at>`) {
		t.Errorf("fallback %s %s", s.MsgType, s.Content)
	}
	if _, err := send(t, r.a, msg.Outbound{ID: "c#2", Peer: group, Text: "a | b | c"}); err != nil {
		t.Fatal(err)
	}
	if s := r.sim.Sent()[2]; s.MsgType != "text" {
		t.Errorf("pipes without a table sent as %s", s.MsgType)
	}
}

// TestReadThrottled: a throttled read is tried again after the wait the
// platform asks for, when it is short; a long one is an error at once.
func TestReadThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := feishusim.New(feishusim.Options{})
		must(t, sim.AddChat(groupChat, feishusim.ChatGroup))
		must(t, sim.AddUser(userA, "张三"))
		id, err := sim.AddMessage(feishusim.Message{ChatID: groupChat, SenderID: userA, Content: `{"text":"慢一点"}`})
		must(t, err)
		a := New(Options{
			AppID: feishusim.DefaultAppID, AppSecret: feishusim.DefaultAppSecret, BaseURL: "http://feishu.sim",
			HTTPClient: &http.Client{Transport: handlerTransport{sim.Handler()}},
		})
		sim.QueueFault(feishusim.PathMessages+"/"+id, feishusim.RateLimited(2))
		start := time.Now()
		m, err := a.FetchMessage(context.Background(), msg.MessageID(id))
		if err != nil || m.Text != "慢一点" {
			t.Fatalf("%+v %v", m, err)
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("retried after %v, want 2s", d)
		}
		sim.QueueFault(feishusim.PathMessages+"/"+id, feishusim.RateLimited(60))
		start = time.Now()
		if _, err := a.FetchMessage(context.Background(), msg.MessageID(id)); codeOf(err) != feishusim.CodeRateLimited || time.Since(start) != 0 {
			t.Errorf("a minute's wait: %v after %v", err, time.Since(start))
		}
	})
}
