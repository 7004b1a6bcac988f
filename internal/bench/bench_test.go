package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestGenerateShapesTheLoad(t *testing.T) {
	s := shape{self: SelfID, count: 1000, groups: 40, senders: 25, every: 10, firstID: 500, unixTime: 1760000000, seed: 7}
	load := generate(s)
	if len(load.Frames) != 1000 || load.Mentions != 100 {
		t.Fatalf("%d frames, %d mentions; want 1000 and 100", len(load.Frames), load.Mentions)
	}
	ids := map[int64]bool{}
	lastAt := map[int64]int{} // group -> index of its last @
	me := strconv.FormatInt(SelfID, 10)
	for i, f := range load.Frames {
		if ids[f.ID] {
			t.Fatalf("message_id %d twice", f.ID)
		}
		ids[f.ID] = true
		var ev baselineEvent
		if err := json.Unmarshal(f.Data, &ev); err != nil {
			t.Fatalf("frame %d: %v\n%s", i, err, f.Data)
		}
		if ev.PostType != "message" || ev.MessageType != "group" || ev.MessageID != f.ID || ev.GroupID != f.Group || ev.Sender.UserID != ev.UserID {
			t.Fatalf("frame %d decodes as %+v", i, ev)
		}
		if f.Group < firstGroup || f.Group >= firstGroup+40 || ev.UserID < firstSender || ev.UserID >= firstSender+25 {
			t.Fatalf("frame %d: group %d, sender %d out of range", i, f.Group, ev.UserID)
		}
		if got := mentions(ev, me); got != f.Mention || f.Mention != (i%10 == 9) {
			t.Fatalf("frame %d: @ of the bot %v, marked %v", i, got, f.Mention)
		}
		if f.Mention {
			var text string
			_ = json.Unmarshal(ev.Message[1].Data["text"], &text)
			if id, ok := tokenID(text); !ok || id != f.ID {
				t.Fatalf("frame %d: the @'s text %q does not carry its id", i, text)
			}
			// The @s go round the groups: a group's next @ is 40 @s later.
			if prev, ok := lastAt[f.Group]; ok && i-prev != 400 {
				t.Fatalf("group %d heard @s at frames %d and %d", f.Group, prev, i)
			}
			lastAt[f.Group] = i
		}
	}
	if again := generate(s); string(again.Frames[123].Data) != string(load.Frames[123].Data) {
		t.Error("the same shape generated different frames")
	}

	burst := generate(shape{self: SelfID, count: 50, groups: 3, senders: 5, finalAt: true, firstID: 1, seed: 1})
	if len(burst.Frames) != 51 || burst.Mentions != 1 || !burst.Frames[50].Mention || burst.Frames[50].Group != firstGroup {
		t.Errorf("burst: %d frames, %d mentions, last %+v", len(burst.Frames), burst.Mentions, burst.Frames[50])
	}
}

// TestGenerateQuotes: the share of frames asked for quotes another
// message, about half of them an earlier frame of their own group and
// half a message from before the run; an @ never quotes.
func TestGenerateQuotes(t *testing.T) {
	load := generate(shape{self: SelfID, count: 20000, groups: 50, senders: 100, every: 10, quotes: 0.15, firstID: 1, seed: 3})
	seen := map[int64]int64{} // id -> group
	var burst, before int
	for i, f := range load.Frames {
		var ev struct {
			Message    []segment `json:"message"`
			RawMessage string    `json:"raw_message"`
		}
		if err := json.Unmarshal(f.Data, &ev); err != nil {
			t.Fatal(err)
		}
		first := ev.Message[0]
		if (first.Type == "reply") != (f.Quotes != 0) {
			t.Fatalf("frame %d: first segment %+v, marked as quoting %d", i, first, f.Quotes)
		}
		if f.Quotes != 0 {
			if f.Mention {
				t.Fatalf("frame %d: an @ quotes", i)
			}
			if first.Data["id"] != strconv.FormatInt(f.Quotes, 10) || !strings.HasPrefix(ev.RawMessage, "[CQ:reply,id="+first.Data["id"]+"]") {
				t.Fatalf("frame %d: reply %+v, raw %q", i, first, ev.RawMessage)
			}
			switch g, ok := seen[f.Quotes]; {
			case ok && g == f.Group:
				burst++
			case !ok && f.Quotes >= earlierIDs && f.Quotes < earlierIDs+earlierCount:
				before++
			default:
				t.Fatalf("frame %d quotes %d, neither an earlier frame of its group nor a message from before", i, f.Quotes)
			}
		}
		seen[f.ID] = f.Group
	}
	if share := float64(load.Quoting) / float64(len(load.Frames)-load.Mentions); share < 0.14 || share > 0.16 || burst+before != load.Quoting {
		t.Errorf("%d of %d frames quote (%.3f), %d + %d", load.Quoting, len(load.Frames), share, burst, before)
	}
	if burst < load.Quoting*4/10 || before < load.Quoting*4/10 {
		t.Errorf("quotes of the run %d, of before it %d: want about half each", burst, before)
	}
	if plain := generate(shape{self: SelfID, count: 100, groups: 5, senders: 10, firstID: 1, seed: 3}); plain.Quoting != 0 {
		t.Errorf("no quotes asked, %d made", plain.Quoting)
	}
}

func TestQuotedFindsTheReplySegment(t *testing.T) {
	for _, tc := range []struct {
		message string
		id      int64
		ok      bool
	}{
		{`[{"type":"reply","data":{"id":"1000000123"}},{"type":"text","data":{"text":"好"}}]`, 1000000123, true},
		{`[{"type":"reply","data":{"id":-42}}]`, -42, true},
		{`[{"type":"text","data":{"text":"no quote"}}]`, 0, false},
		{`"[CQ:reply,id=77]好的"`, 77, true},
		{`"plain"`, 0, false},
	} {
		id, ok := quoted(json.RawMessage(tc.message))
		if id != tc.id || ok != tc.ok {
			t.Errorf("quoted(%s) = %d, %v; want %d, %v", tc.message, id, ok, tc.id, tc.ok)
		}
	}
}

func TestLatencyPercentiles(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if got, want := latency(d), (Latency{N: 100, P50Ms: 50, P99Ms: 99, MaxMs: 100}); got != want {
		t.Errorf("latency = %+v, want %+v", got, want)
	}
	if got := latency(nil); got != (Latency{}) {
		t.Errorf("latency(nil) = %+v", got)
	}
}

func TestProblemsNameLostAndDoubledReplies(t *testing.T) {
	s := &SteadyReport{SteadyRun: SteadyRun{Replies: Replies{Expected: 10, Delivered: 8, Duplicated: 1}, Accounted: Accounting{Sent: 100, Logged: 99, Missing: 1}}}
	if got := s.problems(); len(got) != 3 {
		t.Errorf("problems %q, want lost, doubled and missing", got)
	}
	// The chatter-only run has no @: a send of it, or a message it lost,
	// fails the bench as well; so does a lost reply of the baseline.
	s = &SteadyReport{
		Chatter:         &SteadyRun{Replies: Replies{Stray: 1}, Accounted: Accounting{Sent: 100, Logged: 98, Missing: 2}},
		BaselineReplies: Replies{Expected: 10, Delivered: 9},
	}
	got := s.problems()
	if len(got) != 3 || !strings.Contains(got[0], "steady baseline") || !strings.Contains(got[1], steadyChatter) || !strings.Contains(got[2], steadyChatter) {
		t.Errorf("problems %q, want the baseline's lost reply and the chatter-only run's stray send and missing messages", got)
	}
	ok := &BurstReport{Replies: Replies{Expected: 1, Delivered: 1}, BaselineReplies: Replies{Expected: 1, Delivered: 1}, Accounted: Accounting{Sent: 5, Logged: 5}}
	if got := ok.problems(); len(got) != 0 {
		t.Errorf("problems of a clean run: %q", got)
	}
}

// TestReadAnswersTheMention runs the baseline reader in-process against
// the simulator: it decodes every frame and answers the @ once.
func TestReadAnswersTheMention(t *testing.T) {
	for _, batch := range []int{0, 4096} {
		t.Run(fmt.Sprintf("batch %d", batch), func(t *testing.T) { testReadAnswersTheMention(t, batch) })
	}
}

func testReadAnswersTheMention(t *testing.T, batch int) {
	q, err := startQQ(SelfID, batch)
	if err != nil {
		t.Fatal(err)
	}
	defer q.close()
	load := generate(shape{self: SelfID, count: 200, groups: 4, senders: 9, finalAt: true, firstID: 10, seed: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	readCtx, stopReading := context.WithCancel(ctx)
	go func() {
		n, err := Read(readCtx, q.url, SelfID)
		done <- result{n, err}
	}()
	if err := q.connected(ctx); err != nil {
		t.Fatal(err)
	}
	last := load.Frames[len(load.Frames)-1]
	replied := q.expect(last.ID)
	if err := q.push(ctx, load.Frames); err != nil {
		t.Fatal(err)
	}
	select {
	case <-replied:
	case <-ctx.Done():
		t.Fatal("no reply to the @")
	}
	stopReading()
	if r := <-done; r.err != nil || r.n != 201 {
		t.Errorf("Read = %d, %v; want 201 events", r.n, r.err)
	}
	if d, dup, stray := q.tally(map[int64]bool{last.ID: true}); d != 1 || dup != 0 || stray != 0 {
		t.Errorf("tally %d delivered, %d doubled, %d stray", d, dup, stray)
	}
}

func TestCountSeparatesThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 100001: "100,001", -12345: "-12,345"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestSimulatorAnswersGetMsg: get_msg of the simulator names the bot for
// the bot's own sends and someone else for anything else, as a message
// event NapCat would send.
func TestSimulatorAnswersGetMsg(t *testing.T) {
	q := &qq{self: SelfID}
	q.nextID.Store(3)
	for id, want := range map[int64]int64{botIDs + 2: SelfID, earlierIDs + 5: firstSender, 1_000_000_001: firstSender, botIDs + 4: firstSender} {
		data, code, _ := q.message(json.RawMessage(`{"message_id":` + strconv.FormatInt(id, 10) + `}`))
		var m struct {
			MessageID int64 `json:"message_id"`
			Sender    struct {
				UserID int64 `json:"user_id"`
			} `json:"sender"`
			PostType string `json:"post_type"`
		}
		if err := json.Unmarshal(data.(json.RawMessage), &m); err != nil || code != 0 {
			t.Fatalf("%d: %v, retcode %d", id, err, code)
		}
		if m.MessageID != id || m.Sender.UserID != want || m.PostType != "message" {
			t.Errorf("%d: %+v, want sender %d", id, m, want)
		}
	}
	if _, code, _ := q.message(json.RawMessage(`{}`)); code == 0 {
		t.Error("get_msg without an id succeeded")
	}
}

// TestSimulatorKeepsTheBotsSendsAsHistory: what the bot sent to a chat
// comes back from the chat's history action, newest last, with the
// reply segment it was sent with; older than an anchor when one is given.
func TestSimulatorKeepsTheBotsSendsAsHistory(t *testing.T) {
	q := &qq{self: SelfID, replies: map[int64][]time.Time{}, actions: map[string]int{}, waiters: map[int64]chan time.Time{}, chats: map[chatKey][]botSend{}}
	send := func(action, params string) int64 {
		t.Helper()
		data, code, msg := q.answer(action, json.RawMessage(params))
		if code != 0 {
			t.Fatalf("%s: retcode %d %s", action, code, msg)
		}
		return data.(map[string]any)["message_id"].(int64)
	}
	first := send("send_group_msg", `{"group_id":700,"message":[{"type":"reply","data":{"id":"11"}},{"type":"text","data":{"text":"八点半吧"}}]}`)
	send("send_private_msg", `{"user_id":42,"message":[{"type":"text","data":{"text":"私聊"}}]}`)
	second := send("send_msg", `{"message_type":"group","group_id":700,"message":"[CQ:reply,id=12]我也去"}`)
	type event struct {
		MessageID     int64           `json:"message_id"`
		UserID        int64           `json:"user_id"`
		GroupID       int64           `json:"group_id"`
		Message       json.RawMessage `json:"message"`
		MessageFormat string          `json:"message_format"`
	}
	history := func(action, params string) []event {
		t.Helper()
		data, code, msg := q.answer(action, json.RawMessage(params))
		if code != 0 {
			t.Fatalf("%s: retcode %d %s", action, code, msg)
		}
		b, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ Messages []event }
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v in %s", action, err, b)
		}
		return got.Messages
	}
	got := history("get_group_msg_history", `{"group_id":700,"count":20}`)
	if len(got) != 2 || got[0].MessageID != first || got[1].MessageID != second {
		t.Fatalf("group history %+v; want the two sends, oldest first", got)
	}
	if got[0].UserID != SelfID || got[0].GroupID != 700 || got[0].MessageFormat != "array" || !strings.Contains(string(got[0].Message), `"reply"`) {
		t.Errorf("first send as history: %+v", got[0])
	}
	if got[1].MessageFormat != "string" || string(got[1].Message) != `"[CQ:reply,id=12]我也去"` {
		t.Errorf("a CQ-string send as history: %+v", got[1])
	}
	if got := history("get_group_msg_history", `{"group_id":700,"count":20,"message_id":`+strconv.FormatInt(second, 10)+`}`); len(got) != 1 || got[0].MessageID != first {
		t.Errorf("history before the second send: %+v", got)
	}
	if got := history("get_friend_msg_history", `{"user_id":42,"count":20}`); len(got) != 1 || got[0].UserID != SelfID {
		t.Errorf("friend history %+v", got)
	}
	if got := history("get_group_msg_history", `{"group_id":701,"count":20}`); len(got) != 0 {
		t.Errorf("a chat the bot never sent to has %+v", got)
	}
}
