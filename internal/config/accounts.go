package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// decodeAccounts decodes a channel section whose top-level keys are its
// default account (into def) and whose accounts.<id> each start from
// inherit(id), the default account's settings as named accounts take
// them.
func decodeAccounts[A any](b []byte, def *A, named *map[string]A, inherit func(id string) A) error {
	var top struct {
		Accounts map[string]json.RawMessage `json:"accounts"`
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return err
	}
	if err := json.Unmarshal(b, def); err != nil {
		return err
	}
	if *named == nil {
		*named = map[string]A{}
	}
	for id, raw := range top.Accounts {
		a := inherit(id)
		if err := json.Unmarshal(raw, &a); err != nil {
			return fmt.Errorf("accounts.%s: %w", id, err)
		}
		(*named)[id] = a
	}
	return nil
}

// allAccounts returns every account of a channel by id, the top-level one
// as "default".
func allAccounts[A any](def A, named map[string]A) map[string]A {
	out := maps.Clone(named)
	if out == nil {
		out = map[string]A{}
	}
	out["default"] = def
	return out
}

// receiveWarnings lists the skipped receive settings of every account,
// with their key paths under section.
func receiveWarnings[A any](section string, all map[string]A, receive func(A) Receive) []string {
	var out []string
	eachAccount(section, all, func(prefix string, a A) {
		for _, w := range receive(a).Warnings() {
			out = append(out, prefix+w)
		}
	})
	return out
}

// eachAccount calls f with each account of all, in id order, and the
// prefix of its keys under section: "<section>." for the default account,
// "<section>.accounts.<id>." for the others.
func eachAccount[A any](section string, all map[string]A, f func(prefix string, a A)) {
	for _, id := range slices.Sorted(maps.Keys(all)) {
		prefix := section + "."
		if id != "default" {
			prefix += "accounts." + id + "."
		}
		f(prefix, all[id])
	}
}

// cloned returns r with its lists copied, so an account that inherits it
// can change them without changing the account it came from.
func (r Receive) cloned() Receive {
	r.Mention.Keywords = slices.Clone(r.Mention.Keywords)
	r.Digest.Peers = slices.Clone(r.Digest.Peers)
	r.Summary.Commands = slices.Clone(r.Summary.Commands)
	r.Summary.Peers = slices.Clone(r.Summary.Peers)
	return r
}

// Clone returns r with its lists copied, for a layer that changes them.
func (r Receive) Clone() Receive { return r.cloned() }
