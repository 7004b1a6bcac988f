package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/transform"
)

// Preview limits.
const (
	// previewBytes is how much of a page Preview reads.
	previewBytes = 512 << 10
	// MaxTitle and MaxDescription cap a Link's fields, in runes.
	MaxTitle       = 200
	MaxDescription = 500
)

// ErrNotHTML reports a link to something other than an HTML page.
var ErrNotHTML = errors.New("not an HTML page")

// Link is what a page says about itself.
type Link struct {
	URL string
	// Title is the page's og:title, else its <title>; Description its
	// og:description, else its meta description. Either may be empty;
	// both are single-line, at most MaxTitle and MaxDescription runes.
	Title       string
	Description string
}

// Preview fetches the page at rawURL, as Get does (the same address
// checks), and reads its title and description from the first 512 KiB.
// Pages in other charsets (GBK, Big5, Shift_JIS, ...) are decoded by their
// Content-Type or <meta charset>. A response that is not text/html or
// application/xhtml+xml (or, without a Content-Type, does not look like
// HTML) fails with ErrNotHTML, without reading its body.
func (f *Fetcher) Preview(ctx context.Context, rawURL string) (Link, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	resp, shown, err := f.open(ctx, rawURL)
	if err != nil {
		return Link{}, fmt.Errorf("preview: %w", err)
	}
	defer resp.Body.Close()
	contentType := resp.Header.Get("Content-Type")
	mt := mediaType(contentType)
	if mt != "" && mt != "text/html" && mt != "application/xhtml+xml" {
		return Link{}, fmt.Errorf("preview %s: %s: %w", shown, mt, ErrNotHTML)
	}
	data, err := readAll(io.LimitReader(resp.Body, previewBytes), previewBytes, resp.ContentLength)
	if err != nil {
		return Link{}, fmt.Errorf("preview %s: %w", shown, err)
	}
	if mt == "" && !strings.HasPrefix(Sniff(data), "text/html") {
		return Link{}, fmt.Errorf("preview %s: %w", shown, ErrNotHTML)
	}
	l := parseLink(data, contentType)
	l.URL = rawURL
	return l, nil
}

// parseLink reads the title and description of an HTML document, decoding
// it by contentType or what the document declares.
func parseLink(data []byte, contentType string) Link {
	var r io.Reader = bytes.NewReader(data)
	if e, _, _ := charset.DetermineEncoding(data, contentType); e != encoding.Nop {
		r = transform.NewReader(r, e.NewDecoder())
	}
	var title, ogTitle, ogDesc, desc string
	z := html.NewTokenizer(r)
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return newLink(title, ogTitle, ogDesc, desc)
		case html.EndTagToken:
			if name, _ := z.TagName(); string(name) == "head" {
				return newLink(title, ogTitle, ogDesc, desc)
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			switch string(name) {
			case "body":
				return newLink(title, ogTitle, ogDesc, desc)
			case "title":
				if tt == html.StartTagToken && title == "" && z.Next() == html.TextToken {
					title = string(z.Text())
				}
			case "meta":
				var key, content string
				for hasAttr {
					var k, v []byte
					k, v, hasAttr = z.TagAttr()
					switch string(k) {
					case "name", "property":
						if key == "" {
							key = strings.ToLower(strings.TrimSpace(string(v)))
						}
					case "content":
						content = string(v)
					}
				}
				switch key {
				case "og:title":
					ogTitle = first(ogTitle, content)
				case "og:description":
					ogDesc = first(ogDesc, content)
				case "description":
					desc = first(desc, content)
				}
			}
		}
		if ogTitle != "" && ogDesc != "" {
			return newLink(title, ogTitle, ogDesc, desc)
		}
	}
}

func newLink(title, ogTitle, ogDesc, desc string) Link {
	return Link{
		Title:       oneLine(first(oneLine(ogTitle, MaxTitle), title), MaxTitle),
		Description: oneLine(first(oneLine(ogDesc, MaxDescription), desc), MaxDescription),
	}
}

// first returns a, or b when a is empty.
func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// oneLine makes s valid UTF-8 on one line, its white space and control
// characters collapsed to single spaces, cut to at most n runes.
func oneLine(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
	}), " ")
	return truncateRunes(s, n)
}
