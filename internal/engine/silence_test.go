package engine

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/reply"
)

// TestHeartbeatDecoratedAckIsNotDelivered: a heartbeat acknowledged with
// a decorated or punctuated token, or with a short note beside it, is not
// delivered, with block streaming on too (a heartbeat's reply is held to
// its end, when an acknowledgement can be told); a real report is.
func TestHeartbeatDecoratedAckIsNotDelivered(t *testing.T) {
	for _, tt := range []struct{ reply, want string }{
		{"**HEARTBEAT_OK**", ""},
		{"HEARTBEAT_OK.", ""},
		{"<code>HEARTBEAT_OK</code> all good", ""},
		{"All quiet.\n\nHEARTBEAT_OK", ""},
		{"NO_REPLY", ""},
		{"The deploy failed at 3 am.\n\nIt needs a look.", "The deploy failed at 3 am.\n\nIt needs a look."},
	} {
		t.Run(tt.reply, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &beatProvider{beatReply: tt.reply}
				e := heartbeatEngine(t, p, Heartbeat{Every: time.Hour})
				e.opts.Blocks = &reply.ChunkOptions{MinChars: 1, MaxChars: 100}
				a := &sendAdapter{}
				if err := e.Dispatch(context.Background(), message("1", "b1", "hi", t0), &recorder{}); err != nil {
					t.Fatal(err)
				}
				stop := runHeartbeats(t, e, a)
				defer stop()
				time.Sleep(time.Hour)
				synctest.Wait()
				if got := strings.Join(a.outTexts(), "|"); got != tt.want {
					t.Errorf("delivered %q, want %q", got, tt.want)
				}
			})
		})
	}
}
