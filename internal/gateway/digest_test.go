package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/config"
	"github.com/pincerbot/pincer/internal/llm/llmtest"
	"github.com/pincerbot/pincer/internal/prompt"
)

// transcriptOf is what a digest or summary turn's last user message
// gives the model to read: what follows the prompt and its blank line.
func transcriptOf(t *testing.T, req llmtest.Request, promptText string) string {
	t.Helper()
	user := userMessages(req)
	last := user[len(user)-1]
	_, after, ok := strings.Cut(last, promptText+"\n\n")
	if !ok {
		t.Fatalf("not a turn of that prompt: %q", last)
	}
	return after
}

// cutLine matches a transcript line of speaker cut to 40 characters: its
// time, its speaker, the first of text, and the marker.
func cutLine(speaker, text string) *regexp.Regexp {
	kept := 40 - len([]rune("[00:00:00] "+speaker+": ")) - len([]rune(prompt.TruncatedMarker))
	return regexp.MustCompile(`^\[\d\d:\d\d:\d\d\] ` + regexp.QuoteMeta(speaker+": "+string([]rune(text)[:kept])+prompt.TruncatedMarker) + `$`)
}

// Two messages of 19 characters: together they fit the digest's buffer
// of 40, but each one's transcript line is longer than that.
const (
	longA = "今天的会议改到下午三点请大家记得带电脑"
	longB = "明天上午十点在三号会议室开周会请准时到"
)

// TestQQDigestOfLinesLongerThanTheLimit: a digest whose every transcript
// line is longer than maxTranscriptChars gives the model its newest line,
// cut to the limit and marked, never an empty transcript; a digest of
// messages with nothing to read does not ask the model at all.
func TestQQDigestOfLinesLongerThanTheLimit(t *testing.T) {
	r := newQQRig(t, func(c *config.Config) {
		d := &c.Channels.OneBot.Receive.Digest
		d.Enabled, d.MaxMessages, d.MinMessages, d.MaxTranscriptChars = true, 2, 1, 40
	})
	r.model.Script(llmtest.Reply{Text: []string{"SKIP"}})
	if n := len([]rune(longA)); n != 19 || len([]rune(longB)) != 19 {
		t.Fatalf("the texts are %d characters", n)
	}
	r.push(t, groupFrom(1, 10001, "张三", text(longA)))
	r.push(t, groupFrom(2, 10002, "李四", text(longB))) // the digest is full
	r.metric(t, `pincer_turn_duration_seconds_count`, 1)
	reqs := r.model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests; want the digest", len(reqs))
	}
	got := transcriptOf(t, reqs[0], config.DefaultDigestPrompt)
	if !cutLine("李四(10002)", longB).MatchString(got) || len([]rune(got)) != 40 {
		t.Errorf("the digest reads %q (%d characters); want 李四's line cut to 40", got, len([]rune(got)))
	}

	// Two messages that say nothing: the digest is full, and dropped.
	r.push(t, groupFrom(3, 10003, "王五", text("   ")))
	r.push(t, groupFrom(4, 10003, "王五", text(" ")))
	chat := fmt.Sprintf("onebot:default:group:%d", 700000001)
	traceOf(t, r.ctx, r.gw.url, chat, "4", "nothing to read")
	if n := len(r.model.Requests()); n != 1 {
		t.Errorf("%d model requests; the empty digest asked the model", n)
	}
}

// TestQQSummaryOfLinesLongerThanTheLimit: /summary shares the digest's
// transcript: lines all longer than maxTranscriptChars give the model the
// newest one, cut and marked; a history in which nothing is said gets the
// notice that there is nothing to summarize, without the model.
func TestQQSummaryOfLinesLongerThanTheLimit(t *testing.T) {
	now := time.Now().Unix()
	var asked atomic.Int64
	model := llmtest.NewOpenAI(t)
	model.Script(llmtest.Reply{Text: []string{"总结好了"}})
	line := func(id, at, user int64, name, text string) map[string]any {
		return map[string]any{"message_id": id, "time": at, "user_id": user, "sender": map[string]any{"user_id": user, "nickname": name}, "message": text}
	}
	p := onebottest.New(t, func(action string, _ json.RawMessage) (any, int, string) {
		switch action {
		case "get_group_msg_history":
			if asked.Add(1) == 1 {
				// Out of order: the newest is 李四's.
				return map[string]any{"messages": []any{
					line(12, now-10, 10002, "李四", longB),
					line(11, now-60, 10001, "张三", longA),
				}}, 0, ""
			}
			return map[string]any{"messages": []any{line(21, now-30, 10001, "张三", "  "), line(22, now-20, 10002, "李四", "")}}, 0, ""
		case "send_group_msg":
			return map[string]any{"message_id": 9000 + asked.Load()}, 0, ""
		}
		return nil, 0, ""
	})
	cfg := withOpenAI(model.URL)
	cfg.Channels.OneBot.WSURL = p.URL
	cfg.Channels.OneBot.SelfID = "3300000001"
	cfg.Channels.OneBot.Receive.Summary.MaxTranscriptChars = 40
	startGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Push(ctx, qqGroupEvent(13, text("/summary"))); err != nil {
		t.Fatal(err)
	}
	if s := waitSend(t, p, ctx); !strings.Contains(fmt.Sprint(s.params.Message), "总结好了") {
		t.Errorf("the summary sent %+v", s.params.Message)
	}
	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests; want the summary", len(reqs))
	}
	if got := transcriptOf(t, reqs[0], config.DefaultSummaryPrompt); !cutLine("李四(10002)", longB).MatchString(got) {
		t.Errorf("the summary reads %q; want 李四's line cut to 40", got)
	}

	if err := p.Push(ctx, qqGroupEvent(23, text("/summary"))); err != nil {
		t.Fatal(err)
	}
	if s := waitSend(t, p, ctx); !strings.Contains(fmt.Sprint(s.params.Message), "最近没有可以总结的聊天记录。") {
		t.Errorf("a summary of nothing sent %+v", s.params.Message)
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("%d model requests; the summary of nothing asked the model", n)
	}
}
