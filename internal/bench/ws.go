package bench

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The simulator's forward WebSocket is written here, on the TCP
// connection itself, rather than with a WebSocket library, so that the
// bench decides how its frames meet the socket: each frame in a write of
// its own, or whole frames coalesced into writes of about a batch size,
// as a busy implementation or a proxy in front of it writes them. The
// frames are plain RFC 6455 server frames: text, final, unmasked, never
// compressed (no extension is agreed).

// wsGUID is RFC 6455's key suffix for Sec-WebSocket-Accept.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// Frame opcodes.
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa
)

// maxMessage bounds a message from the client.
const maxMessage = 32 << 20

// wsServer accepts forward WebSocket connections on a listener and hands
// each message a client sends to onMessage, one at a time per
// connection.
type wsServer struct {
	url       string
	ln        net.Listener
	onMessage func(c *wsConn, data []byte)
	connCh    chan struct{}
	wg        sync.WaitGroup

	mu     sync.Mutex
	conns  []*wsConn
	closed bool
	// accepts is when each connection was upgraded; maxOpen the most
	// connections up at once.
	accepts []time.Time
	maxOpen int
}

// serveWS accepts connections on ln until close.
func serveWS(ln net.Listener, onMessage func(c *wsConn, data []byte)) *wsServer {
	s := &wsServer{url: "ws://" + ln.Addr().String(), ln: ln, onMessage: onMessage, connCh: make(chan struct{}, 16)}
	s.wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() { s.serve(nc) })
		}
	})
	return s
}

// connected waits for the next connection to be up.
func (s *wsServer) connected(ctx context.Context) error {
	select {
	case <-s.connCh:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// open returns the connections that are up.
func (s *wsServer) open() []*wsConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*wsConn(nil), s.conns...)
}

// close stops accepting, drops every connection and waits for their
// goroutines.
func (s *wsServer) close() {
	s.mu.Lock()
	s.closed = true
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	_ = s.ln.Close()
	for _, c := range conns {
		_ = c.nc.Close()
	}
	s.wg.Wait()
}

// serve upgrades one connection and reads it until it ends.
func (s *wsServer) serve(nc net.Conn) {
	defer nc.Close()
	br := bufio.NewReaderSize(nc, 64<<10)
	if err := handshake(nc, br); err != nil {
		return
	}
	c := &wsConn{nc: nc, br: br}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.conns = append(s.conns, c)
	s.accepts = append(s.accepts, time.Now())
	s.maxOpen = max(s.maxOpen, len(s.conns))
	s.mu.Unlock()
	defer s.forget(c)
	select {
	case s.connCh <- struct{}{}:
	default:
	}
	_ = c.readMessages(func(data []byte) { s.onMessage(c, data) })
}

// acceptedAfter waits for a connection upgraded after t, and returns
// when it was.
func (s *wsServer) acceptedAfter(ctx context.Context, t time.Time) (time.Time, error) {
	for {
		s.mu.Lock()
		for _, at := range s.accepts {
			if at.After(t) {
				s.mu.Unlock()
				return at, nil
			}
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// counts returns how many connections were upgraded so far, and the
// most that were up at once.
func (s *wsServer) counts() (accepted, maxOpen int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.accepts), s.maxOpen
}

func (s *wsServer) forget(c *wsConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.conns {
		if x == c {
			s.conns = append(s.conns[:i], s.conns[i+1:]...)
			break
		}
	}
}

// handshake reads the client's opening request and accepts it.
func handshake(nc net.Conn, br *bufio.Reader) error {
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	req, err := http.ReadRequest(br)
	_ = nc.SetReadDeadline(time.Time{})
	if err != nil {
		return fmt.Errorf("bench: websocket handshake: %w", err)
	}
	key := req.Header.Get("Sec-WebSocket-Key")
	if req.Method != http.MethodGet || !headerHas(req.Header, "Connection", "upgrade") ||
		!headerHas(req.Header, "Upgrade", "websocket") || req.Header.Get("Sec-WebSocket-Version") != "13" || key == "" {
		_, _ = io.WriteString(nc, "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
		return errors.New("bench: not a WebSocket opening handshake")
	}
	_, err = io.WriteString(nc, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Accept: "+acceptKey(key)+"\r\n\r\n")
	if err != nil {
		return fmt.Errorf("bench: websocket handshake: %w", err)
	}
	return nil
}

// acceptKey is the Sec-WebSocket-Accept answer to a client's key.
func acceptKey(key string) string {
	sum := sha1.Sum([]byte(key + wsGUID))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// headerHas reports whether a comma-separated header lists token.
func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// wsConn is one accepted connection. Writes hold mu and carry whole
// frames, so event frames and answers never interleave inside a frame.
type wsConn struct {
	nc net.Conn
	br *bufio.Reader

	mu  sync.Mutex
	out []byte // writeMessage's frame, under mu
}

// write writes b, whole frames, as one write.
func (c *wsConn) write(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.nc.Write(b)
	return err
}

// writeMessage writes one frame of op with payload.
func (c *wsConn) writeMessage(op byte, payload []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out = appendFrame(c.out[:0], op, payload)
	_, err := c.nc.Write(c.out)
	return err
}

// readMessages reads the client's frames until the connection ends,
// hands each text or binary message to onMessage, answers pings, and
// answers a close with a close.
func (c *wsConn) readMessages(onMessage func([]byte)) error {
	var msg []byte
	inMessage := false
	for {
		fin, op, payload, err := c.readFrame()
		if err != nil {
			return err
		}
		switch op {
		case opClose:
			var code []byte
			if len(payload) >= 2 {
				code = payload[:2]
			}
			_ = c.writeMessage(opClose, code)
			return nil
		case opPing:
			if err := c.writeMessage(opPong, payload); err != nil {
				return err
			}
		case opPong:
		case opText, opBinary:
			if inMessage {
				return errors.New("bench: websocket: a new message inside a fragmented one")
			}
			msg, inMessage = payload, true
		case opContinuation:
			if !inMessage {
				return errors.New("bench: websocket: a continuation outside a message")
			}
			if len(msg)+len(payload) > maxMessage {
				return errors.New("bench: websocket: message too large")
			}
			msg = append(msg, payload...)
		default:
			return fmt.Errorf("bench: websocket: unknown opcode %#x", op)
		}
		if fin && inMessage && (op == opText || op == opBinary || op == opContinuation) {
			onMessage(msg)
			msg, inMessage = nil, false
		}
	}
}

// readFrame reads one client frame and unmasks its payload.
func (c *wsConn) readFrame() (fin bool, op byte, payload []byte, err error) {
	var h [8]byte
	if _, err := io.ReadFull(c.br, h[:2]); err != nil {
		return false, 0, nil, err
	}
	fin, op = h[0]&0x80 != 0, h[0]&0x0f
	if h[0]&0x70 != 0 {
		return false, 0, nil, errors.New("bench: websocket: reserved bits set")
	}
	if h[1]&0x80 == 0 {
		return false, 0, nil, errors.New("bench: websocket: a client frame is not masked")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		if _, err := io.ReadFull(c.br, h[:2]); err != nil {
			return false, 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(h[:2]))
	case 127:
		if _, err := io.ReadFull(c.br, h[:8]); err != nil {
			return false, 0, nil, err
		}
		n = binary.BigEndian.Uint64(h[:8])
	}
	if op >= opClose && (n > 125 || !fin) {
		return false, 0, nil, errors.New("bench: websocket: a fragmented or long control frame")
	}
	if n > maxMessage {
		return false, 0, nil, fmt.Errorf("bench: websocket: a frame of %d bytes", n)
	}
	var key [4]byte
	if _, err := io.ReadFull(c.br, key[:]); err != nil {
		return false, 0, nil, err
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(c.br, payload); err != nil {
		return false, 0, nil, err
	}
	for i := range payload {
		payload[i] ^= key[i&3]
	}
	return fin, op, payload, nil
}

// appendFrame appends a final, unmasked server frame of op with payload.
func appendFrame(dst []byte, op byte, payload []byte) []byte {
	dst = append(dst, 0x80|op)
	switch n := len(payload); {
	case n <= 125:
		dst = append(dst, byte(n))
	case n <= 0xffff:
		dst = append(dst, 126, byte(n>>8), byte(n))
	default:
		dst = append(dst, 127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	return append(dst, payload...)
}

// frameSize is the size of a server frame with n bytes of payload.
func frameSize(n int) int {
	switch {
	case n <= 125:
		return 2 + n
	case n <= 0xffff:
		return 4 + n
	}
	return 10 + n
}

// framer writes event frames, whole, with write: with batch 0 each frame
// in a write of its own; with batch > 0 as many frames as fit together
// in batch bytes in one write (a frame larger than batch in a write of
// its own). A call's last write goes out however short it is: frames are
// never held back for ones to come.
type framer struct {
	batch  int
	write  func([]byte) error
	buf    []byte
	writes int // writes made so far
}

// frames writes the frames of fs, in order.
func (f *framer) frames(fs []Frame) error {
	for _, fr := range fs {
		if len(f.buf) > 0 && (f.batch <= 0 || len(f.buf)+frameSize(len(fr.Data)) > f.batch) {
			if err := f.flush(); err != nil {
				return err
			}
		}
		f.buf = appendFrame(f.buf, opText, fr.Data)
	}
	return f.flush()
}

func (f *framer) flush() error {
	if len(f.buf) == 0 {
		return nil
	}
	f.writes++
	err := f.write(f.buf)
	f.buf = f.buf[:0]
	return err
}
