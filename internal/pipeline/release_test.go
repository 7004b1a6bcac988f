package pipeline

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/msg"
)

// TestReleaseHandsChatsOver: two chats each have a realtime window open
// and a digest window filling; the pipeline releases one of them. Its
// windows never fire there, while the other chat's do; a second pipeline
// over the same store (the chat's next owner) restores it, twice, and
// answers its burst and its digest once each, with the same messages.
func TestReleaseHandsChatsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := tempStore(t)
		a, b := msg.Peer{Kind: msg.Group, ID: "20000002"}, msg.Peer{Kind: msg.Group, ID: "30000003"}
		isA := func(p msg.Peer) bool { return p == a }
		all := func(msg.Peer) bool { return true }
		in := func(peer msg.Peer, m msg.Message) msg.Message { m.Peer = peer; return m }

		eng1 := &admitEngine{st: st}
		p1 := durable(t, st, eng1)
		if err := p1.RestoreWhere(ctx, all); err != nil { // the first owner of both
			t.Fatal(err)
		}
		var mu sync.Mutex
		outcome := map[msg.MessageID]error{}
		send := func(p *Pipeline, m msg.Message) {
			go func() {
				err := p.Dispatch(ctx, m, &replier{trigger: m, s: &sent{}})
				mu.Lock()
				outcome[m.ID] = err
				mu.Unlock()
			}()
			synctest.Wait()
		}
		send(p1, in(a, gm("a1", "1001", "甲", "早上好", 0)))
		send(p1, in(a, mention(gm("a2", "1002", "乙", "", time.Second), "帮我看看天气")))
		send(p1, in(a, gm("a3", "1002", "乙", "北京的", time.Second)))
		send(p1, in(b, gm("b1", "2001", "丙", "晚上好", 0)))
		send(p1, in(b, mention(gm("b2", "2002", "丁", "", time.Second), "明天开会吗")))
		send(p1, in(b, gm("b3", "2002", "丁", "几点", time.Second)))

		p1.Release(isA)
		synctest.Wait()
		mu.Lock()
		if err := outcome["a2"]; !errors.Is(err, ErrReleased) {
			t.Errorf("the burst's first message learns %v, want ErrReleased", err)
		}
		mu.Unlock()
		if h := p1.Holds(a); len(h.History) != 0 || len(h.Windows) != 0 {
			t.Errorf("the released chat is still held: %+v", h)
		}
		time.Sleep(time.Second) // both windows would have ended by quiet
		synctest.Wait()
		if got := peersOf(eng1.turns()); !slices.Equal(got, []string{"group:30000003 b2"}) {
			t.Fatalf("turns of the first owner after the release: %v, want B's burst only", got)
		}

		// The next owner of A, over the same store.
		eng2 := &admitEngine{st: st}
		p2 := durable(t, st, eng2)
		for range 2 {
			if err := p2.RestoreWhere(ctx, isA); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
		synctest.Wait()
		got := eng2.turns()
		if len(got) != 1 || got[0].Message.ID != "a2" || got[0].RawBody != "帮我看看天气\n北京的" {
			t.Fatalf("A's burst at its next owner: %+v", got)
		}
		if body := got[0].BodyForAgent; !strings.Contains(body, "甲(1001): 早上好") || strings.Contains(body, "晚上好") {
			t.Errorf("A's burst is answered with A's history, restored once:\n%s", body)
		}

		time.Sleep(10 * time.Minute) // both digest windows are due
		synctest.Wait()
		for _, c := range []struct {
			name string
			eng  *admitEngine
			want []string
		}{
			{"first owner", eng1, []string{"group:30000003 b2", "group:30000003 digest 晚上好|@机器人 明天开会吗|几点"}},
			{"next owner", eng2, []string{"group:20000002 a2", "group:20000002 digest 早上好|@机器人 帮我看看天气|北京的"}},
		} {
			if got := peersOf(c.eng.turns()); !slices.Equal(got, c.want) {
				t.Errorf("%s's turns: %q, want %q", c.name, got, c.want)
			}
		}
	})
}

// peersOf names turns by chat and message, and digests by chat and the
// lines they read.
func peersOf(turns []Turn) []string {
	var out []string
	for _, t := range turns {
		if !t.NoCommands {
			out = append(out, t.Message.Peer.String()+" "+string(t.Message.ID))
			continue
		}
		var lines []string
		for _, l := range strings.Split(t.BodyForAgent, "\n")[2:] {
			_, text, _ := strings.Cut(l, ": ")
			lines = append(lines, text)
		}
		out = append(out, t.Message.Peer.String()+" digest "+strings.Join(lines, "|"))
	}
	slices.Sort(out)
	return out
}
