package onebottest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
)

// PipeNet is an in-memory network: HTTP servers listen on it and clients
// dial it through net.Pipe, so WebSocket and HTTP traffic runs inside a
// testing/synctest bubble, where real sockets would stall the fake clock.
type PipeNet struct {
	mu        sync.Mutex
	listeners map[string]*pipeListener
}

// NewPipeNet returns an empty network.
func NewPipeNet() *PipeNet { return &PipeNet{listeners: map[string]*pipeListener{}} }

// Listen returns a listener for host (such as "onebot.test:3001").
func (n *PipeNet) Listen(host string) net.Listener {
	l := &pipeListener{addr: pipeAddr(host), conns: make(chan net.Conn), done: make(chan struct{}), net: n}
	n.mu.Lock()
	n.listeners[host] = l
	n.mu.Unlock()
	return l
}

// Dial connects to the listener of addr.
func (n *PipeNet) Dial(ctx context.Context, _, addr string) (net.Conn, error) {
	n.mu.Lock()
	l := n.listeners[addr]
	if host, _, err := net.SplitHostPort(addr); l == nil && err == nil {
		l = n.listeners[host] // "host:80" reaches a listener on "host"
	}
	n.mu.Unlock()
	if l == nil {
		return nil, &net.OpError{Op: "dial", Net: "pipe", Err: errors.New("connection refused")}
	}
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, &net.OpError{Op: "dial", Net: "pipe", Err: errors.New("connection refused")}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Client is an HTTP client that dials this network.
func (n *PipeNet) Client() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: n.Dial, DisableKeepAlives: true}}
}

type pipeAddr string

func (a pipeAddr) Network() string { return "pipe" }
func (a pipeAddr) String() string  { return string(a) }

type pipeListener struct {
	addr  pipeAddr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	net   *PipeNet
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.net.mu.Lock()
		delete(l.net.listeners, string(l.addr))
		l.net.mu.Unlock()
	})
	return nil
}

func (l *pipeListener) Addr() net.Addr { return l.addr }
