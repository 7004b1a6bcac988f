package onebot

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/pincerbot/pincer/internal/agent"
	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/llm"
	"github.com/pincerbot/pincer/internal/msg"
	"github.com/pincerbot/pincer/internal/prompt"
)

// Texts the agent reads from the tools.
const (
	textNoHistory = "（无历史消息）"
	textNoMembers = "（该群暂无成员信息）"
	textShownOf   = "（仅显示前 %d / 共 %d 名成员）"
)

// Tool names.
const (
	historyToolName = "onebot_get_history"
	membersToolName = "onebot_get_group_members"
)

// Lookup finds an account with tools enabled by id.
type Lookup func(id msg.AccountID) (*Account, bool)

// args are a tool's arguments by name, each kept raw: the model may send
// numbers as strings and the other way round.
type args map[string]json.RawMessage

// tool builds a QQ tool: the accountId argument picks the account, and
// any failure, from bad arguments to the implementation, comes back as a
// failed result rather than an error.
func tool(lookup Lookup, name, description string, props map[string]any, required string, run func(ctx context.Context, a *Account, in args) (string, error)) agent.Tool {
	props["accountId"] = map[string]any{"type": "string", "description": "QQ account (default \"default\")"}
	return agent.Tool{
		Spec: llm.Tool{
			Name: name, Description: description,
			Parameters: map[string]any{"type": "object", "properties": props, "required": []string{required}},
		},
		Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
			var in args
			if err := json.Unmarshal(raw, &in); err != nil {
				return agent.Failed(fmt.Errorf("arguments: %w", err))
			}
			a, err := account(lookup, in["accountId"])
			if err != nil {
				return agent.Failed(err)
			}
			out, err := run(ctx, a, in)
			if err != nil {
				return agent.Failed(err)
			}
			return out, nil
		},
	}
}

func account(lookup Lookup, raw json.RawMessage) (*Account, error) {
	id := msg.DefaultAccount
	var s string
	if len(raw) > 0 && json.Unmarshal(raw, &s) == nil && strings.TrimSpace(s) != "" {
		id = msg.AccountID(strings.TrimSpace(s))
	}
	a, ok := lookup(id)
	if !ok {
		return nil, fmt.Errorf("no QQ account %q with tools enabled", id)
	}
	return a, nil
}

// HistoryTool reads a QQ chat's recent messages: one line per message,
// "[HH:mm:ss] name(qq): text", oldest first, times in loc.
func HistoryTool(lookup Lookup, loc *time.Location) agent.Tool {
	props := map[string]any{
		"target":     map[string]any{"type": "string", "description": "group:<id>, private:<qq>, or a QQ number (private)"},
		"count":      map[string]any{"type": "integer", "description": "how many messages, 1-100 (default 20)"},
		"messageSeq": map[string]any{"type": "string", "description": "optional message id to page back from"},
	}
	return tool(lookup, historyToolName, "Read recent messages of a QQ group or private chat (read-only).", props, "target",
		func(ctx context.Context, a *Account, in args) (string, error) {
			peer, err := ParseTarget(jsonText(in["target"]))
			if err != nil {
				return "", err
			}
			q := channel.HistoryQuery{Count: clampCount(in["count"], 20, 1, 100), Before: msg.MessageID(jsonText(in["messageSeq"]))}
			msgs, err := a.History(ctx, peer, q)
			if err != nil {
				return "", err
			}
			if len(msgs) == 0 {
				return textNoHistory, nil
			}
			var b strings.Builder
			for i, m := range msgs {
				if i > 0 {
					b.WriteByte('\n')
				}
				name := prompt.Sanitize(m.Sender.Name)
				if name == "" {
					name = string(m.Sender.ID)
				}
				fmt.Fprintf(&b, "[%s] %s(%s): %s", m.Time.In(loc).Format("15:04:05"), name, m.Sender.ID, m.Text)
			}
			return b.String(), nil
		})
}

// MembersTool lists a QQ group's members: "name(qq) — role" per line.
func MembersTool(lookup Lookup) agent.Tool {
	props := map[string]any{
		"groupId": map[string]any{"type": "string", "description": "the group number"},
		"noCache": map[string]any{"type": "boolean", "description": "ask QQ rather than the implementation's cache"},
		"limit":   map[string]any{"type": "integer", "description": "at most this many, 1-500 (default 100)"},
	}
	return tool(lookup, membersToolName, "List the members of a QQ group with their roles (read-only).", props, "groupId",
		func(ctx context.Context, a *Account, in args) (string, error) {
			gid, err := strconv.ParseInt(jsonText(in["groupId"]), 10, 64)
			if err != nil || gid <= 0 || wire.ID(gid) == wire.PlaceholderGroup {
				return "", fmt.Errorf("groupId %s is not a group number", in["groupId"])
			}
			params := map[string]any{"group_id": gid}
			var noCache bool
			if json.Unmarshal(in["noCache"], &noCache) == nil {
				params["no_cache"] = noCache // booleans only; anything else is unset
			}
			limit := clampCount(in["limit"], 100, 1, 500)
			data, err := a.Call(ctx, "get_group_member_list", params, 0)
			if err != nil {
				return "", err
			}
			var members []struct {
				UserID   wire.ID `json:"user_id"`
				Nickname string  `json:"nickname"`
				Card     string  `json:"card"`
				Role     string  `json:"role"`
			}
			if err := json.Unmarshal(data, &members); err != nil {
				return "", fmt.Errorf("get_group_member_list answered something else than a list: %w", err)
			}
			if len(members) == 0 {
				return textNoMembers, nil
			}
			var b strings.Builder
			for i, m := range members[:min(limit, len(members))] {
				if i > 0 {
					b.WriteByte('\n')
				}
				name := prompt.Sanitize(m.Card)
				if name == "" {
					name = prompt.Sanitize(m.Nickname)
				}
				if name == "" {
					name = "?"
				}
				role := m.Role
				if role == "" {
					role = "member"
				}
				fmt.Fprintf(&b, "%s(%s) — %s", name, m.UserID, role)
			}
			if len(members) > limit {
				fmt.Fprintf(&b, "\n"+textShownOf, limit, len(members))
			}
			return b.String(), nil
		})
}

// jsonText reads a string or a number as text.
func jsonText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// clampCount reads a number (or numeric string), floors it and clamps it
// to [lo, hi]; anything else is def.
func clampCount(raw json.RawMessage, def, lo, hi int) int {
	f, err := strconv.ParseFloat(jsonText(raw), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return def
	}
	return int(max(float64(lo), min(float64(hi), math.Floor(f))))
}
