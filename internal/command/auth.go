package command

import "strings"

// Policy decides who may run commands, in two layers: AllowFrom admits a
// sender to commands at all; OwnerAllowFrom admits one to owner-only
// commands too. Entries are "*", "<channel>:*" or "<channel>:<senderId>".
type Policy struct {
	AllowFrom      []string
	OwnerAllowFrom []string
}

// Authorized reports whether the sender may run commands.
func (p Policy) Authorized(channel, sender string) bool {
	return matches(p.AllowFrom, channel, sender) || p.Owner(channel, sender)
}

// Owner reports whether the sender may run owner-only commands.
func (p Policy) Owner(channel, sender string) bool {
	return matches(p.OwnerAllowFrom, channel, sender)
}

// May reports whether the sender may run s.
func (p Policy) May(s *Spec, channel, sender string) bool {
	if s.OwnerOnly {
		return p.Owner(channel, sender)
	}
	return p.Authorized(channel, sender)
}

func matches(list []string, channel, sender string) bool {
	if sender == "" {
		return false
	}
	for _, e := range list {
		if e == "*" {
			return true
		}
		ch, id, ok := strings.Cut(e, ":")
		if ok && strings.EqualFold(ch, channel) && (id == "*" || id == sender) {
			return true
		}
	}
	return false
}
