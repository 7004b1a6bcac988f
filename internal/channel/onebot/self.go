package onebot

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
)

// selfSource says where the bot's QQ number came from.
type selfSource string

// Self sources, in the order they are tried.
const (
	selfFromConfig selfSource = "config"
	selfFromHeader selfSource = "X-Self-ID"
	selfFromEvent  selfSource = "first event"
	selfFromLogin  selfSource = "get_login_info"
)

// lookupSelf finds the bot's QQ number: from config, else the reverse
// connection's X-Self-ID header, else the self_id of the first event, else
// get_login_info. It returns 0 and an error when none knows it; mention
// triggering cannot work then, which callers must log.
func lookupSelf(ctx context.Context, c caller, configured wire.ID, header string, first *wire.Event) (wire.ID, selfSource, error) {
	if configured > 0 {
		return configured, selfFromConfig, nil
	}
	if n, err := strconv.ParseInt(header, 10, 64); err == nil && n > 0 {
		return wire.ID(n), selfFromHeader, nil
	}
	if first != nil && first.SelfID > 0 {
		return first.SelfID, selfFromEvent, nil
	}
	data, err := c.Call(ctx, "get_login_info", nil, 10*time.Second)
	if err != nil {
		return 0, "", fmt.Errorf("onebot: self id unknown: %w", err)
	}
	var info struct {
		UserID wire.ID `json:"user_id"`
	}
	if err := json.Unmarshal(data, &info); err != nil || info.UserID <= 0 {
		return 0, "", fmt.Errorf("onebot: self id unknown: get_login_info answered %s", data)
	}
	return info.UserID, selfFromLogin, nil
}
