package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
)

// startQQWithModel runs a gateway with a fake model and the default QQ
// account on an implementation answering h (sends get ids from 9300 on).
func startQQWithModel(t *testing.T, h onebottest.Handler, reply string) (*onebottest.Peer, *llmtest.Server, context.Context) {
	t.Helper()
	p := onebottest.New(t, func(action string, params json.RawMessage) (any, int, string) {
		if data, code, text := h(action, params); data != nil || code != 0 {
			return data, code, text
		}
		switch action {
		case "get_login_info":
			return map[string]any{"user_id": botQQ, "nickname": "助手"}, 0, ""
		case "send_group_msg", "send_private_msg":
			return map[string]any{"message_id": 9300}, 0, ""
		}
		return nil, 0, ""
	})
	fake := llmtest.NewOpenAI(t)
	fake.Script(llmtest.Reply{Text: []string{reply}})
	cfg := withOpenAI(fake.URL)
	cfg.Channels.OneBot.WSURL = p.URL
	cfg.Channels.OneBot.SelfID = "3300000001"
	cfg.Channels.OneBot.Receive.History.Enabled = false
	startGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	return p, fake, ctx
}

func noAnswer(string, json.RawMessage) (any, int, string) { return nil, 0, "" }

// lastAsked is the text of the last message the model was asked to
// answer.
func lastAsked(t *testing.T, fake *llmtest.Server) string {
	t.Helper()
	reqs := fake.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model was not asked")
	}
	msgs, _ := reqs[len(reqs)-1].Body["messages"].([]any)
	if len(msgs) == 0 {
		t.Fatalf("no messages in %v", reqs[len(reqs)-1].Body)
	}
	return mustString(msgs[len(msgs)-1])
}

// TestQQModelsNamedCQMentionBecomesAMentionEndToEnd: a reply in which the
// model wrote "[CQ:at,qq=N,name=X]", the form NapCat and LLOneBot print
// and models copy, goes out with a real at segment of N, as the bare
// "[CQ:at,qq=N]" does, not as the code's text.
func TestQQModelsNamedCQMentionBecomesAMentionEndToEnd(t *testing.T) {
	p, _, ctx := startQQWithModel(t, noAnswer, "[CQ:at,qq=10001,name=张三] 收到，[CQ:at,name=李四,qq=10002]也看看")
	if err := p.Push(ctx, qqGroupEvent(71, seg("at", map[string]any{"qq": botQQ}), seg("text", map[string]any{"text": " 看一下"}))); err != nil {
		t.Fatal(err)
	}
	s := waitSend(t, p, ctx)
	var got []string
	for _, m := range s.params.Message {
		switch m.Type {
		case "at":
			got = append(got, "<at "+m.Data["qq"].(string)+">")
		case "text":
			got = append(got, m.Data["text"].(string))
		}
	}
	if want := "<at 10001>| 收到，|<at 10002>|也看看"; strings.Join(got, "|") != want {
		t.Errorf("sent %q, want %q", strings.Join(got, "|"), want)
	}
}

// TestQQTypedNamedMentionOfTheBotIsStrippedEndToEnd: a message that
// starts with the bot's at code typed as text, with a name as NapCat
// prints it, reaches the agent without it, as the bare form does; after
// it, a command is still a command.
func TestQQTypedNamedMentionOfTheBotIsStrippedEndToEnd(t *testing.T) {
	p, fake, ctx := startQQWithModel(t, noAnswer, "好的")
	dm := func(id int64, text string) map[string]any {
		return map[string]any{
			"time": time.Now().Unix(), "self_id": botQQ, "post_type": "message", "message_type": "private",
			"message_id": id, "user_id": 10001, "sender": map[string]any{"user_id": 10001, "nickname": "张三"},
			"message": []any{seg("text", map[string]any{"text": text})},
		}
	}
	if err := p.Push(ctx, dm(81, "[CQ:at,qq=3300000001,name=助手]\u3000今天天气怎么样")); err != nil {
		t.Fatal(err)
	}
	waitSend(t, p, ctx)
	asked := lastAsked(t, fake)
	if !strings.Contains(asked, "今天天气怎么样") || strings.Contains(asked, "CQ:at") || strings.Contains(asked, "助手]") {
		t.Errorf("the agent read %q; the leading at code of the bot is stripped", asked)
	}
	requests := len(fake.Requests())
	if err := p.Push(ctx, dm(82, "[CQ:at,name=助手,qq=3300000001] /whoami")); err != nil {
		t.Fatal(err)
	}
	got := sentText(waitSend(t, p, ctx))
	if !strings.Contains(got, "10001") || len(fake.Requests()) != requests {
		t.Errorf("/whoami after the typed at code is a command: answered %q, %d model requests", got, len(fake.Requests())-requests)
	}
}

// TestQQForwardWithOnlyResIDIsExpandedEndToEnd: a merged forward whose id
// comes in res_id (LLOneBot, older go-cqhttp forks) instead of id is
// fetched with that id and reaches the agent expanded.
func TestQQForwardWithOnlyResIDIsExpandedEndToEnd(t *testing.T) {
	p, fake, ctx := startQQWithModel(t, func(action string, params json.RawMessage) (any, int, string) {
		if action != "get_forward_msg" {
			return nil, 0, ""
		}
		var q struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(params, &q) != nil || q.ID != "Rk7vQ2xL9pM3" {
			return nil, 100, "unknown forward " + string(params)
		}
		return json.RawMessage(`{"messages": [
		  {"sender": {"user_id": 10005, "nickname": "Eve"}, "time": 1759990000, "content": "集合地点改到东门", "message_format": "string"},
		  {"sender": {"user_id": 10006, "nickname": "Frank"}, "time": 1759990060,
		   "content": [{"type": "text", "data": {"text": "收到"}}], "message_format": "array"}
		]}`), 0, ""
	}, "好的")
	if err := p.Push(ctx, qqGroupEvent(91,
		seg("at", map[string]any{"qq": botQQ}), seg("text", map[string]any{"text": " 总结一下"}),
		seg("forward", map[string]any{"res_id": "Rk7vQ2xL9pM3"}))); err != nil {
		t.Fatal(err)
	}
	waitSend(t, p, ctx)
	asked := lastAsked(t, fake)
	for _, want := range []string{"Eve(10005)", "集合地点改到东门", "Frank(10006)", "收到"} {
		if !strings.Contains(asked, want) {
			t.Errorf("%q missing from what the agent read:\n%s", want, asked)
		}
	}
	fetched := false
	for _, c := range p.Calls() {
		fetched = fetched || c.Action == "get_forward_msg" && strings.Contains(string(c.Params), `"id":"Rk7vQ2xL9pM3"`)
	}
	if !fetched {
		t.Error("get_forward_msg was not asked for the res_id")
	}
}

// TestQQReasoningThePromptOpenedIsNotSent: an OpenAI-compatible server
// whose model had <think> in its prompt streams the reasoning, </think>
// and the answer; the group gets the answer alone.
func TestQQReasoningThePromptOpenedIsNotSent(t *testing.T) {
	p, fake, ctx := startQQWithModel(t, noAnswer, "")
	fake.Script(llmtest.Reply{Text: []string{"用户想知道天气，我应该", "简短回答。</th", "ink>\n\n今天晴。"}})
	if err := p.Push(ctx, qqGroupEvent(70, seg("at", map[string]any{"qq": botQQ}), seg("text", map[string]any{"text": " 明天天气怎么样？"}))); err != nil {
		t.Fatal(err)
	}
	if got := sentText(waitSend(t, p, ctx)); got != "今天晴。" {
		t.Errorf("the group got %q, want the answer alone", got)
	}
}
