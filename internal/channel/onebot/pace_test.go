package onebot

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/trace"
)

// TestPacerWaits: a chat's next payload waits until the one before it is
// done, then the gap plus at most a fifth more, and says how long it
// waited; a send that never went out does not restart the gap; another
// chat does not wait, and a zero gap never does.
func TestPacerWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		one, two := msg.Peer{Kind: msg.Group, ID: "1"}, msg.Peer{Kind: msg.Group, ID: "2"}
		p := &Pacer{Gap: time.Second}
		if d, _, err := p.wait(ctx, one); d != 0 || err != nil {
			t.Fatalf("the first message waits %s, %v", d, err)
		}
		// A second payload waits for the first, which takes 3 s (chunks).
		start := time.Now()
		second := make(chan time.Duration, 1)
		go func() {
			d, _, err := p.wait(ctx, one)
			if err != nil {
				t.Error(err)
			}
			second <- d
		}()
		if d, _, _ := p.wait(ctx, two); d != 0 {
			t.Errorf("another chat waited %s", d)
		}
		p.done(two, true)
		time.Sleep(3 * time.Second)
		p.done(one, true)
		d := <-second
		if d != time.Since(start) || d < 4*time.Second || d > 4200*time.Millisecond {
			t.Errorf("the second payload waited %s (reported %s), want the first's 3 s and 1 s to 1.2 s", time.Since(start), d)
		}
		p.done(one, true)
		time.Sleep(2 * time.Second)
		if d, _, _ := p.wait(ctx, one); d != 0 {
			t.Errorf("after the gap passed, a payload waited %s", d)
		}
		p.done(one, false) // the send never went out: the gap still counts from the last message
		if d, _, _ := p.wait(ctx, one); d != 0 {
			t.Errorf("after a send that did not go out, the next waited %s", d)
		}
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, err := p.wait(canceled, one); err == nil {
			t.Error("a canceled wait must fail")
		}
		p.done(one, true)
		if _, _, err := p.wait(canceled, one); err == nil {
			t.Error("a wait canceled during the gap must fail")
		}
		if d, _, err := p.wait(ctx, one); err != nil || d < time.Second {
			t.Errorf("after canceled waits the turn is free again: waited %s, %v", d, err)
		}
		p.done(one, true)

		off := &Pacer{}
		for range 3 {
			if d, _, _ := off.wait(ctx, one); d != 0 {
				t.Errorf("a zero gap waited %s", d)
			}
			off.done(one, true)
		}
		var none *Pacer
		if d, _, err := none.wait(ctx, one); d != 0 || err != nil {
			t.Errorf("a nil pacer waited %s, %v", d, err)
		}
		none.done(one, true)
	})
}

// sendLog records when the peer received each send, by group, as offsets
// from the start of the bubble.
type sendLog struct {
	start time.Time
	mu    sync.Mutex
	at    map[int64][]time.Duration
}

func newSendLog() *sendLog { return &sendLog{start: time.Now(), at: map[int64][]time.Duration{}} }

func (l *sendLog) handler(action string, params json.RawMessage) (any, int, string) {
	if action == "send_group_msg" {
		var p sentMessage
		_ = json.Unmarshal(params, &p)
		l.mu.Lock()
		l.at[p.GroupID] = append(l.at[p.GroupID], time.Since(l.start))
		l.mu.Unlock()
	}
	return answerSends(action, params)
}

func (l *sendLog) of(group int64) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Duration(nil), l.at[group]...)
}

// sendTogether sends each payload through its account at once, all
// together in this order, and waits until every send is done.
func sendTogether(t *testing.T, sends ...accountSend) {
	t.Helper()
	var wg sync.WaitGroup
	for _, s := range sends {
		wg.Go(func() {
			if _, err := s.a.Send(context.Background(), s.out); err != nil {
				t.Error(err)
			}
		})
		synctest.Wait() // in this order
	}
	wg.Wait()
}

type accountSend struct {
	a   *Account
	out msg.Outbound
}

// toGroup is a send of text to group id through a.
func toGroup(a *Account, id, text string) accountSend {
	return accountSend{a, msg.Outbound{Peer: msg.Peer{Kind: msg.Group, ID: id}, Text: text}}
}

// TestSendGapOffSendsBackToBack: with the gap off (sendGapMs 0), replies
// to one chat and the chunks of a long reply all go at once.
func TestSendGapOffSendsBackToBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newSendLog()
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001, ChunkLimit: 10, Pace: &Pacer{Gap: 0}}, l.handler)
		defer r.close()
		if err := r.peer.Connected(context.Background()); err != nil {
			t.Fatal(err)
		}
		sendTogether(t, toGroup(r.acct, "1", "a"), toGroup(r.acct, "1", "b"), toGroup(r.acct, "1", strings.Repeat("long\n", 6)))
		got := l.of(1)
		if len(got) != 2+3 {
			t.Fatalf("sends at %v", got)
		}
		for _, d := range got {
			if d != 0 {
				t.Errorf("with the gap off every send goes at once: %v", got)
				break
			}
		}
	})
}

// TestSendGapSpacesOneChatOnly: with a gap of 1000 ms, consecutive
// messages to one chat, the chunks of a long reply included, go 1 s to
// 1.2 s apart; another chat is not held up.
func TestSendGapSpacesOneChatOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newSendLog()
		gap := time.Second
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001, ChunkLimit: 10, ChunkGap: gap, Pace: &Pacer{Gap: gap}}, l.handler)
		defer r.close()
		if err := r.peer.Connected(context.Background()); err != nil {
			t.Fatal(err)
		}
		sendTogether(t, toGroup(r.acct, "1", "a"), toGroup(r.acct, "1", strings.Repeat("long\n", 4)), toGroup(r.acct, "1", "b"), toGroup(r.acct, "2", "c"))
		got := l.of(1)
		if len(got) != 4 || got[0] != 0 {
			t.Fatalf("group 1 sends at %v", got)
		}
		for i := 1; i < len(got); i++ {
			if d := got[i] - got[i-1]; d < gap || d > gap+gap/5 {
				t.Errorf("group 1 sends at %v: %s between the %d. and the next, want 1 s to 1.2 s", got, d, i)
			}
		}
		if other := l.of(2); len(other) != 1 || other[0] != 0 {
			t.Errorf("group 2 waited for group 1: %v", other)
		}
	})
}

// TestSendGapIsPerAccount: two accounts in the same group pace their own
// messages with their own gaps.
func TestSendGapIsPerAccount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slowLog, fastLog := newSendLog(), newSendLog()
		slow := newRig(t, AccountOptions{ID: "slow", WSURL: "ws://onebot.test/", SelfID: 3300000001, Pace: &Pacer{Gap: 2 * time.Second}}, slowLog.handler)
		defer slow.close()
		fast := newRig(t, AccountOptions{ID: "fast", WSURL: "ws://onebot.test/", SelfID: 3300000002, Pace: &Pacer{Gap: 300 * time.Millisecond}}, fastLog.handler)
		defer fast.close()
		for _, r := range []*rig{slow, fast} {
			if err := r.peer.Connected(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		sendTogether(t, toGroup(slow.acct, "1", "a"), toGroup(fast.acct, "1", "a"), toGroup(slow.acct, "1", "b"), toGroup(fast.acct, "1", "b"))
		if got := slowLog.of(1); len(got) != 2 || got[1] < 2*time.Second || got[1] > 2400*time.Millisecond {
			t.Errorf("the account with a 2 s gap sent at %v", got)
		}
		if got := fastLog.of(1); len(got) != 2 || got[1] < 300*time.Millisecond || got[1] > 360*time.Millisecond {
			t.Errorf("the account with a 300 ms gap sent at %v", got)
		}
	})
}

var waitedStep = regexp.MustCompile(`^waited (\d+) ms for channels\.onebot\.accounts\.work\.sendGapMs(, then 1000 ms before each of its 2 other messages)?$`)

// TestSendGapWaitIsTraced: a reply that waited for the gap says so, with
// the setting's key path, in the trace of the message it answers; one
// that did not wait adds nothing, and a long reply names the gap between
// its messages.
func TestSendGapWaitIsTraced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := trace.New(trace.Options{})
		gap := time.Second
		r := newRig(t, AccountOptions{ID: "work", WSURL: "ws://onebot.test/", SelfID: 3300000001, ChunkLimit: 10, ChunkGap: gap, Trace: tr,
			Pace: &Pacer{Gap: gap, Setting: "channels.onebot.accounts.work.sendGapMs"}}, nil)
		defer r.close()
		ctx := context.Background()
		if err := r.peer.Connected(ctx); err != nil {
			t.Fatal(err)
		}
		group := msg.Peer{Kind: msg.Group, ID: "123"}
		asked := func(id string) msg.Message {
			m := msg.Message{Channel: ChannelID, Account: "work", Peer: group, ID: msg.MessageID(id), Sender: msg.Sender{ID: "10001", Name: "Ann"}, Text: "q"}
			tr.Begin(m)
			return m
		}
		first, second, long := asked("1"), asked("2"), asked("3")
		// One after the other, as the outbox sends a chat's replies.
		for _, c := range []struct {
			m    msg.Message
			text string
		}{{first, "a"}, {second, "b"}, {long, strings.Repeat("long\n", 6)}} {
			if _, err := r.acct.ReplierFor(c.m).Deliver(ctx, msg.Outbound{Account: "work", Peer: group, Text: c.text}); err != nil {
				t.Fatal(err)
			}
		}
		steps := func(m msg.Message) []string {
			rec, ok, err := tr.Get(ctx, trace.KeyOf(m))
			if !ok || err != nil {
				t.Fatalf("no trace of %s: %v", m.ID, err)
			}
			var out []string
			for _, s := range rec.Steps {
				if s.Stage == trace.StageDeliver {
					out = append(out, s.Detail)
				}
			}
			return out
		}
		if got := steps(first); len(got) != 0 {
			t.Errorf("the first reply waited for nothing, yet its trace says %q", got)
		}
		for _, c := range []struct {
			m    msg.Message
			long bool
		}{{second, false}, {long, true}} {
			got := steps(c.m)
			if len(got) != 1 {
				t.Fatalf("trace of %s: deliver steps %q", c.m.ID, got)
			}
			sub := waitedStep.FindStringSubmatch(got[0])
			if sub == nil || (sub[2] != "") != c.long {
				t.Fatalf("trace of %s: %q", c.m.ID, got[0])
			}
			if ms, _ := strconv.Atoi(sub[1]); ms < 1000 || ms > 1200 {
				t.Errorf("trace of %s: waited %d ms, want 1000 to 1200", c.m.ID, ms)
			}
		}
	})
}

// TestPacerChatGap: a chat with a gap of its own waits that gap, and one
// whose gap is 0 never waits, whatever the account's gap.
func TestPacerChatGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		slow, fast, other := msg.Peer{Kind: msg.Group, ID: "1"}, msg.Peer{Kind: msg.Group, ID: "2"}, msg.Peer{Kind: msg.Group, ID: "3"}
		p := &Pacer{Gap: time.Second, Setting: "channels.onebot.sendGapMs", For: func(peer msg.Peer) (time.Duration, string, bool) {
			switch peer {
			case slow:
				return 5 * time.Second, "channels.onebot.groups.1.sendGapMs", true
			case fast:
				return 0, "channels.onebot.groups.2.sendGapMs", true
			}
			return 0, "", false
		}}
		for _, c := range []struct {
			peer     msg.Peer
			min, max time.Duration
		}{{slow, 5 * time.Second, 6 * time.Second}, {fast, 0, 0}, {other, time.Second, 1200 * time.Millisecond}} {
			_, held, _ := p.wait(ctx, c.peer)
			if held {
				p.done(c.peer, true)
			}
			start := time.Now()
			_, held, _ = p.wait(ctx, c.peer)
			if d := time.Since(start); d < c.min || d > c.max {
				t.Errorf("%v waited %s, want %s to %s", c.peer, d, c.min, c.max)
			}
			if held {
				p.done(c.peer, true)
			}
		}
		if gap, setting := p.gapOf(slow); gap != 5*time.Second || setting != "channels.onebot.groups.1.sendGapMs" {
			t.Errorf("gapOf = %s, %s", gap, setting)
		}
	})
}
