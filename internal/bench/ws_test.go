package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pincerbot/pincer/internal/config"
)

// testFrames are payloads of every length class of a frame header: none,
// 7-bit, 16-bit and 64-bit lengths, and a run of small ones.
func testFrames() []Frame {
	var fs []Frame
	for i, n := range []int{0, 1, 125, 126, 500, 0xffff, 0x10000, 70_000, 3000} {
		fs = append(fs, Frame{Data: bytes.Repeat([]byte{'a' + byte(i)}, n)})
	}
	for i := range 200 {
		fs = append(fs, Frame{Data: fmt.Appendf(nil, `{"post_type":"message","message_id":%d}`, i)})
	}
	return fs
}

// parseServerFrames splits b into final, unmasked text frames; ok is
// false when b is not a whole number of them.
func parseServerFrames(b []byte) (payloads [][]byte, ok bool) {
	for len(b) > 0 {
		if len(b) < 2 || b[0] != 0x80|opText || b[1]&0x80 != 0 {
			return nil, false
		}
		n, h := int(b[1]), 2
		switch n {
		case 126:
			if len(b) < 4 {
				return nil, false
			}
			n, h = int(binary.BigEndian.Uint16(b[2:4])), 4
		case 127:
			if len(b) < 10 {
				return nil, false
			}
			n, h = int(binary.BigEndian.Uint64(b[2:10])), 10
		}
		if len(b) < h+n {
			return nil, false
		}
		payloads = append(payloads, b[h:h+n])
		b = b[h+n:]
	}
	return payloads, true
}

// TestFramerCoalescesWholeFrames: with a batch size, the frames go out in
// as few writes as fit it, each write whole frames in order and no larger
// than the batch unless one frame alone is; without, a write a frame.
func TestFramerCoalescesWholeFrames(t *testing.T) {
	fs := testFrames()
	for _, batch := range []int{0, 1, 600, 4096, 65536, 1 << 20} {
		var writes [][]byte
		f := framer{batch: batch, write: func(b []byte) error {
			writes = append(writes, bytes.Clone(b))
			return nil
		}}
		if err := f.frames(fs); err != nil {
			t.Fatal(err)
		}
		if f.writes != len(writes) {
			t.Errorf("batch %d: %d writes counted, %d made", batch, f.writes, len(writes))
		}
		var got [][]byte
		for i, w := range writes {
			p, ok := parseServerFrames(w)
			if !ok {
				t.Fatalf("batch %d: write %d is not whole frames", batch, i)
			}
			if len(w) > batch && len(p) > 1 {
				t.Errorf("batch %d: write %d of %d bytes holds %d frames", batch, i, len(w), len(p))
			}
			if batch == 0 && len(p) != 1 {
				t.Errorf("no batch: write %d holds %d frames", i, len(p))
			}
			// Greedy: the next frame would not have fitted.
			if next := len(got) + len(p); batch > 0 && next < len(fs) && len(w)+frameSize(len(fs[next].Data)) <= batch {
				t.Errorf("batch %d: write %d of %d bytes left out the next frame of %d", batch, i, len(w), len(fs[next].Data))
			}
			got = append(got, p...)
		}
		if len(got) != len(fs) {
			t.Fatalf("batch %d: %d frames written, want %d", batch, len(got), len(fs))
		}
		for i := range fs {
			if !bytes.Equal(got[i], fs[i].Data) {
				t.Fatalf("batch %d: frame %d differs", batch, i)
			}
		}
		if batch >= 65536 && len(writes) > 12 {
			t.Errorf("batch %d: %d writes for %d frames", batch, len(writes), len(fs))
		}
	}
}

// TestWebSocketClientReadsBatchedFrames: a real WebSocket client reads
// the simulator's frames one by one, in order, however they were
// coalesced, while its actions are answered on the same connection, its
// pings ponged and its close closed.
func TestWebSocketClientReadsBatchedFrames(t *testing.T) {
	fs := testFrames()
	for _, batch := range []int{0, 1000, 65536} {
		t.Run(fmt.Sprintf("batch %d", batch), func(t *testing.T) {
			q, err := startQQ(SelfID, batch)
			if err != nil {
				t.Fatal(err)
			}
			defer q.close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, _, err := websocket.Dial(ctx, q.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			c.SetReadLimit(1 << 20)
			if err := q.connected(ctx); err != nil {
				t.Fatal(err)
			}
			pushed := make(chan error, 1)
			go func() { pushed <- q.push(ctx, fs) }()
			for i, f := range fs {
				typ, data, err := c.Read(ctx)
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if typ != websocket.MessageText || !bytes.Equal(data, f.Data) {
					t.Fatalf("frame %d: %v of %d bytes, want text of %d", i, typ, len(data), len(f.Data))
				}
			}
			if err := <-pushed; err != nil {
				t.Fatal(err)
			}
			if w := q.writes(); batch == 0 && w != len(fs) || batch > 0 && w >= len(fs) {
				t.Errorf("%d frames in %d writes", len(fs), w)
			}

			read := make(chan []byte)
			go func() {
				for {
					_, data, err := c.Read(ctx)
					if err != nil {
						close(read)
						return
					}
					read <- data
				}
			}()
			if err := c.Ping(ctx); err != nil {
				t.Errorf("ping: %v", err)
			}
			if err := c.Write(ctx, websocket.MessageText, []byte(`{"action":"get_login_info","params":{},"echo":"e1"}`)); err != nil {
				t.Fatal(err)
			}
			var resp struct {
				Status string `json:"status"`
				Echo   string `json:"echo"`
				Data   struct {
					UserID int64 `json:"user_id"`
				} `json:"data"`
			}
			if err := json.Unmarshal(<-read, &resp); err != nil || resp.Status != "ok" || resp.Echo != "e1" || resp.Data.UserID != SelfID {
				t.Errorf("answer %+v, %v", resp, err)
			}
			if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
}

func TestWebSocketServerRefusesPlainHTTP(t *testing.T) {
	q, err := startQQ(SelfID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer q.close()
	res, err := http.Get("http" + strings.TrimPrefix(q.url, "ws") + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d, want 400", res.StatusCode)
	}
}

// TestPincerConfigSetsTheSendGap: -send-gap reaches pincer as
// channels.onebot.sendGapMs, and the file pincer gets is valid.
func TestPincerConfigSetsTheSendGap(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	for _, tc := range []struct{ flag, want int }{{-1, config.DefaultSendGapMs}, {0, 0}, {250, 250}} {
		cfg := &Config{SendGapMs: tc.flag, History: true}
		text, err := pincerConfig(cfg, t.TempDir(), "ws://127.0.0.1:1", "http://127.0.0.1:2/v1", "/tmp/x.db", "")
		if err != nil {
			t.Fatal(err)
		}
		if has := bytes.Contains(text, []byte("sendGapMs")); has != (tc.flag >= 0) {
			t.Errorf("-send-gap %d: sendGapMs written %v", tc.flag, has)
		}
		c, err := config.Parse(text, noEnv)
		if err != nil {
			t.Fatalf("-send-gap %d: %v\n%s", tc.flag, err, text)
		}
		if got := c.Channels.OneBot.SendGapMs; got != tc.want {
			t.Errorf("-send-gap %d: sendGapMs %d, want %d", tc.flag, got, tc.want)
		}
		if got := (&Config{SendGapMs: tc.flag}).sendGap(); got != tc.want {
			t.Errorf("-send-gap %d: reported as %d, want %d", tc.flag, got, tc.want)
		}
	}
}

// TestPincerConfigServesProfilesBehindAToken: with -profile, pincer gets
// a gateway token and gateway.pprof, which config accepts; without, neither.
func TestPincerConfigServesProfilesBehindAToken(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	for _, token := range []string{"", "bench-x"} {
		text, err := pincerConfig(&Config{SendGapMs: -1}, t.TempDir(), "ws://127.0.0.1:1", "http://127.0.0.1:2/v1", "/tmp/x.db", token)
		if err != nil {
			t.Fatal(err)
		}
		c, err := config.Parse(text, noEnv)
		if err != nil {
			t.Fatalf("token %q: %v\n%s", token, err, text)
		}
		if c.Gateway.Token.Value() != token || c.Gateway.Pprof != (token != "") {
			t.Errorf("token %q: gateway token %q, pprof %v", token, c.Gateway.Token.Value(), c.Gateway.Pprof)
		}
	}
}
