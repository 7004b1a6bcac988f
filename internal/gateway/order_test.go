package gateway

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pincerbot/pincer/internal/config"
)

// TestQQChatsSeeTheirMessagesInOrder: interleaved bursts to 20 groups over
// a real WebSocket, then a mention in each; every group's reply is given
// that group's messages in the order they were sent, in its history and in
// its burst.
func TestQQChatsSeeTheirMessagesInOrder(t *testing.T) {
	r := newQQRig(t, func(c *config.Config) {
		c.Channels.OneBot.Receive.History.MaxMessages = 100
		c.Channels.OneBot.Receive.History.MaxChars = 100000
		c.Messages.Inbound.Queue = 16 // the reader is held back often
	})
	const groups, each = 20, 30
	for i := range each {
		for g := range groups {
			ev := groupFrom(int64(g*1000+i+1), 10001, "张三", text(fmt.Sprintf("g%d-%d", g, i)))
			ev["group_id"] = 700000100 + g
			r.push(t, ev)
		}
	}
	for g := range groups {
		ev := groupFrom(int64(g*1000+900), 10002, "李四", atBot(), text(fmt.Sprintf(" g%d-ask", g)))
		ev["group_id"] = 700000100 + g
		r.push(t, ev)
		follow := groupFrom(int64(g*1000+901), 10002, "李四", text(fmt.Sprintf("g%d-more", g)))
		follow["group_id"] = 700000100 + g
		r.push(t, follow)
	}
	for range groups {
		waitSend(t, r.peer, r.ctx)
	}
	seen := map[int]bool{}
	for _, req := range r.model.Requests() {
		body := strings.Join(userMessages(req), "\n")
		g, got := groupLines(t, body)
		if g < 0 {
			continue
		}
		seen[g] = true
		if len(got) != each || !slices.IsSorted(got) {
			t.Errorf("group %d saw %v", g, got)
		}
		if !strings.Contains(body, fmt.Sprintf("g%d-ask\ng%d-more", g, g)) {
			t.Errorf("group %d's burst is out of order:\n%s", g, body)
		}
	}
	if len(seen) != groups {
		t.Errorf("%d groups answered", len(seen))
	}
}

var groupLine = regexp.MustCompile(`g(\d+)-(\d+)`)

// groupLines reads the "g<group>-<n>" lines of a turn's body: the group
// (-1 for none) and the numbers in the order the turn has them; lines of
// another group in the same turn are an error.
func groupLines(t *testing.T, body string) (group int, got []int) {
	t.Helper()
	group = -1
	for _, m := range groupLine.FindAllStringSubmatch(body, -1) {
		n, _ := strconv.Atoi(m[1])
		i, _ := strconv.Atoi(m[2])
		if group >= 0 && n != group {
			t.Errorf("group %d's turn holds group %d's message", group, n)
		}
		group = n
		got = append(got, i)
	}
	return group, got
}
