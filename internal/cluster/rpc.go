package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
)

// ErrNoHolder is returned (wrapped with the name) by Request when nobody
// serves the name.
var ErrNoHolder = errors.New("cluster: no holder serves the request")

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
