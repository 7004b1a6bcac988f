package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/reply"
	"github.com/pincerbot/pincer/internal/trace"
)

// MediaReader reads what a turn shows beyond its text (its pictures,
// voice notes and links) before the agent runs. It keeps to its own time
// budget: a slow download never holds the reply up beyond it.
type MediaReader interface {
	Read(ctx context.Context, mc MsgContext, seesImages bool) MediaRead
}

// MediaRead is what a MediaReader made of a turn.
type MediaRead struct {
	// Notes are lines added to the user's message: descriptions,
	// transcripts, link previews, and what could not be read.
	Notes []string
	// Images are the staged image files the model is shown, when it sees
	// images.
	Images []string
	// Summary says for the decision trace what was read; "" for nothing.
	Summary string
}

// readMedia runs the media reader over the turns of a batch at once, each
// within the reader's budget; the result for turn i is reads[i].
func (e *Engine) readMedia(ctx context.Context, mcs []MsgContext, model llm.Ref) []MediaRead {
	reads := make([]MediaRead, len(mcs))
	if e.opts.Media == nil {
		return reads
	}
	sees := e.opts.SeesImages != nil && e.opts.SeesImages(model)
	var wg sync.WaitGroup
	for i, mc := range mcs {
		if !needsMedia(mc) {
			continue
		}
		wg.Go(func() {
			reads[i] = e.opts.Media.Read(ctx, mc, sees)
			if reads[i].Summary != "" && e.opts.Trace != nil {
				e.opts.Trace.Step(trace.KeyOf(mc.Message), trace.StageMedia, "", reads[i].Summary)
			}
		})
	}
	wg.Wait()
	return reads
}

// needsMedia reports whether a turn has anything for the media reader:
// attachments, or a link in the sender's text.
func needsMedia(mc MsgContext) bool {
	return len(mc.Media) > 0 || strings.Contains(mc.RawBody, "http://") || strings.Contains(mc.RawBody, "https://")
}

// withNotes appends a media read's notes to a turn's body, one per line.
func withNotes(body string, r MediaRead) string {
	if len(r.Notes) == 0 {
		return body
	}
	return strings.TrimRight(body, "\n") + "\n" + strings.Join(r.Notes, "\n")
}

// attach moves the media lines of a reply to m (reply.SplitMedia) into
// its Media. A local file must exist and lie in the chat's own directory
// (Options.ChatDir) or under one of Options.MediaRoots; a relative path is
// taken from Options.Workspace. What cannot be sent is named in the text
// instead, so its absence is visible.
func (e *Engine) attach(ctx context.Context, log *slog.Logger, m msg.Message, p *msg.Outbound) {
	text, refs := reply.SplitMedia(p.Text)
	if len(refs) == 0 {
		return
	}
	p.Text = text
	for _, ref := range refs {
		media, err := e.mediaOf(ctx, m, ref)
		if err != nil {
			log.Warn("reply media not sent", "ref", ref, "err", err)
			reason := err
			for _, known := range []error{errMediaOutside, errMediaMissing, errMediaScheme, errMediaPrivate} {
				if errors.Is(err, known) {
					reason = known // the chat reads the reason, not the details
				}
			}
			p.Text = strings.TrimSpace(p.Text + "\n（未能发送 " + filepath.Base(ref) + "：" + reason.Error() + "）")
			continue
		}
		p.Media = append(p.Media, media)
	}
}

// Reasons a reply's media is not sent, as the chat reads them.
var (
	errMediaOutside = errors.New("不在可发送的目录里")
	errMediaMissing = errors.New("文件不存在")
	errMediaScheme  = errors.New("只能发送本地文件或 http(s) 链接")
	errMediaPrivate = errors.New("链接指向内网地址")
)

// mediaOf resolves one media reference of a reply.
func (e *Engine) mediaOf(ctx context.Context, m msg.Message, ref string) (msg.Media, error) {
	kind := msg.MediaKindOf(ref)
	if u, err := url.Parse(ref); err == nil && u.Scheme != "" && len(u.Scheme) > 1 {
		switch u.Scheme {
		case "http", "https":
			if e.opts.MediaURL != nil {
				if err := e.opts.MediaURL(ctx, ref); err != nil {
					return msg.Media{}, fmt.Errorf("%w: %w", errMediaPrivate, err)
				}
			}
			return msg.Media{Kind: kind, URL: ref, Name: path.Base(u.Path)}, nil
		case "file":
			ref = u.Path
		default:
			return msg.Media{}, errMediaScheme
		}
	}
	var chat string
	if e.opts.ChatDir != nil {
		chat = e.opts.ChatDir(m)
	}
	if !filepath.IsAbs(ref) {
		base := cmp.Or(e.opts.Workspace, chat)
		if base == "" && len(e.opts.MediaRoots) > 0 {
			base = e.opts.MediaRoots[0]
		}
		if base == "" {
			return msg.Media{}, errMediaOutside
		}
		ref = filepath.Join(base, ref)
	}
	real, err := filepath.EvalSymlinks(ref)
	if err != nil {
		return msg.Media{}, errMediaMissing
	}
	if !e.maySend(real, chat) {
		return msg.Media{}, errMediaOutside
	}
	if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() {
		return msg.Media{}, errMediaMissing
	}
	return msg.Media{Kind: kind, URL: real, Name: filepath.Base(ref)}, nil
}

// maySend reports whether a reply in the chat whose folder is chat may
// send the local file: one in its own folder, one in the workspace outside
// the folders of chats (ChatsDirs), or one under MediaRoots.
func (e *Engine) maySend(file, chat string) bool {
	in := func(dir string) bool { return within(file, dir) }
	switch {
	case chat != "" && in(chat):
		return true
	case slices.ContainsFunc(e.opts.ChatsDirs, in):
		return false // another chat's
	case e.opts.Workspace != "" && in(e.opts.Workspace):
		return true
	}
	return slices.ContainsFunc(e.opts.MediaRoots, in)
}

// within reports whether file lies under dir, both resolved.
func within(file, dir string) bool {
	d, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	if r, err := filepath.EvalSymlinks(d); err == nil {
		d = r
	}
	rel, err := filepath.Rel(d, file)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
