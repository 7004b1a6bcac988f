package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/channel/feishu"
	"github.com/pincerbot/pincer/internal/channel/onebot"
	"github.com/pincerbot/pincer/internal/httpapi"
	"github.com/pincerbot/pincer/internal/msg"
)

// storeHealth is what /healthz asks of the store.
type storeHealth interface {
	// Health is the outcome of the latest write: nil when it succeeded.
	Health() error
	// Probe writes once and reports whether it could.
	Probe(ctx context.Context) error
}

// DefaultStoreProbeInterval spaces the store's write probes: a store
// nobody wrote to lately (a quiet night) is still checked.
const DefaultStoreProbeInterval = 10 * time.Second

// storeWatch probes the store now and then, logs when it stops (or starts
// again) being writable, and remembers the outcome for /healthz.
type storeWatch struct {
	st  storeHealth
	log *slog.Logger

	mu  sync.Mutex
	err error
}

// run probes every interval until ctx ends.
func (w *storeWatch) run(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		err := w.st.Probe(ctx)
		w.mu.Lock()
		was := w.err
		w.err = err
		w.mu.Unlock()
		switch {
		case err != nil && was == nil:
			w.log.Error("the store cannot be written: messages cannot be accepted until this is fixed", "err", err)
		case err == nil && was != nil:
			w.log.Info("the store can be written again")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// last is the latest problem: the last probe's, else the last write's.
func (w *storeWatch) last() error {
	w.mu.Lock()
	err := w.err
	w.mu.Unlock()
	if err == nil {
		err = w.st.Health()
	}
	return err
}

// healthReport builds /healthz's report: the store (down when it cannot
// write), each QQ account (ok when connected, degraded while it
// connects or waits to reconnect, down when it gave up) and each Feishu
// app (ok when connected or listening, degraded while it starts,
// connects or reconnects, down when the platform refused it).
//
// In a cluster, a connection another instance holds is ok here ("held
// elsewhere"), and the cluster itself is a component: ok while NATS is
// reachable, down when it is not (this instance then answers nothing).
func healthReport(w *storeWatch, accounts map[msg.AccountID]*onebot.Account, larks *lark, mem *member) func(context.Context) httpapi.Health {
	return func(ctx context.Context) httpapi.Health {
		err := w.last()
		var h httpapi.Health
		store := httpapi.Component{Name: "store", Status: httpapi.StatusOK}
		if err != nil {
			store.Status, store.Reason = httpapi.StatusDown, err.Error()
		}
		h.Components = append(h.Components, store)
		var held map[string]bool
		if mem != nil {
			var c httpapi.Component
			c, held = mem.health()
			h.Components = append(h.Components, c)
		}
		elsewhere := func(c httpapi.Component, lease string) httpapi.Component {
			if mem != nil && !held[lease] {
				c.Status, c.Reason = httpapi.StatusOK, "held elsewhere"
			}
			return c
		}
		for _, id := range slices.Sorted(maps.Keys(accounts)) {
			h.Components = append(h.Components, elsewhere(accountHealth(id, accounts[id]), "conn.onebot."+string(id)))
		}
		if larks != nil {
			for _, id := range slices.Sorted(maps.Keys(larks.accounts)) {
				c := larkHealth(id, larks.accounts[id].Health())
				if !larks.accounts[id].Webhook() {
					c = elsewhere(c, "conn.feishu."+string(id))
				}
				h.Components = append(h.Components, c)
			}
		}
		return h
	}
}

// larkHealth is the /healthz component of Feishu app id.
func larkHealth(id msg.AccountID, fh feishu.Health) httpapi.Component {
	c := httpapi.Component{Name: string(feishu.ChannelID) + "/" + string(id), Status: httpapi.StatusOK}
	reason := string(fh.State)
	if fh.Err != nil {
		reason += ": " + fh.Err.Error()
	}
	switch fh.State {
	case feishu.StateConnected, feishu.StateListening:
	case feishu.StateRefused:
		c.Status, c.Reason = httpapi.StatusDown, "account "+string(id)+" "+reason+"; "+fh.Hint
	default:
		c.Status, c.Reason = httpapi.StatusDegraded, reason
	}
	return c
}

func accountHealth(id msg.AccountID, a *onebot.Account) httpapi.Component {
	c := httpapi.Component{Name: string(onebot.ChannelID) + "/" + string(id), Status: httpapi.StatusOK}
	state, live, err := a.Health()
	reason := string(state)
	if err != nil {
		reason = fmt.Sprintf("%s: %v", state, err)
	}
	switch state {
	case onebot.StateConnected:
	case onebot.StateListening:
		if !live {
			c.Status, c.Reason = httpapi.StatusDegraded, "listening: no implementation has connected"
		}
	case onebot.StateFailed:
		c.Status, c.Reason = httpapi.StatusDown, reason
	default:
		c.Status, c.Reason = httpapi.StatusDegraded, reason
	}
	return c
}
