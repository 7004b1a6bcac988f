package onebot

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/prompt"
)

// participant is someone the agent was shown in a realtime turn (a sender
// of the batch or of the history it read), whom it may mention.
type participant struct {
	QQ   wire.ID
	Name string
}

// outboundOptions say how reply text becomes segments.
type outboundOptions struct {
	// Mentions turns "[CQ:at,qq=N]" into real mentions and, with
	// Participants, "@name" and "@QQ" too. Set only for realtime group
	// replies: digests, summaries and notices never ping anyone.
	Mentions bool
	// Participants, oldest first; for a name two people share, the later
	// one wins.
	Participants []participant
}

// outboundSegments turns reply text into segments to send. Text is sent
// as text, so CQ codes the model wrote are never interpreted, except at
// codes with a number when opts.Mentions is set (see cqMention); "qq=all"
// is never converted.
func outboundSegments(text string, opts outboundOptions) []wire.Segment {
	var b wire.SegmentBuilder
	// Names are rewritten only after an '@': text without one needs no
	// index of them.
	var names mentionKeys
	if opts.Mentions && strings.IndexByte(text, '@') >= 0 {
		names = mentionIndex(opts.Participants)
	}
	for text != "" {
		i := strings.Index(text, "[CQ:")
		end := -1
		if i >= 0 {
			end = strings.IndexByte(text[i:], ']')
		}
		if i < 0 || end < 0 {
			rewrite(&b, text, opts.Mentions, names)
			break
		}
		rewrite(&b, text[:i], opts.Mentions, names)
		code := text[i : i+end+1]
		text = text[i+end+1:]
		if qq, ok := cqMention(code); ok && opts.Mentions {
			b.Add(wire.NewSegment("at", "qq", qq))
			continue
		}
		b.AddText(code)
	}
	return b.Segments()
}

// cqMention returns the QQ number an at code mentions: "[CQ:at,qq=N]",
// and the form NapCat and LLOneBot print, which models copy,
// "[CQ:at,qq=N,name=X]" (any other parameters, in any order, are
// ignored). Only a number counts: "qq=all" and the like do not.
func cqMention(code string) (string, bool) {
	seg, ok := wire.ParseCode(code)
	if !ok || seg.Type != "at" {
		return "", false
	}
	qq := seg.Str("qq")
	if qq == "" || strings.Trim(qq, "0123456789") != "" {
		return "", false
	}
	return qq, true
}

// mentionIndex maps sanitized names and QQ numbers to QQ numbers, later
// participants winning, with the keys sorted longest first.
type mentionKeys struct {
	keys []string
	qq   map[string]wire.ID
}

func mentionIndex(ps []participant) mentionKeys {
	idx := mentionKeys{qq: map[string]wire.ID{}}
	for _, p := range ps {
		if p.QQ <= 0 {
			continue
		}
		idx.qq[p.QQ.String()] = p.QQ
		if name := prompt.Sanitize(p.Name); name != "" {
			idx.qq[name] = p.QQ
		}
	}
	for k := range idx.qq {
		idx.keys = append(idx.keys, k)
	}
	sort.Slice(idx.keys, func(a, b int) bool {
		if len(idx.keys[a]) != len(idx.keys[b]) {
			return len(idx.keys[a]) > len(idx.keys[b])
		}
		return idx.keys[a] < idx.keys[b]
	})
	return idx
}

// rewrite adds text to b, turning "@name" of known participants into at
// segments when enabled.
func rewrite(b *wire.SegmentBuilder, text string, enabled bool, idx mentionKeys) {
	if !enabled || len(idx.keys) == 0 {
		b.AddText(text)
		return
	}
	start := 0
	for i := 0; i < len(text); {
		if text[i] != '@' || (i > 0 && emailLike(text[i-1])) {
			i++
			continue
		}
		key := matchAt(text[i+1:], idx.keys)
		if key == "" {
			i++
			continue
		}
		b.AddText(text[start:i])
		b.Add(wire.NewSegment("at", "qq", idx.qq[key].String()))
		i += 1 + len(key)
		start = i
	}
	b.AddText(text[start:])
}

// matchAt returns the longest key that s starts with and that is not
// followed by a letter, digit or '_' (so "@张三丰" never matches "张三").
func matchAt(s string, keys []string) string {
	for _, k := range keys {
		if !strings.HasPrefix(s, k) {
			continue
		}
		if r, _ := utf8.DecodeRuneInString(s[len(k):]); len(s) > len(k) && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') {
			continue
		}
		return k
	}
	return ""
}

// emailLike reports a byte that makes a following '@' part of an address.
func emailLike(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("._%+-", b) >= 0
}
