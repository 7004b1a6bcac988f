package onebot

import "strings"

// defaultTextChunkLimit is the default outbound chunk size in characters.
const defaultTextChunkLimit = 4500

// chunkText splits outbound CQ text into chunks of at most limit
// characters: text that fits goes whole; otherwise each chunk ends right
// after its last newline within the limit, or at the limit. A chunk never
// ends inside a [CQ:…] code: the break moves before the code, or, when a
// chunk would lie wholly inside one, past its end (that chunk may exceed
// the limit). Whitespace-only text gives no chunks.
func chunkText(text string, limit int) []string {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if limit <= 0 {
		limit = defaultTextChunkLimit
	}
	var chunks []string
	for {
		at := byteAt(text, limit)
		if at >= len(text) {
			break // the rest fits
		}
		if nl := strings.LastIndexByte(text[:at], '\n'); nl >= 0 {
			at = nl + 1
		}
		if open := openCode(text[:at]); open > 0 {
			at = open
		} else if open == 0 {
			// The chunk would lie inside one code: extend to its end. A
			// "[CQ:" that never closes is plain text and cuts at the limit.
			if end := strings.IndexByte(text, ']'); end >= 0 {
				at = end + 1
			}
		}
		if chunk := text[:at]; strings.TrimSpace(chunk) != "" {
			chunks = append(chunks, chunk)
		}
		text = text[at:]
	}
	if strings.TrimSpace(text) != "" {
		chunks = append(chunks, text)
	}
	return chunks
}

// openCode returns the byte offset of a "[CQ:" in s that is not closed
// within s, or -1.
func openCode(s string) int {
	i := strings.LastIndex(s, "[CQ:")
	if i < 0 || strings.IndexByte(s[i:], ']') >= 0 {
		return -1
	}
	return i
}

// byteAt returns the byte offset of rune n of s.
func byteAt(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}
