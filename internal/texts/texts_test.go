package texts

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// declaredKeys lists the Key constants declared in keys.go.
func declaredKeys(t *testing.T) []Key {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "keys.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var keys []Key
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Key" {
				t.Errorf("constant %s in keys.go is not a Key", v.Names[0])
				continue
			}
			for _, val := range v.Values {
				lit, ok := val.(*ast.BasicLit)
				if !ok {
					t.Fatalf("key %s is not a string literal", v.Names[0])
				}
				keys = append(keys, Key(strings.Trim(lit.Value, `"`)))
			}
		}
	}
	return keys
}

// TestTablesHoldTheSameKeys: every declared key has a text in every
// locale, and no table holds a text no key names.
func TestTablesHoldTheSameKeys(t *testing.T) {
	keys := declaredKeys(t)
	if len(keys) == 0 {
		t.Fatal("no keys found in keys.go")
	}
	seen := map[Key]bool{}
	for _, k := range keys {
		if seen[k] {
			t.Errorf("key %q is declared twice", k)
		}
		seen[k] = true
	}
	for _, l := range Locales() {
		table := tables[l]
		for _, k := range keys {
			if strings.TrimSpace(table[k]) == "" {
				t.Errorf("%s: no text for %q", l, k)
			}
		}
		for k := range table {
			if !seen[k] {
				t.Errorf("%s: text for %q, which no key names", l, k)
			}
		}
	}
}

// verbs matches fmt's verbs, with their flags, width, precision and
// argument index.
var verbs = regexp.MustCompile(`%(\[\d+\])?[-+# 0]*\d*(\.\d+)?[a-zA-Z%]`)

// args lists what a format consumes: its verbs by argument index, so that
// a locale may take the arguments in another order.
func args(format string) []string {
	var out []string
	next := 1
	for _, v := range verbs.FindAllStringSubmatch(format, -1) {
		if strings.HasSuffix(v[0], "%%") {
			continue
		}
		idx := next
		if v[1] != "" {
			idx, _ = strconv.Atoi(strings.Trim(v[1], "[]")) // the pattern holds digits only
		}
		out = append(out, strconv.Itoa(idx)+v[0][len(v[0])-1:])
		next = idx + 1
	}
	slices.Sort(out)
	return out
}

// TestTablesTakeTheSameArguments: a text formats the same arguments in
// every locale.
func TestTablesTakeTheSameArguments(t *testing.T) {
	for k, want := range tables[Default] {
		for _, l := range Locales() {
			if got := args(tables[l][k]); !slices.Equal(got, args(want)) {
				t.Errorf("%q takes %v in %s and %v in %s", k, got, l, args(want), Default)
			}
		}
	}
}

func TestArgsReadIndexedVerbs(t *testing.T) {
	if got, want := args("%[3]d of %[1]s, %d%%"), []string{"1s", "2d", "3d"}; !slices.Equal(got, want) {
		t.Errorf("args = %v, want %v", got, want)
	}
}

func TestZeroLocaleIsChinese(t *testing.T) {
	var l Locale
	if got, want := l.Text(Stopped), zh[Stopped]; got != want {
		t.Errorf("zero locale: %q, want %q", got, want)
	}
	if l.Tag() != "zh-CN" || EN.Tag() != "en" || Locale("fr").Tag() != "zh-CN" {
		t.Errorf("tags: %q %q %q", l.Tag(), EN.Tag(), Locale("fr").Tag())
	}
	if Locale("").Valid() || !EN.Valid() || !ZhCN.Valid() {
		t.Error("Valid")
	}
}

func TestJSONNamesTheTextsByKey(t *testing.T) {
	if got, want := EN.JSON(Stopped, DashLive), `{"dashboard.live":"live","stop.done":"Stopped."}`; got != want {
		t.Errorf("JSON = %s, want %s", got, want)
	}
}
