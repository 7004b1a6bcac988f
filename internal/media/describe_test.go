package media

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pincerbot/pincer/internal/llm"
)

func shaOf(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func TestDescribeCachesInMemory(t *testing.T) {
	m := &fakeModel{reply: "  一只猫\n"}
	d := NewDescriber(DescriberOptions{Provider: m, Model: "vision"})
	img := llm.Image{MIME: "image/png", Data: pngBytes(t, 1)}
	for range 3 {
		got, err := d.Describe(context.Background(), img, shaOf(img.Data))
		if err != nil || got != "一只猫" {
			t.Fatalf("got %q, %v", got, err)
		}
	}
	if n := m.calls.Load(); n != 1 {
		t.Errorf("%d model calls, want 1", n)
	}
	req := m.requests()[0]
	if req.Model != "vision" || req.MaxTokens != 512 || len(req.Messages) != 1 {
		t.Fatalf("request %+v", req)
	}
	msg := req.Messages[0]
	if msg.Role != llm.RoleUser || msg.Text != DefaultDescribePrompt || len(msg.Images) != 1 || msg.Images[0].MIME != "image/png" {
		t.Errorf("message %+v", msg)
	}
	// A bad hash is replaced by the content's own.
	if _, err := d.Describe(context.Background(), img, "../../etc/passwd"); err != nil {
		t.Fatal(err)
	}
	if n := m.calls.Load(); n != 1 {
		t.Errorf("the computed hash missed the cache: %d calls", n)
	}
}

// TestDescribeLeavesReasoningOut: a vision model that thinks aloud in its
// reply is described by what follows its reasoning.
func TestDescribeLeavesReasoningOut(t *testing.T) {
	m := &fakeModel{reply: "<think>\n先看看这张图：橘色的，有胡须……\n</think>\n一只橘猫趴在键盘上"}
	d := NewDescriber(DescriberOptions{Provider: m, Model: "qwen3-vl"})
	img := llm.Image{MIME: "image/png", Data: pngBytes(t, 9)}
	if got, err := d.Describe(context.Background(), img, shaOf(img.Data)); err != nil || got != "一只橘猫趴在键盘上" {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestDescribeCachesOnDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "desc")
	img := llm.Image{MIME: "image/png", Data: pngBytes(t, 2)}
	sha := shaOf(img.Data)
	m1 := &fakeModel{reply: "第一次"}
	if _, err := NewDescriber(DescriberOptions{Provider: m1, CacheDir: dir}).Describe(context.Background(), img, sha); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, sha+".txt")); err != nil || string(data) != "第一次" {
		t.Fatalf("cache file: %q, %v", data, err)
	}
	// A new Describer (a restart) reads the file instead of asking.
	m2 := &fakeModel{reply: "第二次"}
	got, err := NewDescriber(DescriberOptions{Provider: m2, CacheDir: dir}).Describe(context.Background(), img, sha)
	if err != nil || got != "第一次" || m2.calls.Load() != 0 {
		t.Errorf("after restart: %q, %v, %d calls", got, err, m2.calls.Load())
	}
}

func TestDescribeEvictsLeastRecentlyUsed(t *testing.T) {
	m := &fakeModel{reply: "x"}
	d := NewDescriber(DescriberOptions{Provider: m, CacheSize: 2})
	imgs := []llm.Image{{Data: []byte("a")}, {Data: []byte("b")}, {Data: []byte("c")}}
	ask := func(i int) {
		if _, err := d.Describe(context.Background(), imgs[i], ""); err != nil {
			t.Fatal(err)
		}
	}
	ask(0)
	ask(1)
	ask(0) // 0 is now more recent than 1
	ask(2) // evicts 1
	if n := m.calls.Load(); n != 3 {
		t.Fatalf("%d calls, want 3", n)
	}
	ask(0)
	if n := m.calls.Load(); n != 3 {
		t.Errorf("the recently used entry was evicted")
	}
	ask(1)
	if n := m.calls.Load(); n != 4 {
		t.Errorf("the least recently used entry was kept")
	}
}

func TestDescribeSharesConcurrentCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &fakeModel{reply: "同一张图", gate: make(chan struct{})}
		d := NewDescriber(DescriberOptions{Provider: m})
		img := llm.Image{MIME: "image/png", Data: []byte("png")}
		var wg sync.WaitGroup
		results := make([]string, 8)
		for i := range results {
			wg.Go(func() {
				got, err := d.Describe(context.Background(), img, shaOf(img.Data))
				if err != nil {
					t.Error(err)
				}
				results[i] = got
			})
		}
		synctest.Wait() // all eight are waiting on one call
		close(m.gate)
		wg.Wait()
		if n := m.calls.Load(); n != 1 {
			t.Errorf("%d model calls, want 1", n)
		}
		for i, r := range results {
			if r != "同一张图" {
				t.Errorf("caller %d got %q", i, r)
			}
		}
	})
}

func TestDescribeReturnsWhenTheCallerGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &fakeModel{reply: "慢", gate: make(chan struct{})}
		d := NewDescriber(DescriberOptions{Provider: m})
		img := llm.Image{Data: []byte("slow")}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := d.Describe(ctx, img, "")
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 5*time.Second {
			t.Fatalf("got %v after %v", err, time.Since(start))
		}
		// The call goes on, and its answer serves the next turn.
		close(m.gate)
		synctest.Wait()
		got, err := d.Describe(context.Background(), img, "")
		if err != nil || got != "慢" || m.calls.Load() != 1 {
			t.Errorf("next: %q, %v, %d calls", got, err, m.calls.Load())
		}
	})
}

func TestDescribeErrors(t *testing.T) {
	img := llm.Image{Data: []byte("e")}
	for name, m := range map[string]*fakeModel{
		"model error": {err: &llm.Error{Err: errors.New("boom")}},
		"empty":       {reply: "   "},
		"cut short":   {reply: "半句", cut: true},
	} {
		d := NewDescriber(DescriberOptions{Provider: m})
		if _, err := d.Describe(context.Background(), img, ""); err == nil {
			t.Errorf("%s: no error", name)
		}
		// Failures are not cached.
		d.Describe(context.Background(), img, "")
		if m.calls.Load() != 2 {
			t.Errorf("%s: %d calls, want 2", name, m.calls.Load())
		}
	}
	if _, err := NewDescriber(DescriberOptions{}).Describe(context.Background(), img, ""); err == nil {
		t.Error("no provider: no error")
	}
}

func TestTruncateRunes(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "ab…"},
		{"一二三四", 2, "一…"},
		{"一二", 1, "…"},
		{"", 1, ""},
	} {
		if got := truncateRunes(c.s, c.n); got != c.want {
			t.Errorf("truncateRunes(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

// TestDescribeFallsBack: when the vision model fails, its fallbacks are
// asked in order, and the first answer is kept.
func TestDescribeFallsBack(t *testing.T) {
	down := &fakeModel{err: &llm.Error{Err: errors.New("overloaded")}}
	backup := &fakeModel{reply: "一只猫"}
	unused := &fakeModel{reply: "never"}
	d := NewDescriber(DescriberOptions{Provider: down, Model: "v1", Fallbacks: []VisionModel{{Provider: backup, Model: "v2"}, {Provider: unused, Model: "v3"}}})
	text, err := d.Describe(context.Background(), llm.Image{MIME: "image/png", Data: []byte("p")}, "")
	if err != nil || text != "一只猫" {
		t.Fatalf("describe = %q, %v", text, err)
	}
	if down.calls.Load() != 1 || backup.calls.Load() != 1 || unused.calls.Load() != 0 || backup.reqs[0].Model != "v2" {
		t.Errorf("calls: %d %d %d", down.calls.Load(), backup.calls.Load(), unused.calls.Load())
	}
	all := NewDescriber(DescriberOptions{Provider: down, Fallbacks: []VisionModel{{Provider: down}}})
	if _, err := all.Describe(context.Background(), llm.Image{Data: []byte("q")}, ""); err == nil || !strings.Contains(err.Error(), "overloaded") {
		t.Errorf("every model failed: %v", err)
	}
}
