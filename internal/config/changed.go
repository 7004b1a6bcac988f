package config

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Changed returns the key paths, spelled as in the file
// ("channels.onebot.wsUrl", "channels.onebot.accounts.work.selfId"),
// whose values differ between a and b, sorted: a section's keys one by
// one, a map's entries by their keys (an entry only one side has is its
// own path), anything else, a list included, as one value. Secrets are
// compared by value and never shown.
func Changed(a, b Config) []string {
	var out []string
	changed(reflect.ValueOf(a), reflect.ValueOf(b), "", &out)
	slices.Sort(out)
	return out
}

func changed(a, b reflect.Value, path string, out *[]string) {
	switch a.Kind() {
	case reflect.Struct:
		t := a.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-":
			case name == "" && f.Anonymous:
				changed(a.Field(i), b.Field(i), path, out) // its keys are the section's
			default:
				changed(a.Field(i), b.Field(i), join(path, cmp.Or(name, f.Name)), out)
			}
		}
	case reflect.Map:
		keys := map[string]reflect.Value{}
		for _, m := range []reflect.Value{a, b} {
			for _, k := range m.MapKeys() {
				keys[fmt.Sprint(k.Interface())] = k
			}
		}
		for name, k := range keys {
			av, bv := a.MapIndex(k), b.MapIndex(k)
			if !av.IsValid() || !bv.IsValid() {
				*out = append(*out, join(path, name))
				continue
			}
			changed(av, bv, join(path, name), out)
		}
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				*out = append(*out, path)
			}
			return
		}
		changed(a.Elem(), b.Elem(), path, out)
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			*out = append(*out, path)
		}
	}
}
