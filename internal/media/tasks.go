package media

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/msg"
)

type taskKind int

const (
	kindImage taskKind = iota + 1
	kindVoice
	kindLink
	// kindNote is a note known in advance.
	kindNote
)

// maxTranscript caps a transcript, in runes.
const maxTranscript = 2000

// task is one unit of a turn's work. Its state is written through the
// update func Understand gives run, which drops writes once the result is
// taken; a task is done once its final note is set, or it ended with none
// before ctx did.
type task struct {
	kind taskKind
	n    int // 1-based number among the turn's images or voice notes
	att  msg.Attachment
	url  string

	done   bool
	note   string
	staged *Staged
	image  *Image
}

// unfinished is the note of a task ctx ended before it was done.
func (t *task) unfinished(err error) string {
	why := "超时"
	if errors.Is(err, context.Canceled) {
		why = "已取消"
	}
	switch t.kind {
	case kindImage:
		if t.staged != nil {
			return fmt.Sprintf("[图片%d: %s（描述未完成：%s）]", t.n, t.staged.Name, why)
		}
		return fmt.Sprintf("[图片%d获取失败: %s]", t.n, why)
	case kindVoice:
		return fmt.Sprintf("[语音转写失败: %s]", why)
	}
	return ""
}

// run does t, reporting through update.
func (u *Understander) run(ctx context.Context, in Input, t *task, update func(func(*task))) {
	switch t.kind {
	case kindImage:
		u.image(ctx, in, t, update)
	case kindVoice:
		u.voice(ctx, in, t, update)
	case kindLink:
		u.link(ctx, t, update)
	}
}

func (u *Understander) image(ctx context.Context, in Input, t *task, update func(func(*task))) {
	describer := in.Describer
	if describer == nil {
		describer = u.o.Describer
	}
	note := func(format string, args ...any) {
		s := fmt.Sprintf(format, args...)
		update(func(t *task) { t.note, t.done = s, true })
	}
	b, err := u.download(ctx, in, t.att)
	if err != nil {
		u.log.Warn("media: image download failed", "image", t.n, "message", t.att.Message, "err", err)
		note("[图片%d获取失败: %s]", t.n, u.reason(err))
		return
	}
	if !strings.HasPrefix(b.MIME, "image/") {
		note("[图片%d获取失败: 不是图片（%s）]", t.n, b.MIME)
		return
	}
	st, err := u.stage(ctx, in.Dir, b)
	if err != nil {
		u.log.Warn("media: staging an image failed", "image", t.n, "err", err)
		note("[图片%d获取失败: %s]", t.n, u.reason(err))
		return
	}
	update(func(t *task) { t.staged = &st })
	// What a model is shown: the picture itself, or scaled down to what
	// providers take.
	part, fitErr := FitForModel(b.Data)
	if fitErr != nil {
		u.log.Info("media: an image cannot be shown to a model", "image", t.n, "err", fitErr)
	}
	switch {
	case fitErr != nil && errors.Is(fitErr, ErrImageTooLarge):
		note("[图片%d: %s（图片过大，无法查看）]", t.n, st.Name)
	case in.SeesImages && fitErr == nil:
		update(func(t *task) {
			t.image = &Image{Staged: st, Part: part}
			t.note = fmt.Sprintf("[图片%d: %s]", t.n, st.Name)
			t.done = true
		})
	case describer != nil && fitErr == nil:
		desc, err := describer.Describe(ctx, part, st.SHA256)
		switch {
		case err == nil:
			note("[图片%d描述: %s（文件 %s）]", t.n, desc, st.Name)
		case ctx.Err() != nil:
			// Noted as unfinished.
		default:
			u.log.Warn("media: describing an image failed", "image", t.n, "err", err)
			note("[图片%d: %s（描述失败）]", t.n, st.Name)
		}
	case in.SeesImages || describer != nil:
		note("[图片%d: %s（%s 格式，当前模型无法查看）]", t.n, st.Name, b.MIME)
	default:
		note("[图片%d: %s（当前模型看不到图片）]", t.n, st.Name)
	}
}

func (u *Understander) voice(ctx context.Context, in Input, t *task, update func(func(*task))) {
	fail := func(err error) {
		s := fmt.Sprintf("[语音转写失败: %s]", u.reason(err))
		update(func(t *task) { t.note, t.done = s, true })
	}
	b, err := u.download(ctx, in, t.att)
	if err != nil {
		u.log.Warn("media: voice download failed", "voice", t.n, "message", t.att.Message, "err", err)
		fail(err)
		return
	}
	st, err := u.stage(ctx, in.Dir, b)
	if err != nil {
		u.log.Warn("media: staging a voice note failed", "voice", t.n, "err", err)
		fail(err)
		return
	}
	update(func(t *task) { t.staged = &st })
	text, err := u.o.Transcriber.Transcribe(ctx, b.Data, st.Name, st.MIME)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		u.log.Warn("media: transcription failed", "voice", t.n, "err", err)
		s := "[语音转写失败: 转写出错]"
		update(func(t *task) { t.note, t.done = s, true })
		return
	}
	text = truncateRunes(strings.TrimSpace(strings.ToValidUTF8(text, "\uFFFD")), maxTranscript)
	if text == "" {
		text = "（没有听到话语）"
	}
	s := fmt.Sprintf("[语音转写: %s]", text)
	update(func(t *task) { t.note, t.done = s, true })
}

func (u *Understander) link(ctx context.Context, t *task, update func(func(*task))) {
	// A preview is a nicety: a slow site must not hold the turn up for
	// the whole budget.
	ctx, cancel := context.WithTimeout(ctx, u.o.LinkTimeout)
	defer cancel()
	l, err := u.o.Fetcher.Preview(ctx, t.url)
	if err != nil {
		u.log.Debug("media: no link preview", "err", err)
		return
	}
	var s string
	switch {
	case l.Title != "" && l.Description != "":
		s = fmt.Sprintf("[链接 %s: %s — %s]", t.url, l.Title, l.Description)
	case l.Title != "" || l.Description != "":
		s = fmt.Sprintf("[链接 %s: %s]", t.url, first(l.Title, l.Description))
	default:
		return
	}
	update(func(t *task) { t.note, t.done = s, true })
}

// Errors of a turn's work.
var (
	// errNoURL reports an attachment without a URL and no channel
	// downloader.
	errNoURL = errors.New("attachment has no URL")
	errStage = errors.New("staging failed")
)

// download fetches a, with MIME set by its content when that is known (a
// server's Content-Type is often generic or wrong), else as the channel or
// server said.
func (u *Understander) download(ctx context.Context, in Input, a msg.Attachment) (channel.Blob, error) {
	var b channel.Blob
	var err error
	switch {
	case in.Download != nil:
		b, err = in.Download(ctx, a, u.o.MaxBytes)
	case a.Segment.URL == "":
		err = errNoURL
	default:
		b, err = u.o.Fetcher.Get(ctx, a.Segment.URL, u.o.MaxBytes)
	}
	if err != nil {
		return channel.Blob{}, err
	}
	if int64(len(b.Data)) > u.o.MaxBytes {
		return channel.Blob{}, channel.ErrTooLarge
	}
	if sniffed := Sniff(b.Data); sniffed != "application/octet-stream" {
		b.MIME = mediaType(sniffed)
	} else {
		b.MIME = mediaType(b.MIME)
	}
	return b, nil
}

// stage stages b in dir, or, when dir is empty, only names it. It does not
// write once ctx is done.
func (u *Understander) stage(ctx context.Context, dir string, b channel.Blob) (Staged, error) {
	if err := ctx.Err(); err != nil {
		return Staged{}, err
	}
	if dir != "" {
		s, err := Stage(dir, b)
		if err != nil {
			return Staged{}, fmt.Errorf("%w: %w", errStage, err)
		}
		return s, nil
	}
	sum := sha256.Sum256(b.Data)
	s := Staged{MIME: b.MIME, SHA256: hex.EncodeToString(sum[:]), Size: len(b.Data)}
	s.Name = s.SHA256[:16] + Ext(s.MIME)
	return s, nil
}

// reason says shortly why a download failed, without its URL.
func (u *Understander) reason(err error) string {
	var status *StatusError
	var dns *net.DNSError
	var timeout interface{ Timeout() bool }
	switch {
	case errors.Is(err, ErrPrivateAddress):
		return "不允许访问内网地址"
	case errors.Is(err, channel.ErrTooLarge):
		return "超过 " + sizeText(u.o.MaxBytes) + " 上限"
	case errors.Is(err, context.DeadlineExceeded):
		return "超时"
	case errors.Is(err, context.Canceled):
		return "已取消"
	case errors.As(err, &status):
		return fmt.Sprintf("HTTP %d", status.StatusCode)
	case errors.As(err, &dns):
		return "域名解析失败"
	case errors.As(err, &timeout) && timeout.Timeout():
		return "超时"
	case errors.Is(err, errNoURL):
		return "没有下载地址"
	case errors.Is(err, errStage):
		return "保存失败"
	}
	return "下载出错"
}

// sizeText writes n bytes as MiB, KiB or bytes.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d 字节", n)
}
