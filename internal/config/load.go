package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/titanous/json5"
)

// DefaultFile is the config file picked up from the working directory when
// neither --config nor $PINCER_CONFIG names one.
const DefaultFile = "pincer.json5"

// EnvVar names the environment variable that points at the config file.
const EnvVar = "PINCER_CONFIG"

// Env looks up an environment variable; os.LookupEnv fits.
type Env func(name string) (string, bool)

// Locate returns the config file to load: flagPath when set, else
// $PINCER_CONFIG, else ./pincer.json5 when it exists, else "" for the
// built-in defaults.
func Locate(flagPath string, env Env) (string, error) {
	if flagPath != "" {
		return flagPath, nil
	}
	if p, ok := env(EnvVar); ok && p != "" {
		return p, nil
	}
	switch _, err := os.Stat(DefaultFile); {
	case err == nil:
		return DefaultFile, nil
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	default:
		return "", fmt.Errorf("config: %w", err)
	}
}

// LoadFile reads and parses path; an empty path yields the validated
// defaults. Problems in the file are returned as Parse returns them.
func LoadFile(path string, env Env) (Config, error) {
	if path == "" {
		cfg := Default()
		return cfg, cfg.Validate()
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	// Parse's problems are returned as they are, so Problems can list them;
	// callers name the file.
	return Parse(data, env)
}

// Parse decodes a JSON5 document over the defaults, substitutes ${ENV}
// references, rejects unknown keys and mistyped values, and validates the
// result. The returned error joins every problem found; Problems splits it.
//
// An empty document, or one holding only white space and comments, is an
// empty configuration: the built-in defaults, validated. White space and
// comments may also follow the top-level object; anything else there is a
// syntax error. Syntax errors are *SyntaxError, at a 1-based line and
// column, the column counted in characters.
//
// A value that cannot be decoded (an unknown key, a mistyped value, an
// unset variable) is reported at its key path and leaves that setting at
// its default; the rest of the document is still decoded and validated,
// but problems that follow only from the setting it left at its default
// (a limit compared with it, a provider it should have configured) are not
// reported again.
func Parse(data []byte, env Env) (Config, error) {
	cfg, _, err := parse(data, env, false)
	return cfg, err
}

// Unset lists the settings a lenient load left at their defaults because
// they name an environment variable that is not set, each with that
// problem.
type Unset []*FieldError

// Need returns the problem of the first setting in u at or inside one of
// paths, nil when the settings at paths were all resolved.
func (u Unset) Need(paths ...string) error {
	for _, e := range u {
		for _, p := range paths {
			if within(e.Path, p) {
				return e
			}
		}
	}
	return nil
}

// ParseLenient is Parse for a command that needs only some settings, such
// as the gateway's address and token: a value naming an unset ${VAR} is
// left at its default and listed in the returned Unset instead of failing
// the load, and problems that follow only from it are not reported. The
// caller asks Unset.Need for the settings it uses.
func ParseLenient(data []byte, env Env) (Config, Unset, error) {
	return parse(data, env, true)
}

// LoadFileLenient is LoadFile with ParseLenient.
func LoadFileLenient(path string, env Env) (Config, Unset, error) {
	if path == "" {
		cfg := Default()
		return cfg, nil, cfg.Validate()
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, nil, fmt.Errorf("config: %w", err)
	}
	return ParseLenient(data, env)
}

func parse(data []byte, env Env, lenient bool) (Config, Unset, error) {
	cfg := Default()
	// Editors on Windows may start a UTF-8 file with a byte order mark,
	// which they do not show: it is not part of the first line.
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	switch start, err := skipBlank(data, 0); {
	case err != nil:
		return cfg, nil, err
	case start == len(data):
		return cfg, nil, cfg.Validate()
	}
	r := bytes.NewReader(data)
	dec := json5.NewDecoder(r)
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return cfg, nil, syntaxError(data, err)
	}
	if _, ok := tree.(map[string]any); !ok && tree != nil {
		return cfg, nil, errors.New("the document must be an object")
	}
	// The decoder stops right after the value and keeps what it read
	// beyond it buffered.
	buffered, _ := io.Copy(io.Discard, dec.Buffered())
	switch rest, err := skipBlank(data, len(data)-r.Len()-int(buffered)); {
	case err != nil:
		return cfg, nil, err
	case rest < len(data):
		return cfg, nil, syntaxAt(data, rest, "content after the top-level object", nil)
	}
	if tree == nil {
		return cfg, nil, cfg.Validate()
	}
	w := walker{env: env, lenient: lenient}
	tree = w.value(tree, reflect.TypeFor[Config](), false, "")
	raw, err := json.Marshal(tree)
	if err != nil {
		return cfg, w.unset, fmt.Errorf("re-encode: %w", err)
	}
	// The walk left out every value the decoder would refuse, so this
	// fails only on a setting type the walk does not know.
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return cfg, w.unset, errors.Join(append(w.errs, fmt.Errorf("decode: %w", err))...)
	}
	errs := w.errs
	for _, e := range Problems(cfg.Validate()) {
		if fe, ok := e.(*FieldError); ok && fe.follows(w.skipped) {
			continue
		}
		errs = append(errs, e)
	}
	if len(errs) > 0 {
		return cfg, w.unset, errors.Join(sortProblems(errs)...)
	}
	return cfg, w.unset, nil
}

// skipBlank returns the offset of the first byte from off on that is
// neither white space nor in a comment, len(data) when there is none.
func skipBlank(data []byte, off int) (int, error) {
	for off < len(data) {
		rest := data[off:]
		switch {
		case bytes.IndexByte([]byte(" \t\r\n\f"), rest[0]) >= 0:
			off++
		case bytes.HasPrefix(rest, []byte("//")):
			end := bytes.IndexAny(rest, "\r\n")
			if end < 0 {
				return len(data), nil
			}
			off += end
		case bytes.HasPrefix(rest, []byte("/*")):
			end := bytes.Index(rest[2:], []byte("*/"))
			if end < 0 {
				return off, syntaxAt(data, off, "unterminated comment", nil)
			}
			off += 2 + end + 2
		default:
			return off, nil
		}
	}
	return off, nil
}

// walker prepares a decoded JSON5 tree for encoding/json: it substitutes
// ${ENV} references, rewrites JSON5 numbers as plain JSON and checks every
// value against the Go type it will be decoded into. Unknown keys and
// values that cannot be decoded are recorded as problems with their paths
// and left out of the tree, so that decoding never stops part-way.
type walker struct {
	env  Env
	errs []error
	// lenient leaves a value naming an unset variable at its default,
	// listed in unset rather than in errs.
	lenient bool
	unset   Unset
	// skipped lists the key paths whose values were left out, so their
	// settings keep the default.
	skipped []string
}

// skip records a problem with the value at path and returns nil, which
// leaves the default in place.
func (w *walker) skip(path, format string, args ...any) any {
	w.errs = append(w.errs, problem(path, format, args...))
	w.skipped = append(w.skipped, path)
	return nil
}

// value returns v ready to be decoded into a t, or nil when it cannot be.
// intString lets a string setting be written as an integer too (the tag
// config:"intstring"); the integer is passed on as its decimal text.
func (w *walker) value(v any, t reflect.Type, intString bool, path string) any {
	switch x := v.(type) {
	case nil:
		return nil // null leaves the default in place
	case json5.Number:
		n, err := decimal(x)
		if err != nil {
			return w.skip(path, "%v", err)
		}
		v = n
	case string:
		s, err := expand(x, w.env)
		if _, unset := errors.AsType[*unsetVarError](err); unset && w.lenient {
			w.unset = append(w.unset, &FieldError{Path: path, Msg: err.Error()})
			w.skipped = append(w.skipped, path)
			return nil
		}
		if err != nil {
			return w.skip(path, "%v", err)
		}
		v = s
	}
	mistyped := func(want string) any { return w.skip(path, "want %s, got %s", want, describe(v)) }
	switch t.Kind() {
	case reflect.String:
		switch x := v.(type) {
		case string:
		case json.Number:
			if !intString {
				return mistyped("a string")
			}
			if _, err := strconv.ParseInt(x.String(), 10, 64); err != nil {
				return mistyped("an integer or a string")
			}
			return x.String()
		default:
			if intString {
				return mistyped("an integer or a string")
			}
			return mistyped("a string")
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return mistyped("true or false")
		}
	case reflect.Int, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return mistyped("an integer")
		}
		if _, err := strconv.ParseInt(n.String(), 10, 64); err != nil {
			return mistyped("an integer")
		}
	case reflect.Float64:
		if _, ok := v.(json.Number); !ok {
			return mistyped("a number")
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			return mistyped("an array")
		}
		for i, e := range arr {
			// null keeps the index, so later problems keep their paths.
			arr[i] = w.value(e, t.Elem(), false, path+"["+strconv.Itoa(i)+"]")
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return mistyped("an object")
		}
		for k, e := range obj {
			// null keeps the key: a provider whose settings are mistyped
			// is still configured.
			obj[k] = w.value(e, t.Elem(), false, join(path, k))
		}
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return mistyped("an object")
		}
		fields := jsonFields(t)
		for k, e := range obj {
			f, known := fields[k]
			if !known {
				w.unknown(t, path, k, fields)
				delete(obj, k)
				continue
			}
			if e = w.value(e, f.Type, f.Tag.Get("config") == "intstring", join(path, k)); e == nil {
				delete(obj, k)
			} else {
				obj[k] = e
			}
		}
	default:
		return w.skip(path, "internal: unsupported setting type %s", t)
	}
	return v
}

// unknown records the unknown key k of the object at path. The key it was
// probably meant to be counts as left out too: the settings that key
// would have changed keep their defaults.
func (w *walker) unknown(t reflect.Type, path, k string, fields map[string]reflect.StructField) {
	hint := suggest(k, fields)
	if h, ok := reflect.Zero(t).Interface().(hinter); ok && hint == "" {
		hint = h.unknownHint(k)
	}
	w.skip(join(path, k), "unknown key%s", hint)
	if name := closest(k, fields); name != "" {
		w.skipped = append(w.skipped, join(path, name))
	}
}

// unsetVarError is expand's error for a ${VAR} without a fallback whose
// variable is not set.
type unsetVarError struct{ name string }

func (e *unsetVarError) Error() string {
	return "environment variable " + e.name + " is not set"
}

// expand substitutes the ${VAR} and ${VAR:-fallback} references in s; $${
// is a literal ${.
func expand(s string, env Env) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' {
			b.WriteString(s[:i-1] + "${")
			s = s[i+2:]
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated ${ in %q", s)
		}
		name, fallback, hasFallback := strings.Cut(s[i+2:i+end], ":-")
		if !validEnvName(name) {
			return "", fmt.Errorf("invalid environment variable name %q", name)
		}
		val, ok := env(name)
		if !ok {
			if !hasFallback {
				return "", &unsetVarError{name: name}
			}
			val = fallback
		}
		b.WriteString(s[:i] + val)
		s = s[i+end+1:]
	}
}

// decimal rewrites a JSON5 number (hex, leading '+', Infinity) as a plain
// JSON number.
func decimal(n json5.Number) (json.Number, error) {
	s := strings.TrimPrefix(n.String(), "+")
	if i, err := strconv.ParseInt(s, 0, 64); err == nil {
		return json.Number(strconv.FormatInt(i, 10)), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "0", fmt.Errorf("number %s is out of range", n)
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// jsonFields maps a struct's JSON keys to their fields.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := make(map[string]reflect.StructField, t.NumField())
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			maps.Copy(out, jsonFields(f.Type)) // embedded: its keys are ours
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f
	}
	return out
}

// suggest names a known key that differs from k only by case or by a
// small edit, to catch typos such as "realtim".
func suggest(k string, fields map[string]reflect.StructField) string {
	if name := closest(k, fields); name != "" {
		return fmt.Sprintf(" (did you mean %q?)", name)
	}
	return ""
}

// closest returns the known key that differs from k only by case or by at
// most two edits, or "".
func closest(k string, fields map[string]reflect.StructField) string {
	best, bestDist := "", 3
	for name := range fields {
		if strings.EqualFold(name, k) {
			return name
		}
		if d := editDistance(strings.ToLower(k), strings.ToLower(name)); d < bestDist || (d == bestDist && name < best) {
			best, bestDist = name, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func describe(v any) string {
	switch t := v.(type) {
	case string:
		return "a string"
	case bool:
		return strconv.FormatBool(t)
	case json.Number:
		return "the number " + t.String()
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
