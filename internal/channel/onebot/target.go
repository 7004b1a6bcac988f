package onebot

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
)

// ParseTarget parses an operator or tool target: "onebot:group:N",
// "group:N", "private:N", "onebot:N" or bare digits (private). The prefix is
// case-insensitive; ids must be numbers.
func ParseTarget(s string) (msg.Peer, error) {
	t := strings.TrimSpace(s)
	if len(t) >= 7 && strings.EqualFold(t[:7], "onebot:") {
		t = t[7:]
	}
	kind, id := msg.Direct, t
	if k, rest, ok := strings.Cut(t, ":"); ok {
		switch strings.ToLower(k) {
		case "group":
			kind = msg.Group
		case "private":
		default:
			return msg.Peer{}, fmt.Errorf("onebot: target %q: want group:<id>, private:<id> or a QQ number", s)
		}
		id = rest
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return msg.Peer{}, fmt.Errorf("onebot: target %q: %q is not a QQ or group number", s, id)
	}
	if kind == msg.Group && wire.ID(n) == wire.PlaceholderGroup {
		return msg.Peer{}, fmt.Errorf("onebot: target %q: %d is a placeholder, not a group", s, n)
	}
	return msg.Peer{Kind: kind, ID: strconv.FormatInt(n, 10)}, nil
}
