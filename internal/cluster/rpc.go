package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// ErrNoHolder is returned (wrapped with the name) by Request when nobody
// serves the name.
var ErrNoHolder = errors.New("cluster: no holder serves the request")

// ErrHolderLost is returned (wrapped with the names) by RequestWhileHeld
// when the lease the request's server held changed hands or lapsed
// before the answer came: whether the request was carried out is not
// known.
var ErrHolderLost = errors.New("cluster: the holder went away before it answered")

// RemoteError is an error returned by the handler of a request on the node
// that served it.
type RemoteError struct {
	Name    string // what the request was sent to
	Message string // the handler's error text
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("cluster: %s: %s", e.Name, e.Message)
}

// errorHeader carries a handler's error in the reply.
const errorHeader = "Pincer-Error"

func (n *Node) rpcSubject(name string) string { return n.o.Prefix + ".rpc." + name }

// Serve answers requests sent to name (core NATS request/reply on
// <prefix>.rpc.<name>) until ctx ends, each on its own goroutine with ctx.
// An error from handle travels back and comes out of Request as a
// *RemoteError. Serve it while holding the lease of the same name; should
// two nodes serve a name at once (a lease changing hands), each request is
// answered by one of them. Serve waits for the requests under way before
// returning nil; a request that reaches this node as Serve ends gets no
// reply and runs into its deadline.
func (n *Node) Serve(ctx context.Context, name string, handle func(ctx context.Context, req []byte) ([]byte, error)) error {
	if !leaseKeyRE.MatchString(name) {
		return fmt.Errorf("cluster: invalid request name %q", name)
	}
	var (
		mu      sync.Mutex
		stopped bool
		wg      sync.WaitGroup
	)
	sub, err := n.nc.QueueSubscribe(n.rpcSubject(name), n.o.Prefix+"-rpc", func(m *nats.Msg) {
		mu.Lock()
		if stopped {
			mu.Unlock()
			return
		}
		wg.Add(1)
		mu.Unlock()
		go func() {
			defer wg.Done()
			resp, err := handle(ctx, m.Data)
			reply := nats.NewMsg(m.Reply)
			if err != nil {
				// A header value is one line.
				msg := strings.Join(strings.Fields(err.Error()), " ")
				if msg == "" {
					msg = "error"
				}
				reply.Header.Set(errorHeader, msg)
			} else {
				reply.Data = resp
			}
			if err := m.RespondMsg(reply); err != nil {
				n.log.Debug("reply failed", "name", name, "error", err)
			}
		}()
	})
	if err != nil {
		return fmt.Errorf("cluster: serve %s: %w", name, err)
	}
	<-ctx.Done()
	_ = sub.Unsubscribe()
	mu.Lock()
	stopped = true
	mu.Unlock()
	wg.Wait()
	return nil
}

// Request sends req to whoever serves name and returns the reply. ctx's
// deadline is the timeout. With no server for name it returns an error
// wrapping ErrNoHolder; a handler's error comes back as a *RemoteError.
func (n *Node) Request(ctx context.Context, name string, req []byte) ([]byte, error) {
	if !leaseKeyRE.MatchString(name) {
		return nil, fmt.Errorf("cluster: invalid request name %q", name)
	}
	m, err := n.nc.RequestMsgWithContext(ctx, &nats.Msg{Subject: n.rpcSubject(name), Data: req})
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("cluster: request %s: %w", name, ErrNoHolder)
	case err != nil:
		return nil, fmt.Errorf("cluster: request %s: %w", name, connErr(err))
	}
	if msg := m.Header.Get(errorHeader); msg != "" {
		return nil, &RemoteError{Name: name, Message: msg}
	}
	return m.Data, nil
}

// RequestWhileHeld is Request to the node that serves name while holding
// lease: it ends with ErrHolderLost as soon as this node sees the lease
// change hands or lapse (its holder died, or was cut off and gave it up)
// before the answer came, rather than waiting out ctx for an answer that
// will not come. A lease this node does not see held when the request
// goes out is not watched: the request is Request.
func (n *Node) RequestWhileHeld(ctx context.Context, name, lease string, req []byte) ([]byte, error) {
	holder, held := n.view.current(lease)
	if !held {
		return n.Request(ctx, name, req)
	}
	rctx, cancel := context.WithCancelCause(ctx)
	watched := make(chan struct{})
	defer func() {
		cancel(nil)
		<-watched
	}()
	go func() {
		defer close(watched)
		// Expiry produces no event: the view is read again every poll.
		t := time.NewTicker(n.poll)
		defer t.Stop()
		for {
			changed := n.view.wait()
			if v, ok := n.view.current(lease); !ok || v != holder {
				cancel(fmt.Errorf("%w: %s, serving %s", ErrHolderLost, lease, name))
				return
			}
			select {
			case <-rctx.Done():
				return
			case <-changed:
			case <-t.C:
			}
		}
	}()
	resp, err := n.Request(rctx, name, req)
	if cause := context.Cause(rctx); err != nil && ctx.Err() == nil && errors.Is(cause, ErrHolderLost) {
		return nil, fmt.Errorf("cluster: request %s: %w", name, cause)
	}
	return resp, err
}
