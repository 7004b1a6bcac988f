package config

import (
	"bytes"
	"os"
	"reflect"
	"testing"

	"github.com/titanous/json5"
)

func writeFile(name, s string) error { return os.WriteFile(name, []byte(s), 0o600) }

func mustTree(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var tree map[string]any
	if err := json5.NewDecoder(bytes.NewReader(data)).Decode(&tree); err != nil {
		t.Fatal(err)
	}
	return tree
}

// leafPaths lists the dotted key paths of every settable leaf of t; maps
// contribute "*" as their key.
func leafPaths(t reflect.Type, prefix string) []string {
	var out []string
	for name, f := range jsonFields(t) {
		p, ft := join(prefix, name), f.Type
		switch {
		case ft.Kind() == reflect.Struct:
			out = append(out, leafPaths(ft, p)...)
		case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
			if embeds(t, ft.Elem()) {
				continue // named accounts take the same keys as the parent
			}
			if (name == "direct" || ft.Elem() == reflect.TypeFor[Chat]()) && (ft.Elem() == reflect.TypeFor[Chat]() || ft.Elem() == reflect.TypeFor[OneBotChat]()) {
				continue // chat entries are shown once, under channels.onebot.groups
			}
			out = append(out, leafPaths(ft.Elem(), p+".*")...)
		default:
			out = append(out, p)
		}
	}
	return out
}

func hasPath(tree map[string]any, parts []string) bool {
	if len(parts) == 0 {
		return true
	}
	if parts[0] == "*" {
		for _, v := range tree {
			if sub, ok := v.(map[string]any); ok && hasPath(sub, parts[1:]) {
				return true
			}
		}
		return false
	}
	v, ok := tree[parts[0]]
	if !ok {
		return false
	}
	if len(parts) == 1 {
		return true
	}
	sub, ok := v.(map[string]any)
	return ok && hasPath(sub, parts[1:])
}

// embeds reports whether struct t embeds e.
func embeds(t, e reflect.Type) bool {
	for f := range t.Fields() {
		if f.Anonymous && f.Type == e {
			return true
		}
	}
	return false
}
