package reply

import "strings"

// MediaDirective starts a reply line that sends a file instead of saying
// it: "MEDIA: /path/to/chart.png" or "MEDIA: https://example.com/a.pdf".
const MediaDirective = "MEDIA:"

// SplitMedia takes the media lines out of a reply: each line that starts
// with MediaDirective (outside fenced code) names one attachment, by
// local path, file:// URI or http(s) URL, optionally wrapped in backticks,
// quotes or angle brackets. It returns the text without those lines and
// the references in order, de-duplicated.
func SplitMedia(text string) (rest string, refs []string) {
	if !strings.Contains(text, MediaDirective) {
		return text, nil
	}
	lines := strings.Split(text, "\n")
	kept := lines[:0]
	fenced := false
	seen := map[string]bool{}
	for _, line := range lines {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(t, MediaDirective) {
			kept = append(kept, line)
			continue
		}
		ref := strings.Trim(strings.TrimSpace(t[len(MediaDirective):]), "`'\"<>")
		if ref == "" {
			kept = append(kept, line)
			continue
		}
		if !seen[ref] {
			seen[ref] = true
			refs = append(refs, ref)
		}
	}
	return strings.TrimSpace(strings.Join(kept, "\n")), refs
}
