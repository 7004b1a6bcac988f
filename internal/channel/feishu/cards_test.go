package feishu

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/feishu/feishusim"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/outbox"
	"github.com/pincerbot/pincer/internal/trace"
)

// cardSim is a simulated platform with a group, a user and a message of
// theirs there to answer.
func cardSim(t *testing.T) (*feishusim.Sim, msg.Message) {
	t.Helper()
	sim := feishusim.New(feishusim.Options{})
	must(t, sim.AddUser(userA, "张三"))
	must(t, sim.AddChat(groupChat, feishusim.ChatGroup))
	id, err := sim.AddMessage(feishusim.Message{ChatID: groupChat, SenderID: userA, Content: `{"text":"写一首诗"}`})
	must(t, err)
	return sim, msg.Message{
		Channel: ChannelID, Account: msg.DefaultAccount, Peer: group, ID: msg.MessageID(id),
		Sender: msg.Sender{ID: userA, Name: "张三"}, Text: "写一首诗",
	}
}

// cardAccount is an account that streams replies into cards, talking to
// sim in process (so it can run in a synctest bubble).
func cardAccount(sim *feishusim.Sim, logs *logRecorder, edit func(*Options)) *Account {
	o := Options{
		ID: msg.DefaultAccount, AppID: feishusim.DefaultAppID, AppSecret: feishusim.DefaultAppSecret, BaseURL: "http://feishu.sim",
		HTTPClient: &http.Client{Transport: handlerTransport{sim.Handler()}}, Streaming: StreamingCard, Logger: slog.New(logs),
	}
	if edit != nil {
		edit(&o)
	}
	return New(o)
}

// shownCard is the card entity an interactive message shows, "" for none.
func shownCard(t *testing.T, s feishusim.SentMessage) string {
	t.Helper()
	var ref struct {
		Type string
		Data struct {
			CardID string `json:"card_id"`
		}
	}
	if s.MsgType != "interactive" || json.Unmarshal([]byte(s.Content), &ref) != nil || ref.Type != "card" {
		return ""
	}
	return ref.Data.CardID
}

// TestCardStreamCoalescesDeltas: a reply streamed fast is written into
// one card at most once per interval, whatever the pace of its deltas,
// and slow deltas each show; the delivery then writes the final text,
// closes streaming, and is the one message posted: the card's.
func TestCardStreamCoalescesDeltas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, trigger := cardSim(t)
		a := cardAccount(sim, &logRecorder{}, nil)
		r := a.ReplierFor(trigger)
		if pv, ok := r.(channel.PartialViewer); !ok || !pv.ShowsPartial() {
			t.Fatal("a streaming account's replier does not show partial text")
		}
		var all strings.Builder
		push := func(delta string) {
			all.WriteString(delta)
			r.Partial(delta)
		}
		const fast, gap = 60, 5 * time.Millisecond
		for i := range fast {
			push(string(rune('a'+i%26)) + " ")
			time.Sleep(gap)
		}
		for _, d := range []string{"slow ", "and ", "steady"} {
			time.Sleep(300 * time.Millisecond)
			push(d)
		}
		time.Sleep(time.Second)
		synctest.Wait()

		cards := sim.Cards()
		if len(cards) != 1 {
			t.Fatalf("%d cards created, want 1", len(cards))
		}
		c := cards[0]
		times := []time.Time{c.Created}
		for _, u := range c.Updates {
			times = append(times, u.Time)
		}
		// 300 ms of fast deltas fit in at most 4 requests; each slow
		// delta is one update.
		if n := len(times); n > 4+3 || n < 3+1 {
			t.Errorf("%d requests wrote %d deltas, want 4 to 7", n, fast+3)
		}
		for i := 1; i < len(times); i++ {
			if d := times[i].Sub(times[i-1]); d < cardInterval {
				t.Errorf("requests %d and %d %v apart, less than %v", i-1, i, d, cardInterval)
			}
		}
		if got := c.Elements[cardElement]; got != all.String() {
			t.Errorf("the card shows %q, want all the text %q", got, all.String())
		}
		for i, u := range c.Updates {
			if i > 0 && u.Sequence <= c.Updates[i-1].Sequence {
				t.Errorf("sequences do not rise: %d then %d", c.Updates[i-1].Sequence, u.Sequence)
			}
			if u.Sequence > math.MaxInt32 {
				t.Errorf("sequence %d does not fit 32 bits", u.Sequence)
			}
		}

		final := "最终的回答"
		id, err := r.Deliver(context.Background(), msg.Outbound{ID: "turn#1", Account: trigger.Account, Peer: group, Text: final})
		must(t, err)
		c = sim.Cards()[0]
		last := c.Updates[len(c.Updates)-1]
		if last.Content != final || c.Streaming || len(c.Settings) != 1 || c.Settings[0].Sequence <= last.Sequence {
			t.Errorf("finished card: last update %+v, settings %+v, streaming %v", last, c.Settings, c.Streaming)
		}
		sent := sim.Sent()
		if len(sent) != 1 || shownCard(t, sent[0]) != c.ID || sent[0].ReplyTo != string(trigger.ID) || string(id) != sent[0].MessageID {
			t.Errorf("sent %+v, delivered as %q; want one reply showing card %s", sent, id, c.ID)
		}
	})
}

// TestLongReplyStreamsItsFirstChunk: a card streams no more than a chunk
// of the reply; delivered, the reply's first chunk finishes the card and
// the rest follows as cards of its own.
func TestLongReplyStreamsItsFirstChunk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, trigger := cardSim(t)
		a := cardAccount(sim, &logRecorder{}, func(o *Options) { o.ChunkLimit = 10 })
		r := a.ReplierFor(trigger)
		r.Partial("一二三四五六七八九十甲乙丙")
		time.Sleep(time.Second)
		synctest.Wait()
		if got := sim.Cards()[0].Elements[cardElement]; got != "一二三四五六七八九十" {
			t.Errorf("the card streams %q, want the first 10 characters", got)
		}
		text := "一二三四五六七八九十\n\n甲乙丙丁戊己庚辛壬癸\n\n子丑"
		if _, err := r.Deliver(context.Background(), msg.Outbound{ID: "t#1", Account: trigger.Account, Peer: group, Text: text}); err != nil {
			t.Fatal(err)
		}
		c := sim.Cards()[0]
		sent := sim.Sent()
		if c.Elements[cardElement] != "一二三四五六七八九十" || c.Streaming || len(sent) != 3 || shownCard(t, sent[0]) != c.ID {
			t.Fatalf("card %+v, sent %+v", c, sent)
		}
		for i, want := range []string{"甲乙丙丁戊己庚辛壬癸", "子丑"} {
			if s := sent[i+1]; s.MsgType != "interactive" || !strings.Contains(s.Content, `"content":"`+want+`"`) || s.ReplyTo != string(trigger.ID) {
				t.Errorf("part %d: %+v, want a card of %s", i+1, s, want)
			}
		}
	})
}

// TestSlowUpdateDoesNotHoldUpTheDelivery: an update the platform is slow
// to answer is given up when the reply is delivered, and the delivery
// finishes the card at once.
func TestSlowUpdateDoesNotHoldUpTheDelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, trigger := cardSim(t)
		a := cardAccount(sim, &logRecorder{}, nil)
		r := a.ReplierFor(trigger)
		r.Partial("慢")
		synctest.Wait()
		card := sim.Cards()[0].ID
		release := sim.Hold("PUT " + feishusim.PathCards + "/" + card + "/elements/" + cardElement + "/content")
		defer release()
		r.Partial("慢的平台")
		time.Sleep(time.Second)
		synctest.Wait() // the update waits for the platform
		start := time.Now()
		if _, err := r.Deliver(context.Background(), msg.Outbound{ID: "t#1", Account: trigger.Account, Peer: group, Text: "慢的平台，快的回复"}); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the delivery waited %v for a slow update", d)
		}
		if c := sim.Cards()[0]; c.Elements[cardElement] != "慢的平台，快的回复" || c.Streaming {
			t.Errorf("card %+v", c)
		}
	})
}

// TestCardOutOfStreamingIsFinished: a card the platform took out of
// streaming mode while the agent worked (it does after a while) still
// gets the final text.
func TestCardOutOfStreamingIsFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, trigger := cardSim(t)
		a := cardAccount(sim, &logRecorder{}, nil)
		r := a.ReplierFor(trigger)
		r.Partial("让我查一下。")
		synctest.Wait()
		must(t, sim.EndStreaming(sim.Cards()[0].ID))
		if _, err := r.Deliver(context.Background(), msg.Outbound{ID: "t#1", Account: trigger.Account, Peer: group, Text: "查到了：三点开会。"}); err != nil {
			t.Fatal(err)
		}
		if c := sim.Cards()[0]; c.Elements[cardElement] != "查到了：三点开会。" || c.Streaming {
			t.Errorf("card %+v", c)
		}
		if n := len(sim.Sent()); n != 1 {
			t.Errorf("%d messages, want the card's", n)
		}
	})
}

// TestCardRefusedFallsBackToMessages: an app the platform refuses CardKit
// sends the reply whole, says so once in the log and the trace, and does
// not ask for a card again.
func TestCardRefusedFallsBackToMessages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, trigger := cardSim(t)
		sim.RefuseCardKit(true)
		logs := &logRecorder{}
		tr := trace.New(trace.Options{})
		tr.Begin(trigger)
		a := cardAccount(sim, logs, func(o *Options) { o.Trace = tr })
		r := a.ReplierFor(trigger)
		r.Partial("你好")
		synctest.Wait()
		if _, err := r.Deliver(context.Background(), msg.Outbound{ID: "t#1", Account: trigger.Account, Peer: group, Text: "你好，世界"}); err != nil {
			t.Fatal(err)
		}
		sent := sim.Sent()
		if len(sent) != 1 || sent[0].MsgType != "text" || sentText(t, sent[0]) != "你好，世界" {
			t.Errorf("sent %+v, want the reply as one text message", sent)
		}

		again := a.ReplierFor(trigger)
		if again.(channel.PartialViewer).ShowsPartial() {
			t.Error("after a refusal, replies still stream")
		}
		again.Partial("再来")
		synctest.Wait()
		if n := len(sim.Calls(feishusim.PathCards)); n != 1 {
			t.Errorf("%d card requests, want the refused one only", n)
		}
		if n := len(logs.matching(slog.LevelWarn, "refused CardKit")); n != 1 {
			t.Errorf("the refusal logged %d times", n)
		}
		rec, _, err := tr.Get(context.Background(), trace.KeyOf(trigger))
		must(t, err)
		n := 0
		for _, s := range rec.Steps {
			if s.Stage == trace.StageDeliver && s.Outcome == "no card" && strings.Contains(s.Detail, "99991672") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("the refusal traced %d times: %+v", n, rec.Steps)
		}
	})
}

// TestCardOfAnUndeliveredReplyIsRecalled: a card whose reply was never
// delivered (the turn failed or was stopped) does not stay showing its
// text, and a late delta makes no new one.
func TestCardOfAnUndeliveredReplyIsRecalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, trigger := cardSim(t)
		a := cardAccount(sim, &logRecorder{}, nil)
		r := a.ReplierFor(trigger)
		r.Partial("写到一半")
		synctest.Wait()
		sent := sim.Sent()
		if len(sent) != 1 {
			t.Fatalf("sent %+v, want the card", sent)
		}
		r.(channel.LiveEnder).EndLive(context.Background())
		if m, _ := sim.Message(sent[0].MessageID); !m.Deleted {
			t.Error("the card of an undelivered reply was not recalled")
		}
		r.Partial("迟到的")
		synctest.Wait()
		if len(sim.Cards()) != 1 || len(sim.Sent()) != 1 {
			t.Errorf("a delta after the end made %d cards, %d messages", len(sim.Cards()), len(sim.Sent()))
		}
	})
}

// TestStreamingOffSendsWhole: an account set to "off" shows nothing live.
func TestStreamingOffSendsWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, trigger := cardSim(t)
		a := cardAccount(sim, &logRecorder{}, func(o *Options) { o.Streaming = StreamingOff })
		r := a.ReplierFor(trigger)
		if r.(channel.PartialViewer).ShowsPartial() {
			t.Error("streaming off, yet the replier shows partial text")
		}
		r.Partial("不该出现")
		synctest.Wait()
		if _, err := r.Deliver(context.Background(), msg.Outbound{ID: "t#1", Account: trigger.Account, Peer: group, Text: "完整的回答"}); err != nil {
			t.Fatal(err)
		}
		if n := len(sim.Calls(feishusim.PathCards)); n != 0 {
			t.Errorf("%d card requests with streaming off", n)
		}
		if sent := sim.Sent(); len(sent) != 1 || sent[0].MsgType != "text" {
			t.Errorf("sent %+v", sent)
		}
	})
}

// TestCardFinishedAfterARestart: a reply whose card was not finished
// before pincer stopped is finished by the next run's outbox, with the
// text it stored: the same card gets the final text and closes, and no
// second message is posted.
func TestCardFinishedAfterARestart(t *testing.T) {
	r := newRig(t, func(o *Options) { o.Streaming = StreamingCard })
	id, err := r.sim.AddMessage(feishusim.Message{ChatID: groupChat, SenderID: userA, Content: `{"text":"讲个故事"}`})
	must(t, err)
	trigger := msg.Message{Channel: ChannelID, Account: msg.DefaultAccount, Peer: group, ID: msg.MessageID(id), Sender: msg.Sender{ID: userA, Name: "张三"}}
	path := filepath.Join(t.TempDir(), "pincer.db")

	st := openStore(t, path)
	ob := outbox.New(outbox.Options{Store: st, MinBackoff: time.Hour})
	r.a.opts.Outbox = ob
	ob.Register(ChannelID, r.a.ID(), r.a)
	rep := r.a.ReplierFor(trigger)
	rep.Partial("从前有座山")
	waitFor(t, func() bool { return len(r.sim.Sent()) == 1 })
	card := r.sim.Cards()[0].ID
	// The platform fails the final text: the reply stays in the outbox.
	r.sim.QueueFault("PUT "+feishusim.PathCards+"/"+card+"/elements/"+cardElement+"/content",
		feishusim.Fault{Code: feishusim.CodeInternalError, Status: http.StatusInternalServerError})
	final := "从前有座山，山里有座庙。"
	if _, err := rep.Deliver(context.Background(), msg.Outbound{ID: "story#1", Account: trigger.Account, Peer: group, Text: final}); err != nil {
		t.Fatal(err)
	}
	if ob.Pending() != 1 {
		t.Fatalf("%d replies pending, want the card's", ob.Pending())
	}
	ob.Close()
	must(t, st.Close())

	// The next run: a new account, outbox and store over the same file.
	st = openStore(t, path)
	next := New(r.options(r.api.URL))
	ob = outbox.New(outbox.Options{Store: st})
	defer ob.Close()
	ob.Register(ChannelID, next.ID(), next)
	must(t, ob.Start(context.Background()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must(t, ob.Drain(ctx))

	c := r.sim.Cards()[0]
	if len(r.sim.Cards()) != 1 || c.Elements[cardElement] != final || c.Streaming {
		t.Errorf("card after the restart: %+v", c)
	}
	if sent := r.sim.Sent(); len(sent) != 1 || shownCard(t, sent[0]) != card {
		t.Errorf("sent %+v, want only the card's message", sent)
	}
}

// TestCardNotTakenOverIsNoRefusal: when the card of the run before cannot
// be written into, the reply is sent whole beside it, and the account
// still streams its next replies into cards.
func TestCardNotTakenOverIsNoRefusal(t *testing.T) {
	r := newRig(t, func(o *Options) { o.Streaming = StreamingCard })
	trigger, _, next := cutOffRun(t, r)
	r.sim.FailNext("POST "+feishusim.PathCards+"/id_convert", feishusim.CodeScopeMissing)
	rep := next.ReplierFor(trigger)
	rep.Partial("很久很久以前，")
	if _, err := rep.Deliver(context.Background(), msg.Outbound{ID: "story#1", Account: trigger.Account, Peer: group, Text: "很久很久以前。"}); err != nil {
		t.Fatal(err)
	}
	sent := r.sim.Sent()
	if len(sent) != 2 || sent[1].MsgType != "text" || sentText(t, sent[1]) != "很久很久以前。" {
		t.Errorf("sent %+v, want the reply whole after the first run's card", sent)
	}
	if !next.streamsCards() {
		t.Error("a card not taken over turned streaming off")
	}
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cutOffRun is a run that streamed a reply into a card and was killed
// (nothing delivered, nothing recalled), and the next run's account, on
// the same store and platform.
func cutOffRun(t *testing.T, r *rig) (trigger msg.Message, first feishusim.Card, next *Account) {
	t.Helper()
	id, err := r.sim.AddMessage(feishusim.Message{ChatID: groupChat, SenderID: userA, Content: `{"text":"讲个故事"}`})
	must(t, err)
	trigger = msg.Message{Channel: ChannelID, Account: msg.DefaultAccount, Peer: group, ID: msg.MessageID(id), Sender: msg.Sender{ID: userA, Name: "张三"}}
	path := filepath.Join(t.TempDir(), "pincer.db")
	st := openStore(t, path)
	r.a.opts.Sent = st
	r.a.ReplierFor(trigger).Partial("从前有座山，")
	waitFor(t, func() bool { return len(r.sim.Sent()) == 1 })
	waitFor(t, func() bool {
		known, err := st.WasSent(context.Background(), ChannelID, msg.DefaultAccount, msg.MessageID(r.sim.Sent()[0].MessageID))
		return err == nil && known
	})
	first = r.sim.Cards()[0]
	must(t, st.Close()) // the run ends here, its card streaming

	o := r.options(r.api.URL)
	o.Streaming, o.Sent = StreamingCard, openStore(t, path)
	return trigger, first, New(o)
}

// TestCardCutOffByARestartIsTakenOver: a run killed while its reply
// streamed into a card leaves the card's message; the next run, answering
// the same message again, writes its reply into that card rather than
// posting another.
func TestCardCutOffByARestartIsTakenOver(t *testing.T) {
	r := newRig(t, func(o *Options) { o.Streaming = StreamingCard })
	trigger, first, next := cutOffRun(t, r)
	rep := next.ReplierFor(trigger)
	rep.Partial("很久很久以前，")
	defer func() {
		if t.Failed() {
			t.Logf("log:\n%s", strings.Join(r.logs.matching(slog.LevelWarn), "\n"))
			t.Logf("cards: %+v\nsent: %+v", r.sim.Cards(), r.sim.Sent())
		}
	}()
	waitFor(t, func() bool {
		cards := r.sim.Cards()
		return cards[0].Elements[cardElement] == "很久很久以前，"
	})
	final := "很久很久以前，有座山。"
	mid, err := rep.Deliver(context.Background(), msg.Outbound{ID: "story#1", Account: trigger.Account, Peer: group, Text: final})
	must(t, err)

	sent := r.sim.Sent()
	if len(sent) != 1 || shownCard(t, sent[0]) != first.ID || string(mid) != sent[0].MessageID {
		t.Errorf("sent %+v, delivered as %q; want only the first run's card message", sent, mid)
	}
	c := r.sim.Cards()[0]
	if c.ID != first.ID || c.Elements[cardElement] != final || c.Streaming {
		t.Errorf("the first run's card after the second: %+v", c)
	}
	for i := 1; i < len(c.Updates); i++ {
		if c.Updates[i].Sequence <= c.Updates[i-1].Sequence {
			t.Errorf("sequences do not rise across the restart: %+v", c.Updates)
		}
	}
}
