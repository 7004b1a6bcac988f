package onebot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pincerbot/pincer/internal/channel/onebot/onebottest"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
)

func TestReverseWebSocketAuthorization(t *testing.T) {
	tests := []struct {
		name, token, auth, query string
		wantStatus               int // 0: accepted
	}{
		{name: "bearer", token: "s3cret", auth: "Bearer s3cret"},
		{name: "go-cqhttp Token scheme", token: "s3cret", auth: "Token s3cret"},
		{name: "query token", token: "s3cret", query: "?access_token=s3cret"},
		{name: "bare token", token: "s3cret", auth: "s3cret"},
		{name: "Basic scheme", token: "s3cret", auth: "Basic czNjcmV0", wantStatus: http.StatusUnauthorized},
		{name: "Basic scheme with no token configured", auth: "Basic czNjcmV0", wantStatus: http.StatusUnauthorized},
		{name: "a scheme and the token", token: "s3cret", auth: "Custom s3cret", wantStatus: http.StatusUnauthorized},
		{name: "wrong token", token: "s3cret", auth: "Bearer guess", wantStatus: http.StatusForbidden},
		{name: "missing token", token: "s3cret", wantStatus: http.StatusUnauthorized},
		{name: "NapCat with no token sends a bare Bearer", auth: "Bearer"},
		{name: "nothing configured, nothing sent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, AccountOptions{Reverse: true, Token: tt.token}, nil)
				defer r.close()
				err := r.peer.DialReverse(context.Background(), rigReverse+tt.query, onebottest.ReverseOptions{
					SelfID: 3300000001, Authorization: tt.auth, Role: "Event", Client: r.net.Client(),
				})
				if tt.wantStatus == 0 {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					synctest.Wait()
					if stateOf(r.acct) != StateConnected {
						t.Errorf("state %s", stateOf(r.acct))
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), http.StatusText(tt.wantStatus)) && !strings.Contains(err.Error(), "HTTP "+strconv.Itoa(tt.wantStatus)) {
					t.Errorf("want HTTP %d, got %v", tt.wantStatus, err)
				}
			})
		})
	}
}

func TestReverseWebSocketCarriesEventsAndActions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, AccountOptions{Reverse: true, ReplyToTrigger: true}, nil)
		defer r.close()
		r.sink.text = "hi"
		synctest.Wait()
		if stateOf(r.acct) != StateListening {
			t.Errorf("before a connection: %s", stateOf(r.acct))
		}
		ctx := context.Background()
		if err := r.peer.DialReverse(ctx, rigReverse, onebottest.ReverseOptions{SelfID: 3300000001, Authorization: "Bearer", Client: r.net.Client()}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if r.acct.Self() != 3300000001 {
			t.Errorf("self from X-Self-ID: %d", r.acct.Self())
		}
		if err := r.peer.Push(ctx, groupEvent(7, 10001, "hello")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if diff := cmp.Diff([]string{"7"}, r.sink.ids()); diff != "" {
			t.Errorf("dispatched (-want +got):\n%s", diff)
		}
		if sends := r.calls("send_group_msg"); len(sends) != 1 {
			t.Errorf("the reply goes back over the reverse connection: %+v", r.peer.Calls())
		}
		if len(r.calls("get_login_info")) != 0 {
			t.Error("X-Self-ID made get_login_info unnecessary")
		}
	})
}

func TestSecondReverseConnectionReplacesTheFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, AccountOptions{Reverse: true}, nil)
		defer r.close()
		ctx := context.Background()
		opts := onebottest.ReverseOptions{SelfID: 3300000001, Client: r.net.Client()}
		for range 2 {
			if err := r.peer.DialReverse(ctx, rigReverse, opts); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}
		if n := r.peer.Conns(); n != 1 {
			t.Fatalf("%d connections open; the old one must be closed", n)
		}
		// One connection left, so one delivery.
		if err := r.peer.Push(ctx, groupEvent(8, 10001, "once")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if diff := cmp.Diff([]string{"8"}, r.sink.ids()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

func TestReverseWebSocketOfAnotherAccountIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, AccountOptions{Reverse: true, SelfID: 3300000001}, nil)
		defer r.close()
		err := r.peer.DialReverse(context.Background(), rigReverse, onebottest.ReverseOptions{SelfID: 3300000002, Client: r.net.Client()})
		if err == nil || !strings.Contains(err.Error(), "403") {
			t.Errorf("want 403, got %v", err)
		}
	})
}

func TestEventPostSignature(t *testing.T) {
	raw, _ := json.Marshal(groupEvent(11, 10001, "signed"))
	tests := []struct {
		name         string
		secret       string
		opts         onebottest.PostOptions
		body         []byte
		wantStatus   int
		wantDispatch bool
	}{
		{name: "valid", secret: "k", opts: onebottest.PostOptions{Secret: "k"}, wantStatus: 204, wantDispatch: true},
		{name: "missing", secret: "k", wantStatus: 401},
		{name: "wrong key", secret: "k", opts: onebottest.PostOptions{Secret: "other"}, wantStatus: 403},
		{name: "not hex", secret: "k", opts: onebottest.PostOptions{Signature: "sha1=zz"}, wantStatus: 403},
		{name: "unsigned, no secret", wantStatus: 204, wantDispatch: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, AccountOptions{Post: true, PostSecret: tt.secret}, nil)
				defer r.close()
				tt.opts.Client = r.net.Client()
				tt.opts.SelfID = 3300000001
				status, err := onebottest.Post(context.Background(), rigPost, raw, tt.opts)
				if err != nil {
					t.Fatal(err)
				}
				if status != tt.wantStatus {
					t.Errorf("status %d, want %d", status, tt.wantStatus)
				}
				synctest.Wait()
				if got := len(r.sink.ids()) == 1; got != tt.wantDispatch {
					t.Errorf("dispatched %v, want %v", r.sink.ids(), tt.wantDispatch)
				}
			})
		})
	}
}

func TestSignatureIsOverTheRawBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, AccountOptions{Post: true, PostSecret: "k"}, nil)
		defer r.close()
		// Escapes that re-encoding would change: the HMAC must be computed
		// on the bytes as sent.
		raw := []byte(`{"post_type":"message","message_type":"private","message_id":12,"user_id":10001,"self_id":3300000001,"time":1774420200,` +
			`"sender":{"user_id":10001,"nickname":"\u5f20\u4e09"},"message":"a\/b \u0026 c"}`)
		status, err := onebottest.Post(context.Background(), rigPost, raw, onebottest.PostOptions{Secret: "k", Client: r.net.Client()})
		if err != nil || status != 204 {
			t.Fatalf("status %d err %v", status, err)
		}
		synctest.Wait()
		r.sink.mu.Lock()
		defer r.sink.mu.Unlock()
		if len(r.sink.got) != 1 || r.sink.got[0].Text != "a/b & c" || r.sink.got[0].Sender.Name != "张三" {
			t.Errorf("got %+v", r.sink.got)
		}
	})
}

func TestPostRetriesAndSecondTransportAreDeduplicated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, AccountOptions{Post: true, Reverse: true}, nil)
		defer r.close()
		ctx := context.Background()
		if err := r.peer.DialReverse(ctx, rigReverse, onebottest.ReverseOptions{SelfID: 3300000001, Client: r.net.Client()}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		ev := groupEvent(21, 10001, "twice")
		raw, _ := json.Marshal(ev)
		// go-cqhttp retries a POST three times; the reverse socket carries
		// the same event as well.
		for range 3 {
			if status, err := onebottest.Post(ctx, rigPost, raw, onebottest.PostOptions{Client: r.net.Client()}); err != nil || status != 204 {
				t.Fatalf("status %d err %v", status, err)
			}
		}
		if err := r.peer.Push(ctx, ev); err != nil {
			t.Fatal(err)
		}
		// A different chat with the same message id is another message.
		other := groupEvent(21, 10001, "elsewhere")
		other["group_id"] = 456
		if err := r.peer.Push(ctx, other); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if diff := cmp.Diff([]string{"21", "21"}, r.sink.ids()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

func TestActionsGoOverTheHTTPAPIWithoutAWebSocket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, AccountOptions{Post: true, HTTPURL: "http://onebot.test", Token: "t"}, nil)
		r.peer.Token = "t"
		defer r.close()
		r.sink.text = "over http"
		raw, _ := json.Marshal(privateEvent(31, 10001, "hi"))
		if status, err := onebottest.Post(context.Background(), rigPost, raw, onebottest.PostOptions{Secret: "", Client: r.net.Client()}); err != nil || status != 204 {
			t.Fatalf("status %d err %v", status, err)
		}
		synctest.Wait()
		sends := r.calls("send_private_msg")
		if len(sends) != 1 {
			t.Fatalf("calls %+v errs %v", r.peer.Calls(), r.sink.errs)
		}
		var p sentMessage
		_ = json.Unmarshal(sends[0].Params, &p)
		if p.UserID != 10001 || len(p.Message) != 1 || p.Message[0].Str("text") != "over http" {
			t.Errorf("params %s", sends[0].Params)
		}
	})
}

func TestHTTPCallerErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := onebottest.NewPipeNet()
		p := onebottest.NewOnPipe(n, "onebot.test", func(action string, _ json.RawMessage) (any, int, string) {
			if action == "send_group_msg" {
				return nil, 1200, "Timeout: NTEvent sendMsg"
			}
			return map[string]any{"ok": true}, 0, ""
		})
		defer p.Close()
		p.Token = "t"
		ctx := context.Background()
		good := &httpCaller{BaseURL: p.HTTPURL, Token: "t", Client: n.Client()}
		if data, err := good.Call(ctx, "get_status", nil, 0); err != nil || string(data) != `{"ok":true}` {
			t.Errorf("data %s err %v", data, err)
		}
		if _, err := good.Call(ctx, "send_group_msg", map[string]any{"group_id": 1}, 0); !errors.Is(err, wire.ErrRiskControl) {
			t.Errorf("retcode 1200 over HTTP: %v", err)
		}
		bad := &httpCaller{BaseURL: p.HTTPURL, Token: "wrong", Client: n.Client()}
		if _, err := bad.Call(ctx, "get_status", nil, 0); !errors.Is(err, errTokenRefused) {
			t.Errorf("wrong token: %v", err)
		}
		p.Silence("slow")
		if _, err := good.Call(ctx, "slow", nil, 3*time.Second); !errors.Is(err, errTimeout) {
			t.Errorf("timeout: %v", err)
		}
	})
}

func TestHeartbeatSilenceDropsTheConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/"}, nil)
		defer r.close()
		ctx := context.Background()
		if err := r.peer.Connected(ctx); err != nil {
			t.Fatal(err)
		}
		if err := r.peer.Push(ctx, map[string]any{"post_type": "meta_event", "meta_event_type": "heartbeat", "interval": 5000, "self_id": 3300000001}); err != nil {
			t.Fatal(err)
		}
		// Heartbeats keep coming for a while: the connection stays.
		for range 4 {
			time.Sleep(5 * time.Second)
			if err := r.peer.Push(ctx, map[string]any{"post_type": "meta_event", "meta_event_type": "heartbeat", "interval": 5000, "self_id": 3300000001}); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if got := len(r.peer.Calls()); stateOf(r.acct) != StateConnected {
			t.Fatalf("state %s (%d calls)", stateOf(r.acct), got)
		}
		// Then the implementation hangs without closing the socket: after
		// two intervals and five seconds the account gives up on it and
		// dials again.
		time.Sleep(14 * time.Second)
		synctest.Wait()
		if stateOf(r.acct) != StateConnected {
			t.Fatalf("dropped too early: %s", stateOf(r.acct))
		}
		time.Sleep(2 * time.Second)
		if err := r.peer.Connected(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if stateOf(r.acct) != StateConnected || r.peer.Conns() != 1 {
			t.Errorf("after the silence: state %s, %d connections", stateOf(r.acct), r.peer.Conns())
		}
	})
}

func TestRiskControlPausesSendsToThatChat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		blocked := true
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", backoff: &sendBackoff{Min: time.Minute, Max: 4 * time.Minute}}, func(action string, params json.RawMessage) (any, int, string) {
			if action == "send_group_msg" && blocked && strings.Contains(string(params), `"group_id":1`) {
				return nil, wire.RetcodeRiskControl, "Timeout: NTEvent serviceAndMethod:NodeIKernelMsgService/sendMsg"
			}
			return answerSends(action, params)
		})
		defer r.close()
		ctx := context.Background()
		if err := r.peer.Connected(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		g1 := msg.Outbound{Peer: msg.Peer{Kind: msg.Group, ID: "1"}, Text: "x"}
		g2 := msg.Outbound{Peer: msg.Peer{Kind: msg.Group, ID: "2"}, Text: "y"}
		if _, err := r.acct.Send(ctx, g1); !errors.Is(err, wire.ErrRiskControl) {
			t.Fatalf("first send: %v", err)
		}
		for range 5 {
			if _, err := r.acct.Send(ctx, g1); !errors.Is(err, errSendPaused) {
				t.Fatalf("during the pause: %v", err)
			}
		}
		if n := len(r.calls("send_group_msg")); n != 1 {
			t.Errorf("%d sends reached QQ during the pause; want 1", n)
		}
		if _, err := r.acct.Send(ctx, g2); err != nil {
			t.Errorf("another chat is not paused: %v", err)
		}
		// After the pause (at most 1.25 min with jitter) a send is tried
		// again; it fails again, and the next pause is longer.
		time.Sleep(76 * time.Second)
		if _, err := r.acct.Send(ctx, g1); !errors.Is(err, wire.ErrRiskControl) {
			t.Fatalf("after the first pause: %v", err)
		}
		time.Sleep(76 * time.Second)
		if _, err := r.acct.Send(ctx, g1); !errors.Is(err, errSendPaused) {
			t.Fatalf("the second pause lasts two minutes: %v", err)
		}
		time.Sleep(76 * time.Second)
		blocked = false
		if _, err := r.acct.Send(ctx, g1); err != nil {
			t.Fatalf("after the second pause: %v", err)
		}
		if _, err := r.acct.Send(ctx, g1); err != nil {
			t.Errorf("a success clears the pause: %v", err)
		}
	})
}

func TestReactions(t *testing.T) {
	group := msg.Peer{Kind: msg.Group, ID: "123"}
	tests := []struct {
		name       string
		app        string
		unsupports bool
		auto       bool
		peer       msg.Peer
		want       []string
	}{
		{name: "NapCat", app: "NapCat.Onebot", auto: true, peer: group, want: []string{`set_msg_emoji_like {"emoji_id":"76","message_id":55,"set":true}`}},
		{name: "Lagrange", app: "Lagrange.OneBot", auto: true, peer: group, want: []string{`set_group_reaction {"code":"76","group_id":123,"is_add":true,"message_id":55}`}},
		{name: "unknown implementation without emoji likes", unsupports: true, auto: true, peer: group, want: []string{
			`set_msg_emoji_like {"emoji_id":"76","message_id":55,"set":true}`,
			`set_group_reaction {"code":"76","group_id":123,"is_add":true,"message_id":55}`,
		}},
		{name: "groupAutoReact off", app: "NapCat.Onebot", peer: group},
		{name: "direct chats get none", app: "NapCat.Onebot", auto: true, peer: msg.Peer{Kind: msg.Direct, ID: "10001"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001, AutoReact: tt.auto, ReactEmoji: "76"}, func(action string, params json.RawMessage) (any, int, string) {
					switch action {
					case "get_version_info":
						if tt.app == "" {
							return nil, 1404, "unsupported"
						}
						return map[string]any{"app_name": tt.app}, 0, ""
					case "set_msg_emoji_like":
						if tt.unsupports {
							return nil, 1404, "unsupported"
						}
					}
					return nil, 0, ""
				})
				defer r.close()
				if err := r.peer.Connected(context.Background()); err != nil {
					t.Fatal(err)
				}
				time.Sleep(3 * time.Second) // past the wait for a first frame
				synctest.Wait()
				r.acct.Ack(context.Background(), tt.peer, "55")
				var got []string
				for _, c := range r.peer.Calls() {
					if strings.HasPrefix(c.Action, "set_") {
						var v any
						_ = json.Unmarshal(c.Params, &v)
						b, _ := json.Marshal(v)
						got = append(got, c.Action+" "+string(b))
					}
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestRetriesExhaustedIsTheAccountsState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, AccountOptions{WSURL: "ws://nowhere.test/", Reconnect: Reconnect{Enabled: true, Retries: 2, MinDelay: time.Second, MaxDelay: 2 * time.Second}}, nil)
		defer r.close()
		time.Sleep(time.Minute)
		synctest.Wait()
		if stateOf(r.acct) != StateFailed {
			t.Errorf("state %s, want %s", stateOf(r.acct), StateFailed)
		}
		select {
		case err := <-r.done:
			t.Fatalf("Run returned %v; the account must stay up for its other transports", err)
			r.done <- err
		default:
		}
	})
}

func TestReplyMentionsOnlyThePeopleShown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001}, nil)
		defer r.close()
		ctx := context.Background()
		if err := r.peer.Connected(ctx); err != nil {
			t.Fatal(err)
		}
		trigger := msg.Message{ID: "5", Peer: msg.Peer{Kind: msg.Group, ID: "123"}, Sender: msg.Sender{ID: "10003", Name: "用户C"}}
		rep := r.acct.ReplierFor(trigger)
		out := msg.Outbound{Peer: trigger.Peer, Text: "@用户A 和 @用户B 和 @陌生人", Mentionable: []msg.Sender{{ID: "10001", Name: "用户A"}, {ID: "10002", Name: "用户B"}}}
		if _, err := rep.Deliver(ctx, out); err != nil {
			t.Fatal(err)
		}
		sends := sentCalls(t, r.peer)
		var ats []string
		for _, s := range sends[0].Message {
			if s.Type == "at" {
				ats = append(ats, s.Str("qq"))
			}
		}
		if diff := cmp.Diff([]string{"10001", "10002"}, ats); diff != "" {
			t.Errorf("mentions (-want +got):\n%s", diff)
		}
	})
}

// TestReconnectBackfillsTheGap: implementations replay nothing after a
// disconnect; the new connection reads the active chat's history and hands
// on only what was missed (not what was seen, not the bot's own).
func TestReconnectBackfillsTheGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now().Unix()
		event := func(id, user, at int64, text string) map[string]any {
			ev := groupEvent(id, user, text)
			ev["time"] = at
			return ev
		}
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001}, func(action string, params json.RawMessage) (any, int, string) {
			if action == "get_group_msg_history" {
				return map[string]any{"messages": []any{
					event(1, 10001, now, "seen before the drop"),
					event(2, 10002, now+60, "sent while disconnected"),
					event(3, 3300000001, now+61, "the bot's own"),
				}}, 0, ""
			}
			return answerSends(action, params)
		})
		defer r.close()
		ctx := context.Background()
		if err := r.peer.Connected(ctx); err != nil {
			t.Fatal(err)
		}
		if err := r.peer.Push(ctx, event(1, 10001, now, "seen before the drop")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if len(r.calls("get_group_msg_history")) != 0 {
			t.Error("the first connection has nothing to backfill")
		}
		r.peer.DropAll()
		if err := r.peer.Connected(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if diff := cmp.Diff([]string{"1", "2"}, r.sink.ids()); diff != "" {
			t.Errorf("dispatched (-want +got):\n%s", diff)
		}
		if n := len(r.calls("get_group_msg_history")); n != 1 {
			t.Errorf("%d history calls", n)
		}
	})
}

// TestSendsToOneChatArePaced: messages to one group go at least a second
// apart (QQ flags rapid runs); another group is not held up.
func TestSendsToOneChatArePaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var log []string
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001, Pace: &Pacer{Gap: time.Second}}, func(action string, params json.RawMessage) (any, int, string) {
			if action == "send_group_msg" {
				var p sentMessage
				_ = json.Unmarshal(params, &p)
				mu.Lock()
				log = append(log, fmt.Sprintf("%d@%s", p.GroupID, time.Since(start).Truncate(100*time.Millisecond)))
				mu.Unlock()
			}
			return answerSends(action, params)
		})
		defer r.close()
		ctx := context.Background()
		if err := r.peer.Connected(ctx); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, g := range []string{"1", "1", "1", "2"} {
			wg.Go(func() {
				if _, err := r.acct.Send(ctx, msg.Outbound{Peer: msg.Peer{Kind: msg.Group, ID: g}, Text: "x"}); err != nil {
					t.Error(err)
				}
			})
			synctest.Wait()
		}
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		var group1 []time.Duration
		other := false
		for _, e := range log {
			g, at, _ := strings.Cut(e, "@")
			d, _ := time.ParseDuration(at)
			if g == "1" {
				group1 = append(group1, d)
			} else {
				other = d == 0
			}
		}
		if len(group1) != 3 || group1[0] != 0 || group1[1] < time.Second || group1[2]-group1[1] < time.Second || group1[2] > 2400*time.Millisecond {
			t.Errorf("group 1 sends at %v", group1)
		}
		if !other {
			t.Errorf("group 2 waited: %v", log)
		}
	})
}

// TestImplementationDialingBeforeRunWaits: an implementation may dial in
// the moment the listener is up, before the account runs; it waits and
// is served rather than refused.
func TestImplementationDialingBeforeRunWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := onebottest.NewPipeNet()
		peer := onebottest.NewOnPipe(n, "onebot.test", answerSends)
		defer peer.Close()
		a := NewAccount(AccountOptions{Reverse: true, Post: true})
		mux := http.NewServeMux()
		mux.HandleFunc("/ws", a.ServeReverse)
		mux.HandleFunc("/post", a.ServePost)
		srv := &http.Server{Handler: mux}
		ln := n.Listen("pincer.test")
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		ctx := context.Background()
		dialed := make(chan error, 1)
		go func() {
			dialed <- peer.DialReverse(ctx, "ws://pincer.test/ws", onebottest.ReverseOptions{SelfID: 3300000001, Client: n.Client()})
		}()
		raw, _ := json.Marshal(groupEvent(1, 10001, "early"))
		status, err := onebottest.Post(ctx, "http://pincer.test/post", raw, onebottest.PostOptions{Client: n.Client()})
		if err != nil || status != http.StatusNoContent {
			t.Fatalf("an early POST is queued: %d %v", status, err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		sink := &recordSink{}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- a.Run(runCtx, sink) }()
		if err := <-dialed; err != nil {
			t.Fatalf("the early reverse connection: %v", err)
		}
		synctest.Wait()
		if diff := cmp.Diff([]string{"1"}, sink.ids()); diff != "" {
			t.Errorf("dispatched (-want +got):\n%s", diff)
		}
		if stateOf(a) != StateConnected {
			t.Errorf("state %s", stateOf(a))
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if status, _ := onebottest.Post(ctx, "http://pincer.test/post", raw, onebottest.PostOptions{Client: n.Client()}); status != http.StatusServiceUnavailable {
			t.Errorf("after Run: %d", status)
		}
		// It runs again (a cluster's instance that holds it once more),
		// one Run at a time.
		again, stop := context.WithCancel(ctx)
		go func() { done <- a.Run(again, sink) }()
		synctest.Wait()
		if err := a.Run(ctx, sink); err == nil {
			t.Error("an account ran twice at once")
		}
		stop()
		if err := <-done; err != nil {
			t.Errorf("the second Run: %v", err)
		}
	})
}
