package onebot

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pincerbot/pincer/internal/msg"
)

// PeerFilter admits peers by allowFrom and denyFrom entries: "*",
// "group:<id>" or "private:<qq>". Deny always wins; no allow entries admit
// everyone, so the zero value admits everyone.
type PeerFilter struct {
	allow, deny []string
}

// NewPeerFilter checks and compiles the entries.
func NewPeerFilter(allow, deny []string) (PeerFilter, error) {
	var f PeerFilter
	for _, list := range []struct {
		name    string
		entries []string
		into    *[]string
	}{{"allowFrom", allow, &f.allow}, {"denyFrom", deny, &f.deny}} {
		for _, e := range list.entries {
			key, err := filterKey(e)
			if err != nil {
				return PeerFilter{}, fmt.Errorf("%s: %w", list.name, err)
			}
			*list.into = append(*list.into, key)
		}
	}
	return f, nil
}

func filterKey(e string) (string, error) {
	e = strings.TrimSpace(e)
	if e == "*" {
		return e, nil
	}
	kind, id, ok := strings.Cut(e, ":")
	n, err := strconv.ParseInt(id, 10, 64)
	if !ok || err != nil || n <= 0 {
		return "", fmt.Errorf("entry %q: want *, group:<id> or private:<qq>", e)
	}
	switch strings.ToLower(kind) {
	case "group":
		return "group:" + id, nil
	case "private":
		return "direct:" + id, nil
	}
	return "", fmt.Errorf("entry %q: want *, group:<id> or private:<qq>", e)
}

// allowed reports whether messages of peer are accepted.
func (f PeerFilter) allowed(peer msg.Peer) bool { return f.denial(peer) == "" }

// denial names the rule that refuses peer's messages, "" when they are
// accepted.
func (f PeerFilter) denial(peer msg.Peer) string {
	key := peer.String()
	for _, d := range f.deny {
		if d == "*" || d == key {
			return fmt.Sprintf("denied by the denyFrom entry %q", d)
		}
	}
	if len(f.allow) == 0 {
		return ""
	}
	for _, a := range f.allow {
		if a == "*" || a == key {
			return ""
		}
	}
	return "denied: " + key + " is not among the allowFrom entries"
}
