package config

import (
	"errors"
	"fmt"
	"strings"
)

// Commands decides who may run chat commands.
type Commands struct {
	// AllowFrom admits senders to commands: "*", "<channel>:*" or
	// "<channel>:<senderId>". Others' commands are plain text.
	AllowFrom []string `json:"allowFrom"`
	// OwnerAllowFrom admits senders to owner-only commands (/model,
	// /think, /export) as well.
	OwnerAllowFrom []string `json:"ownerAllowFrom"`
	// ElevatedAllowFrom admits senders to /elevate, which unlocks stronger
	// tools for their session. Empty: nobody.
	ElevatedAllowFrom []string `json:"elevatedAllowFrom"`
}

// Validate checks the entries.
func (c Commands) Validate() error {
	var errs []error
	check := func(name string, list []string) {
		for i, e := range list {
			ch, id, ok := strings.Cut(e, ":")
			if e != "*" && (!ok || ch == "" || id == "") {
				errs = append(errs, problem(fmt.Sprintf("%s[%d]", name, i), "want *, <channel>:* or <channel>:<senderId>, got %q", e))
			}
		}
	}
	check("allowFrom", c.AllowFrom)
	check("ownerAllowFrom", c.OwnerAllowFrom)
	check("elevatedAllowFrom", c.ElevatedAllowFrom)
	return errors.Join(errs...)
}
