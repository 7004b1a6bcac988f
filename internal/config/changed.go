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
// own path; an entry whose keys are equal but which differs otherwise, as
// a chat entry that now sets a key to the value it had, is its own path
// too), anything else, a list included, as one value. Secrets are
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
			switch key, inline := fieldKey(t.Field(i)); {
			case inline:
				changed(a.Field(i), b.Field(i), path, out) // its keys are the section's
			case key != "":
				changed(a.Field(i), b.Field(i), join(path, key), out)
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
			n := len(*out)
			changed(av, bv, join(path, name), out)
			if len(*out) == n && !reflect.DeepEqual(av.Interface(), bv.Interface()) {
				// Equal keys, yet not equal: a chat entry that set a key to
				// the value it had by default, or stopped setting it.
				*out = append(*out, join(path, name))
			}
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

// Take sets the value at path in dst (a path Changed returned) to src's:
// a key of a section, or a map's entry, which is removed from dst when
// src has none. A path that names nothing is an error.
func Take(dst *Config, src Config, path string) error {
	return take(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src), strings.Split(path, "."), path)
}

func take(dst, src reflect.Value, keys []string, path string) error {
	if len(keys) == 0 {
		dst.Set(src)
		return nil
	}
	switch dst.Kind() {
	case reflect.Struct:
		t := dst.Type()
		for i := range t.NumField() {
			switch key, inline := fieldKey(t.Field(i)); {
			case inline && hasKey(t.Field(i).Type, keys[0]):
				return take(dst.Field(i), src.Field(i), keys, path)
			case key == keys[0]:
				return take(dst.Field(i), src.Field(i), keys[1:], path)
			}
		}
	case reflect.Map:
		k := reflect.ValueOf(keys[0]).Convert(dst.Type().Key())
		sv := src.MapIndex(k)
		if len(keys) == 1 {
			switch {
			case !sv.IsValid():
				if !dst.IsNil() {
					dst.SetMapIndex(k, reflect.Value{})
				}
			default:
				if dst.IsNil() {
					dst.Set(reflect.MakeMap(dst.Type()))
				}
				dst.SetMapIndex(k, sv)
			}
			return nil
		}
		dv := dst.MapIndex(k)
		if !sv.IsValid() || !dv.IsValid() {
			return fmt.Errorf("config: %s: no such entry", path)
		}
		// Map values cannot be set in place: change a copy, put it back.
		cp := reflect.New(dv.Type()).Elem()
		cp.Set(dv)
		if err := take(cp, sv, keys[1:], path); err != nil {
			return err
		}
		dst.SetMapIndex(k, cp)
		return nil
	case reflect.Pointer:
		if dst.IsNil() || src.IsNil() {
			dst.Set(src)
			return nil
		}
		return take(dst.Elem(), src.Elem(), keys, path)
	}
	return fmt.Errorf("config: %s: no such key", path)
}

// hasKey reports whether struct type t has a field whose key is key,
// inline embedded structs included.
func hasKey(t reflect.Type, key string) bool {
	for f := range t.Fields() {
		if k, inline := fieldKey(f); inline && hasKey(f.Type, key) || k == key {
			return true
		}
	}
	return false
}

// fieldKey is the key of a struct field in the file, as encoding/json
// names it: "" for a field that has none (unexported, or "-"), and inline
// for an embedded struct without a name, whose keys are its parent's.
func fieldKey(f reflect.StructField) (key string, inline bool) {
	if !f.IsExported() {
		return "", false
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch {
	case name == "-":
		return "", false
	case name == "" && f.Anonymous:
		return "", true
	}
	return cmp.Or(name, f.Name), false
}
