package pipeline

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
)

// goroutineEngine records the goroutine each turn runs on.
type goroutineEngine struct {
	mu  sync.Mutex
	ids []string
}

func (e *goroutineEngine) Turn(context.Context, Turn, channel.Replier) error {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := bytes.Cut(buf, []byte(" ["))
	e.mu.Lock()
	e.ids = append(e.ids, string(id))
	e.mu.Unlock()
	return nil
}

// TestTurnsReuseTheirGoroutine: turns one after another run on the
// goroutine the first ran on, whose stack has grown for a turn already.
func TestTurnsReuseTheirGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := defaults()
		s.Realtime.Enabled = false
		g := newRig(t, s)
		eng := &goroutineEngine{}
		g.p.opts.Engine = eng
		for _, id := range []string{"m1", "m2", "m3"} {
			g.send(t, mention(gm(id, "10001", "张三", "", 0), "在吗"))
			time.Sleep(time.Second)
			synctest.Wait()
		}
		if len(eng.ids) != 3 {
			t.Fatalf("%d turns, want 3", len(eng.ids))
		}
		if eng.ids[1] != eng.ids[0] || eng.ids[2] != eng.ids[0] {
			t.Errorf("turns ran on %q; want one goroutine, kept for the next turn", eng.ids)
		}
	})
}
