package media

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/singleflight"

	"github.com/pincerbot/pincer/internal/llm"
)

// DefaultDescribePrompt asks a vision model for a short description.
const DefaultDescribePrompt = "请用中文简要描述这张图片的内容；如有文字，请原样转写。"

// describeTimeout bounds one model call. The call outlives the turn that
// started it (its result is cached for the next turn), but not this long.
const describeTimeout = 2 * time.Minute

// maxDescription caps a description, in runes.
const maxDescription = 2000

// DescriberOptions configure a Describer.
type DescriberOptions struct {
	// Provider and Model are the vision model that describes images.
	Provider llm.Provider
	Model    string
	// Fallbacks are tried in order when the model fails.
	Fallbacks []VisionModel
	// Prompt is the instruction sent with each image; empty means
	// DefaultDescribePrompt.
	Prompt string
	// MaxTokens caps a description; 0 means 512.
	MaxTokens int
	// CacheDir, when set, keeps descriptions as <CacheDir>/<sha256>.txt
	// across restarts.
	CacheDir string
	// CacheSize is how many descriptions are kept in memory; 0 means 256.
	CacheSize int
}

// VisionModel is one model that can describe images.
type VisionModel struct {
	Provider llm.Provider
	Model    string
}

// Describer describes images with a vision model for models that cannot
// see them. Descriptions are cached by content hash, in memory and
// optionally on disk; concurrent requests for one image share one model
// call. A Describer is safe for concurrent use.
type Describer struct {
	o     DescriberOptions
	group singleflight.Group

	mu    sync.Mutex
	order *list.List // of *cached, most recent first
	byKey map[string]*list.Element
}

type cached struct{ key, text string }

// NewDescriber returns a Describer.
func NewDescriber(o DescriberOptions) *Describer {
	if o.Prompt == "" {
		o.Prompt = DefaultDescribePrompt
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = 512
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 256
	}
	return &Describer{o: o, order: list.New(), byKey: map[string]*list.Element{}}
}

// Describe returns a description of img. sha is the hex SHA-256 of its
// data (Staged.SHA256); when it is not one, Describe computes it. The
// model call runs on its own, bounded by a timeout, so a caller whose ctx
// ends gets ctx's error at once while the description is still cached for
// the next one.
func (d *Describer) Describe(ctx context.Context, img llm.Image, sha string) (string, error) {
	if d.o.Provider == nil {
		return "", errors.New("describe: no model")
	}
	if !isSHA256(sha) {
		sum := sha256.Sum256(img.Data)
		sha = hex.EncodeToString(sum[:])
	}
	if text, ok := d.memo(sha); ok {
		return text, nil
	}
	ch := d.group.DoChan(sha, func() (any, error) {
		if text, ok := d.memo(sha); ok {
			return text, nil
		}
		if text, ok := d.load(sha); ok {
			d.remember(sha, text)
			return text, nil
		}
		callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), describeTimeout)
		defer cancel()
		text, err := d.call(callCtx, img)
		if err != nil {
			return "", err
		}
		d.remember(sha, text)
		d.save(sha, text)
		return text, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return r.Val.(string), nil
	case <-ctx.Done():
		return "", fmt.Errorf("describe: %w", ctx.Err())
	}
}

// call asks the model, then its fallbacks in order until one answers.
func (d *Describer) call(ctx context.Context, img llm.Image) (string, error) {
	var errs []error
	for _, m := range append([]VisionModel{{Provider: d.o.Provider, Model: d.o.Model}}, d.o.Fallbacks...) {
		if m.Provider == nil {
			continue
		}
		text, err := d.callOne(ctx, m, img)
		if err == nil {
			return text, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return "", errors.Join(errs...)
}

// callOne asks one model.
func (d *Describer) callOne(ctx context.Context, m VisionModel, img llm.Image) (string, error) {
	req := llm.Request{
		Model:     m.Model,
		MaxTokens: d.o.MaxTokens,
		Messages:  []llm.Message{{Role: llm.RoleUser, Text: d.o.Prompt, Images: []llm.Image{img}}},
	}
	var b strings.Builder
	// A vision model that thinks aloud (<think>…</think>) describes the
	// picture after it: the description is the text.
	var think llm.ThinkSplitter
	done := false
	for ev, err := range m.Provider.Stream(ctx, req) {
		if err != nil {
			return "", fmt.Errorf("describe: %w", err)
		}
		switch ev.Kind {
		case llm.EventText:
			text, _ := think.Push(ev.Text)
			if think.TookBack() {
				b.Reset() // it was reasoning
			}
			b.WriteString(text)
		case llm.EventDone:
			done = true
		}
	}
	if !done {
		return "", errors.New("describe: the reply ended early")
	}
	rest, _ := think.End()
	if think.TookBack() {
		b.Reset()
	}
	b.WriteString(rest)
	text := strings.TrimSpace(strings.ToValidUTF8(b.String(), "\uFFFD"))
	if text == "" {
		return "", errors.New("describe: empty reply")
	}
	return truncateRunes(text, maxDescription), nil
}

func (d *Describer) memo(key string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.byKey[key]
	if !ok {
		return "", false
	}
	d.order.MoveToFront(e)
	return e.Value.(*cached).text, true
}

func (d *Describer) remember(key, text string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.byKey[key]; ok {
		e.Value.(*cached).text = text
		d.order.MoveToFront(e)
		return
	}
	d.byKey[key] = d.order.PushFront(&cached{key: key, text: text})
	for d.order.Len() > d.o.CacheSize {
		last := d.order.Back()
		d.order.Remove(last)
		delete(d.byKey, last.Value.(*cached).key)
	}
}

// load reads a description kept on disk.
func (d *Describer) load(key string) (string, bool) {
	if d.o.CacheDir == "" {
		return "", false
	}
	data, err := os.ReadFile(filepath.Join(d.o.CacheDir, key+".txt"))
	if err != nil || len(data) == 0 || !utf8.Valid(data) {
		return "", false
	}
	return string(data), true
}

// save keeps a description on disk; failing to is not an error of the
// description, which is in memory.
func (d *Describer) save(key, text string) {
	if d.o.CacheDir == "" {
		return
	}
	if err := os.MkdirAll(d.o.CacheDir, 0o700); err != nil {
		return
	}
	_ = writeAtomic(filepath.Join(d.o.CacheDir, key+".txt"), []byte(text))
}

// isSHA256 reports whether s is 64 lower-case hex digits.
func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// truncateRunes cuts s to at most n runes, the last an ellipsis when cut.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for j := range s {
		if count == n-1 {
			i = j
			break
		}
		count++
	}
	return s[:i] + "…"
}
