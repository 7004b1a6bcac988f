package wire

import "strings"

var (
	textEscaper  = strings.NewReplacer("&", "&amp;", "[", "&#91;", "]", "&#93;")
	paramEscaper = strings.NewReplacer("&", "&amp;", "[", "&#91;", "]", "&#93;", ",", "&#44;")
	cqUnescaper  = strings.NewReplacer("&#91;", "[", "&#93;", "]", "&#44;", ",", "&amp;", "&")
)

// EscapeText escapes plain text for a CQ string.
func EscapeText(s string) string { return textEscaper.Replace(s) }

// escapeParam escapes a CQ parameter value.
func escapeParam(s string) string { return paramEscaper.Replace(s) }

// unescape reverses both escapings. A single pass replaces each entity
// once, so "&amp;#91;" becomes "&#91;", not "[".
func unescape(s string) string { return cqUnescaper.Replace(s) }

// SegmentBuilder collects segments, merging adjacent text into one text
// segment without re-encoding it on every addition. The zero value is
// empty and ready.
type SegmentBuilder struct {
	segs []Segment
	text strings.Builder
}

// AddText adds text, to the text segment being built.
func (b *SegmentBuilder) AddText(t string) { b.text.WriteString(t) }

// Add adds a segment, after the text added so far.
func (b *SegmentBuilder) Add(s Segment) {
	b.flush()
	b.segs = append(b.segs, s)
}

func (b *SegmentBuilder) flush() {
	if b.text.Len() > 0 {
		b.segs = append(b.segs, textSegment(b.text.String()))
		b.text.Reset()
	}
}

// Segments returns the segments added, the text added last included.
func (b *SegmentBuilder) Segments() []Segment {
	b.flush()
	return b.segs
}

// parseCQ parses a CQ-code string into segments. Text outside codes becomes
// text segments; a "[CQ:" that never closes, or has no type, is text.
func parseCQ(s string) []Segment {
	var b SegmentBuilder
	for {
		i := strings.Index(s, "[CQ:")
		end := -1
		if i >= 0 {
			end = strings.IndexByte(s[i:], ']')
		}
		if i < 0 || end < 0 {
			b.AddText(unescape(s))
			return b.Segments()
		}
		b.AddText(unescape(s[:i]))
		body := s[i+4 : i+end]
		s = s[i+end+1:]
		typ, params, _ := strings.Cut(body, ",")
		if typ == "" {
			b.AddText(unescape("[CQ:" + body + "]"))
			continue
		}
		seg := Segment{Type: typ, Data: Fields{}}
		if params != "" {
			for _, p := range strings.Split(params, ",") {
				k, v, _ := strings.Cut(p, "=")
				if k != "" {
					seg.Data.Set(k, quote(unescape(v)))
				}
			}
		}
		b.Add(seg)
	}
}

// ParseCode parses one whole CQ code, "[CQ:<type>,<k>=<v>,…]", into its
// segment; false when s is not exactly one code (text around it, no type,
// no closing bracket). Its values are unescaped.
func ParseCode(s string) (Segment, bool) {
	if !strings.HasPrefix(s, "[CQ:") || strings.IndexByte(s, ']') != len(s)-1 {
		return Segment{}, false
	}
	segs := parseCQ(s)
	if len(segs) != 1 || segs[0].Type == "text" {
		return Segment{}, false
	}
	return segs[0], true
}

// formatCQ renders segments as a CQ string, with keys in sorted order.
// Non-string data values are written as their JSON text.
func formatCQ(segs []Segment) string {
	var b strings.Builder
	for _, s := range segs {
		if s.Type == "text" {
			b.WriteString(EscapeText(s.Str("text")))
			continue
		}
		b.WriteString("[CQ:" + s.Type)
		for _, f := range s.Data.sorted() {
			v := string(f.Value)
			if strings.HasPrefix(strings.TrimSpace(v), `"`) {
				v = s.Str(f.Key)
			}
			b.WriteString("," + f.Key + "=" + escapeParam(v))
		}
		b.WriteByte(']')
	}
	return b.String()
}
