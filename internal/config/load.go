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
func Parse(data []byte, env Env) (Config, error) {
	cfg := Default()
	dec := json5.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return cfg, syntaxError(data, err)
	}
	if err := dec.Decode(new(any)); !errors.Is(err, io.EOF) {
		return cfg, errors.New("syntax error: content after the top-level object")
	}
	if tree == nil {
		return cfg, cfg.Validate()
	}
	if _, ok := tree.(map[string]any); !ok {
		return cfg, errors.New("the document must be an object")
	}
	var errs []error
	tree = substitute(tree, "", env, &errs)
	check(tree, reflect.TypeFor[Config](), "", &errs)
	raw, err := json.Marshal(tree)
	if err != nil {
		return cfg, fmt.Errorf("re-encode: %w", err)
	}
	// Unknown keys are ignored and mistyped values were reported above, so
	// decoding goes on to validate everything else too.
	if err := json.Unmarshal(raw, &cfg); err != nil && len(errs) == 0 {
		return cfg, fmt.Errorf("decode: %w", err)
	}
	reported := map[string]bool{}
	for _, e := range errs {
		if fe, ok := e.(*FieldError); ok {
			reported[fe.Path] = true
		}
	}
	for _, e := range Problems(cfg.Validate()) {
		// A value already reported as mistyped was not decoded; its
		// validation problem would only repeat that.
		if fe, ok := e.(*FieldError); ok && reported[fe.Path] {
			continue
		}
		errs = append(errs, e)
	}
	if len(errs) > 0 {
		return cfg, errors.Join(sortProblems(errs)...)
	}
	return cfg, nil
}

func syntaxError(data []byte, err error) error {
	var se *json5.SyntaxError
	if !errors.As(err, &se) {
		return fmt.Errorf("syntax: %w", err)
	}
	off := min(int(se.Offset), len(data))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Errorf("syntax error at line %d, column %d: %w", line, col, err)
}

// substitute replaces ${NAME} in every string value. ${NAME:-text} uses
// text when NAME is unset; "$${" is a literal "${".
func substitute(v any, path string, env Env, errs *[]error) any {
	switch t := v.(type) {
	case json5.Number:
		n, err := decimal(t)
		if err != nil {
			*errs = append(*errs, &FieldError{Path: path, Msg: err.Error()})
		}
		return n
	case string:
		s, err := expand(t, env)
		if err != nil {
			*errs = append(*errs, &FieldError{Path: path, Msg: err.Error()})
		}
		return s
	case map[string]any:
		for k, child := range t {
			t[k] = substitute(child, join(path, k), env, errs)
		}
	case []any:
		for i, child := range t {
			t[i] = substitute(child, path+"["+strconv.Itoa(i)+"]", env, errs)
		}
	}
	return v
}

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
				return "", fmt.Errorf("environment variable %s is not set", name)
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

// check walks a decoded JSON5 tree against the Go type it will be decoded
// into, recording unknown keys and mistyped values with their paths.
func check(v any, t reflect.Type, path string, errs *[]error) {
	if v == nil {
		return // null leaves the default in place
	}
	bad := func(want string) {
		*errs = append(*errs, &FieldError{Path: path, Msg: fmt.Sprintf("want %s, got %s", want, describe(v))})
	}
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); !ok {
			bad("a string")
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			bad("true or false")
		}
	case reflect.Int, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			bad("an integer")
			return
		}
		if _, err := strconv.ParseInt(n.String(), 10, 64); err != nil {
			bad("an integer")
		}
	case reflect.Float64:
		if _, ok := v.(json.Number); !ok {
			bad("a number")
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			bad("an array")
			return
		}
		for i, e := range arr {
			check(e, t.Elem(), path+"["+strconv.Itoa(i)+"]", errs)
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			bad("an object")
			return
		}
		for k, e := range obj {
			check(e, t.Elem(), join(path, k), errs)
		}
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			bad("an object")
			return
		}
		fields := jsonFields(t)
		for k, e := range obj {
			ft, known := fields[k]
			if !known {
				*errs = append(*errs, &FieldError{Path: join(path, k), Msg: "unknown key" + suggest(k, fields)})
				continue
			}
			check(e, ft, join(path, k), errs)
		}
	default:
		*errs = append(*errs, &FieldError{Path: path, Msg: "internal: unsupported setting type " + t.String()})
	}
}

// jsonFields maps a struct's JSON keys to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := make(map[string]reflect.Type, t.NumField())
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
		out[name] = f.Type
	}
	return out
}

// suggest names a known key that differs from k only by case or by a
// small edit, to catch typos such as "realtim".
func suggest(k string, fields map[string]reflect.Type) string {
	best, bestDist := "", 3
	for name := range fields {
		if strings.EqualFold(name, k) {
			return fmt.Sprintf(" (did you mean %q?)", name)
		}
		if d := editDistance(strings.ToLower(k), strings.ToLower(name)); d < bestDist || (d == bestDist && name < best) {
			best, bestDist = name, d
		}
	}
	if best == "" || bestDist > 2 {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
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
