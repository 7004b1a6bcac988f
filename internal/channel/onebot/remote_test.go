package onebot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
)

// TestRemoteActionsGoThroughTheHolder: an account of a process without
// the connection runs its actions through the process holding it (here
// the rig's account, called directly where a cluster goes over NATS), and
// gets their data and their errors as the holder met them; the holder
// never passes a call on to a third process.
func TestRemoteActionsGoThroughTheHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, AccountOptions{WSURL: "ws://onebot.test/", SelfID: 3300000001}, func(action string, params json.RawMessage) (any, int, string) {
			switch action {
			case "get_msg":
				if strings.Contains(string(params), `"message_id":404`) {
					return nil, 100, "message not found"
				}
				return map[string]any{"message_id": 7, "time": 1774420200, "sender": map[string]any{"user_id": 10001, "nickname": "张三"},
					"message": []any{map[string]any{"type": "text", "data": map[string]any{"text": "看这个，好吗？"}}}}, 0, ""
			}
			return answerSends(action, params)
		})
		defer r.close()
		ctx := context.Background()
		if err := r.peer.Connected(ctx); err != nil {
			t.Fatal(err)
		}
		holder := r.acct
		hops := 0
		away := NewAccount(AccountOptions{ID: "default", Remote: RemoteCaller(func(ctx context.Context, call []byte) ([]byte, error) {
			hops++
			return holder.ServeRemote(ctx, call)
		})})
		away.LearnSelf(3300000001)
		if away.Self() != 3300000001 {
			t.Errorf("self = %v", away.Self())
		}
		m, err := away.FetchMessage(ctx, "7")
		if err != nil || m.Text != "看这个，好吗？" || m.Sender.Name != "张三" {
			t.Errorf("get_msg through the holder: %+v %v", m, err)
		}
		var ae *wire.ActionError
		if _, err := away.FetchMessage(ctx, "404"); !errors.As(err, &ae) || ae.Retcode != 100 || ae.Message != "message not found" {
			t.Errorf("the holder's action error must come back as it was: %v", err)
		}
		id, err := away.Send(ctx, msg.Outbound{Account: "default", Peer: msg.Peer{Kind: msg.Group, ID: "123"}, Text: "收到！"})
		if err != nil || id != "9001" {
			t.Errorf("send through the holder: %q %v", id, err)
		}
		sends := r.calls("send_group_msg")
		if len(sends) != 1 || !strings.Contains(string(sends[0].Params), "收到！") || !strings.Contains(string(sends[0].Params), `"group_id":123`) {
			t.Errorf("the implementation got %v", sends)
		}
		if hops != 3 {
			t.Errorf("%d calls went to the holder, want 3", hops)
		}

		// A holder without a connection answers "not connected" rather
		// than asking further.
		orphan := NewAccount(AccountOptions{ID: "default", Remote: RemoteCaller(func(context.Context, []byte) ([]byte, error) {
			t.Error("the holder passed a call on")
			return nil, errors.New("no")
		})})
		far := NewAccount(AccountOptions{ID: "default", Remote: RemoteCaller(func(ctx context.Context, call []byte) ([]byte, error) {
			return orphan.ServeRemote(ctx, call)
		})})
		if _, err := far.FetchMessage(ctx, "7"); !errors.Is(err, errNotConnected) {
			t.Errorf("a holder without its connection: %v", err)
		}
	})
}

// TestARemoteCallWhoseHolderWentAwayIsOfUnknownOutcome: a call whose
// holder went away under way fails as one over a dropped connection does
// (it may have been carried out), not as one that never reached a
// connection.
func TestARemoteCallWhoseHolderWentAwayIsOfUnknownOutcome(t *testing.T) {
	gone := RemoteCaller(func(ctx context.Context, call []byte) ([]byte, error) {
		return nil, fmt.Errorf("%w: cluster: the holder went away", ErrHolderGone)
	})
	_, err := gone.Call(context.Background(), "send_group_msg", map[string]any{"group_id": 1}, 0)
	if !errors.Is(err, errDisconnected) || errors.Is(err, errNotConnected) {
		t.Fatalf("a call whose holder went away: %v; want the error of a dropped connection", err)
	}
	none := RemoteCaller(func(ctx context.Context, call []byte) ([]byte, error) {
		return nil, errors.New("cluster: no holder serves the request")
	})
	if _, err := none.Call(context.Background(), "send_group_msg", nil, 0); !errors.Is(err, errNotConnected) {
		t.Fatalf("a call nobody took: %v; want not connected", err)
	}
}
