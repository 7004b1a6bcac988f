package media

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/msg"
)

// Transcriber turns a voice note into text. name is the staged file name
// (its extension tells the format) and mime its content type.
type Transcriber interface {
	Transcribe(ctx context.Context, audio []byte, name, mime string) (string, error)
}

// Options configure an Understander.
type Options struct {
	// Fetcher downloads attachments that have no channel Downloader and
	// previews links; nil means NewFetcher(FetchOptions{}).
	Fetcher *Fetcher
	// Describer describes images for models that cannot see them; nil
	// means none.
	Describer *Describer
	// Transcriber transcribes voice notes; nil means none, and voice
	// notes are left alone.
	Transcriber Transcriber
	// MaxBytes limits one download; 0 means DefaultMaxBytes (20 MiB).
	MaxBytes int64
	// MaxImages is how many images of a turn are looked at; 0 means 8.
	MaxImages int
	// Links turns on link previews, of at most MaxLinks links (0 means 3).
	Links    bool
	MaxLinks int
	// LinkTimeout bounds one link preview; 0 means DefaultLinkTimeout.
	LinkTimeout time.Duration
	// Logger receives what failed and why; nil discards.
	Logger *slog.Logger
}

// DefaultLinkTimeout bounds one link preview.
const DefaultLinkTimeout = 3 * time.Second

// maxVoices is how many voice notes of a turn are transcribed.
const maxVoices = 4

// workers is how many downloads, descriptions, transcriptions and
// previews of a turn run at once.
const workers = 4

// Understander turns the media and links of a turn into what the agent's
// model can use. It is safe for concurrent use.
type Understander struct {
	o   Options
	log *slog.Logger
}

// NewUnderstander returns an Understander.
func NewUnderstander(o Options) *Understander {
	if o.Fetcher == nil {
		o.Fetcher = NewFetcher(FetchOptions{})
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxImages <= 0 {
		o.MaxImages = 8
	}
	if o.MaxLinks <= 0 {
		o.MaxLinks = 3
	}
	if o.LinkTimeout <= 0 {
		o.LinkTimeout = DefaultLinkTimeout
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Understander{o: o, log: log}
}

// Input is one turn to understand.
type Input struct {
	// Attachments are the turn's media, in order.
	Attachments []msg.Attachment
	// Text is the turn's text, whose links are previewed.
	Text string
	// Download is the channel's downloader; nil fetches Segment.URL with
	// the Fetcher.
	Download func(ctx context.Context, a msg.Attachment, limit int64) (channel.Blob, error)
	// Dir is where files are staged (e.g. <chat workspace>/media/inbound);
	// empty stages nothing (Staged values then have no Path).
	Dir string
	// SeesImages says the model takes image parts.
	SeesImages bool
	// Describer, when set, describes pictures for a model that cannot see
	// them in place of Options.Describer (a chat's own image model).
	Describer *Describer
}

// Image is an image to show the model: the staged file and the part to
// put in the user's message.
type Image struct {
	Staged Staged
	Part   llm.Image
}

// Result is what a turn's media and links came to.
type Result struct {
	// Images go with the user's message (only when Input.SeesImages).
	Images []Image
	// Notes are lines to append to the user's message: images in order,
	// then voice notes, then links.
	Notes []string
	// Staged is every file staged, in the order of Notes.
	Staged []Staged
}

// Understand downloads, stages, describes and transcribes the turn's
// images and voice notes and previews the links of its text, several at a
// time, until they are done or ctx ends, whichever comes first: ctx is the
// turn's budget. Understand returns as soon as ctx is done, and what was
// not finished by then is noted as timed out (links are left out). Work
// still running stops with ctx; a Download that ignores ctx is left to
// finish on its own, and its result is dropped.
func (u *Understander) Understand(ctx context.Context, in Input) Result {
	tasks := u.plan(in)
	if len(tasks) == 0 {
		return Result{}
	}
	var mu sync.Mutex // guards every task's state and closed
	closed := false
	set := func(t *task, change func(*task)) {
		mu.Lock()
		defer mu.Unlock()
		if !closed {
			change(t)
		}
	}
	finished := make(chan struct{}, len(tasks))
	sem := make(chan struct{}, workers)
	running := 0
	for _, t := range tasks {
		if t.done {
			continue
		}
		running++
		go func() {
			defer func() { finished <- struct{}{} }()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				return
			}
			if ctx.Err() != nil {
				return
			}
			u.run(ctx, in, t, func(change func(*task)) { set(t, change) })
			// A task that ended without a note before ctx did (a link
			// without a preview) is done; one ctx cut short is noted as
			// unfinished.
			set(t, func(t *task) { t.done = t.done || ctx.Err() == nil })
		}()
	}
wait:
	for ; running > 0; running-- {
		select {
		case <-finished:
		case <-ctx.Done():
			break wait
		}
	}
	mu.Lock()
	defer mu.Unlock()
	closed = true
	var r Result
	for _, t := range tasks {
		note := t.note
		if !t.done {
			note = t.unfinished(ctx.Err())
		}
		if note != "" {
			r.Notes = append(r.Notes, note)
		}
		if t.staged != nil {
			r.Staged = append(r.Staged, *t.staged)
		}
		if t.image != nil && t.done {
			r.Images = append(r.Images, *t.image)
		}
	}
	return r
}

// plan lists the work of a turn, in the order of its notes.
func (u *Understander) plan(in Input) []*task {
	var tasks []*task
	images, skipped, voices := 0, 0, 0
	for _, a := range in.Attachments {
		switch a.Segment.Kind {
		case msg.SegImage:
			if images == u.o.MaxImages {
				skipped++
				continue
			}
			images++
			tasks = append(tasks, &task{kind: kindImage, n: images, att: a})
		}
	}
	if skipped > 0 {
		tasks = append(tasks, &task{kind: kindNote, done: true,
			note: fmt.Sprintf("[另有 %d 张图片未处理：每条消息最多看 %d 张]", skipped, u.o.MaxImages)})
	}
	if u.o.Transcriber != nil {
		for _, a := range in.Attachments {
			if a.Segment.Kind != msg.SegVoice {
				continue
			}
			if voices == maxVoices {
				u.log.Debug("media: voice note not transcribed, too many in one turn", "message", a.Message)
				continue
			}
			voices++
			tasks = append(tasks, &task{kind: kindVoice, n: voices, att: a})
		}
	}
	if u.o.Links {
		for _, l := range FindLinks(in.Text, u.o.MaxLinks) {
			tasks = append(tasks, &task{kind: kindLink, url: l})
		}
	}
	return tasks
}
