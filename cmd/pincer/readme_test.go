package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The READMEs, English and Chinese, which name the same commands.
var readmes = []string{"README.md", "README.zh-CN.md"}

// The build and test commands both READMEs give; .ci/run runs the test
// command.
const (
	readmeBuild = "CGO_ENABLED=0 go build -o pincer ./cmd/pincer"
	readmeTest  = "go test -race ./..."
)

// repoRoot is the repository's root, seen from this package.
var repoRoot = filepath.Join("..", "..")

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadmeSaysHowToInstall: each README tells a new user how to get the
// binary, with the module path and Go version of go.mod, and keeps its
// quick-start and test commands.
func TestReadmeSaysHowToInstall(t *testing.T) {
	mod := readRepoFile(t, "go.mod")
	var module, goVersion string
	for line := range strings.Lines(mod) {
		if rest, ok := strings.CutPrefix(line, "module "); ok {
			module = strings.TrimSpace(rest)
		}
		if rest, ok := strings.CutPrefix(line, "go "); ok {
			goVersion = strings.TrimSpace(rest)
		}
	}
	if module == "" || goVersion == "" {
		t.Fatalf("go.mod without module or go line:\n%s", mod)
	}
	for _, name := range readmes {
		// A line break inside a sentence or a code span reads as a space.
		text := strings.Join(strings.Fields(readRepoFile(t, name)), " ")
		for _, want := range []string{
			"go install " + module + "/cmd/pincer@latest",
			"go build -o pincer ./cmd/pincer",
			"Go " + goVersion,
			"CGO_ENABLED=0 go run ./cmd/pincer serve",
			"go test -race ./...",
			"LICENSE",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("%s does not say %q", name, want)
			}
		}
	}
}

// TestReadmesNameTheSameCommands: the commands of the English README's sh
// blocks are those of the Chinese one's, comments aside.
func TestReadmesNameTheSameCommands(t *testing.T) {
	en := shellCommands(readRepoFile(t, readmes[0]))
	zh := shellCommands(readRepoFile(t, readmes[1]))
	if len(en) == 0 {
		t.Fatalf("%s has no commands in sh blocks", readmes[0])
	}
	for _, p := range commandDifferences(readmes[0], en, readmes[1], zh) {
		t.Error(p)
	}
}

// TestReadmeBuildAndTestCommands: both READMEs build with readmeBuild and
// test with readmeTest, each a command of an sh block of its own line.
func TestReadmeBuildAndTestCommands(t *testing.T) {
	for _, name := range readmes {
		for _, p := range missingCommands(name, shellCommands(readRepoFile(t, name)), readmeBuild, readmeTest) {
			t.Error(p)
		}
	}
	ci := readRepoFile(t, filepath.Join(".ci", "run"))
	if !slices.Contains(strings.Split(ci, "\n"), readmeTest) {
		t.Errorf(".ci/run does not run the README's test command %q", readmeTest)
	}
}

// TestReadmesLinkEachOther: each README links the other from its top,
// before its first section.
func TestReadmesLinkEachOther(t *testing.T) {
	for i, name := range readmes {
		other := readmes[1-i]
		if p := linksAtTop(name, readRepoFile(t, name), other); p != "" {
			t.Error(p)
		}
	}
}

// TestReadmeLinksResolve: every relative link of the READMEs and of
// docs/*.md names a file that exists, and its #anchor a heading of it.
func TestReadmeLinksResolve(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no docs/*.md")
	}
	files := slices.Clone(readmes)
	for _, d := range docs {
		files = append(files, filepath.Join("docs", filepath.Base(d)))
	}
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(repoRoot, name))
		return string(b), err
	}
	for _, name := range files {
		for _, p := range brokenLinks(name, readRepoFile(t, name), read) {
			t.Error(p)
		}
	}
}

// TestReadmeCheckersCatch: each check above fails on a text that breaks
// its rule.
func TestReadmeCheckersCatch(t *testing.T) {
	en := shellCommands("```sh\n./pincer serve   # run\n./pincer a \\\n    --b c\n```\n```json5\n{ x: 1 }\n```\n")
	if want := []string{"./pincer serve", "./pincer a --b c"}; !slices.Equal(en, want) {
		t.Errorf("shellCommands = %q, want %q", en, want)
	}
	zh := shellCommands("```sh\n./pincer serve   # 运行\n./pincer a --b d\n```\n")
	if p := commandDifferences("en", en, "zh", zh); len(p) != 2 ||
		!strings.Contains(p[0], "./pincer a --b c") || !strings.Contains(p[1], "./pincer a --b d") {
		t.Errorf("commandDifferences missed a command in one README only: %q", p)
	}
	if p := commandDifferences("en", en, "zh", en); len(p) != 0 {
		t.Errorf("commandDifferences of the same commands: %q", p)
	}
	if p := missingCommands("x", []string{"go build -o pincer ./cmd/pincer", "go test ./..."}, readmeBuild, readmeTest); len(p) != 2 {
		t.Errorf("missingCommands missed a changed build or test command: %q", p)
	}
	if p := linksAtTop("a.md", "# a\n\n## Get it\n\n[b](b.md)\n", "b.md"); p == "" {
		t.Error("linksAtTop took a link below the first section")
	}
	if p := linksAtTop("a.md", "# a\n\n[b](b.md)\n\n## Get it\n", "b.md"); p != "" {
		t.Errorf("linksAtTop: %s", p)
	}
	files := map[string]string{
		"docs/x.md": "# X in full\n\n## Nothing lost, nothing twice\n\n## Feishu / Lark\n\n## `pincer trace` 用法\n",
		"LICENSE":   "text",
	}
	read := func(name string) (string, error) {
		if s, ok := files[filepath.ToSlash(name)]; ok {
			return s, nil
		}
		return "", os.ErrNotExist
	}
	good := "[a](docs/x.md) [b](docs/x.md#nothing-lost-nothing-twice) [c](docs/x.md#feishu--lark) " +
		"[d](docs/x.md#pincer-trace-用法) [e](LICENSE) [f](#top) <https://example.com> [g](https://example.com/x#y)\n\n# Top\n" +
		"`[h](nowhere.md)`\n```\n[i](nowhere.md)\n```\n"
	if p := brokenLinks("README.md", good, read); len(p) != 0 {
		t.Errorf("brokenLinks on good links: %q", p)
	}
	for _, bad := range []string{
		"[a](docs/y.md)",
		"[a](docs/x.md#nothing-lost)",
		"[a](docs/x.md#feishu-lark)",
		"[a](#nowhere)",
		"[a](../LICENSE)",
	} {
		if p := brokenLinks("README.md", bad, read); len(p) != 1 {
			t.Errorf("brokenLinks(%q) = %q, want one problem", bad, p)
		}
	}
	if p := brokenLinks("docs/z.md", "[a](../LICENSE) [b](x.md#x-in-full)", read); len(p) != 0 {
		t.Errorf("brokenLinks from docs/: %q", p)
	}
}

// shellCommands returns the commands of md's ```sh blocks in order: lines
// continued with a backslash joined, comments and blank lines dropped,
// blanks collapsed.
func shellCommands(md string) []string {
	var cmds []string
	inSh, inOther := false, false
	cont := ""
	for line := range strings.Lines(md) {
		line = strings.TrimRight(line, "\r\n")
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			switch {
			case inSh:
				inSh = false
			case inOther:
				inOther = false
			case strings.TrimSpace(strings.TrimPrefix(trimmed, "```")) == "sh":
				inSh = true
			default:
				inOther = true
			}
			continue
		}
		if !inSh {
			continue
		}
		line = cont + stripShellComment(line)
		cont = ""
		if rest, ok := strings.CutSuffix(strings.TrimRight(line, " \t"), "\\"); ok {
			cont = rest + " "
			continue
		}
		if cmd := strings.Join(strings.Fields(line), " "); cmd != "" {
			cmds = append(cmds, cmd)
		}
	}
	return cmds
}

// stripShellComment cuts a shell line at a # that starts a word outside
// quotes.
func stripShellComment(line string) string {
	var quote rune
	prev := ' '
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && unicode.IsSpace(prev):
			return line[:i]
		}
		prev = r
	}
	return line
}

// commandDifferences names each command one list has and the other lacks.
func commandDifferences(aName string, a []string, bName string, b []string) []string {
	var problems []string
	for _, c := range a {
		if !slices.Contains(b, c) {
			problems = append(problems, aName+" names the command `"+c+"`, "+bName+" does not")
		}
	}
	for _, c := range b {
		if !slices.Contains(a, c) {
			problems = append(problems, bName+" names the command `"+c+"`, "+aName+" does not")
		}
	}
	return problems
}

// missingCommands names each wanted command that cmds lacks.
func missingCommands(name string, cmds []string, want ...string) []string {
	var problems []string
	for _, w := range want {
		if !slices.Contains(cmds, w) {
			problems = append(problems, name+" does not give the command `"+w+"` in an sh block")
		}
	}
	return problems
}

// linksAtTop says what is wrong when md does not link target before its
// first section heading.
func linksAtTop(name, md, target string) string {
	top := md
	if i := strings.Index(md, "\n## "); i >= 0 {
		top = md[:i]
	}
	for _, l := range markdownLinks(top) {
		if l == target {
			return ""
		}
	}
	return name + " does not link " + target + " at its top"
}

var (
	inlineLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan   = regexp.MustCompile("`[^`\n]*`")
)

// markdownLinks returns the targets of md's inline links, outside code.
func markdownLinks(md string) []string {
	var links []string
	for _, line := range proseLines(md) {
		for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, "``"), -1) {
			links = append(links, m[1])
		}
	}
	return links
}

// proseLines returns md's lines outside fenced code blocks.
func proseLines(md string) []string {
	var lines []string
	fenced := false
	for line := range strings.Lines(md) {
		line = strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			lines = append(lines, line)
		}
	}
	return lines
}

// brokenLinks names each relative link of the file name (md) whose file
// does not exist, or whose #anchor is no heading of it. read reads a file
// by its path from the repository's root.
func brokenLinks(name, md string, read func(string) (string, error)) []string {
	var problems []string
	for _, link := range markdownLinks(md) {
		if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
			continue
		}
		path, anchor, _ := strings.Cut(link, "#")
		target := name
		if path != "" {
			target = filepath.Clean(filepath.Join(filepath.Dir(name), path))
		}
		if strings.HasPrefix(filepath.ToSlash(target), "../") {
			problems = append(problems, name+": link "+link+" leaves the repository")
			continue
		}
		text, err := md, error(nil)
		if path != "" {
			text, err = read(target)
		}
		if err != nil {
			// A directory is a target too.
			if fi, serr := os.Stat(filepath.Join(repoRoot, target)); serr != nil || !fi.IsDir() || anchor != "" {
				problems = append(problems, name+": link "+link+": no file "+filepath.ToSlash(target))
			}
			continue
		}
		if anchor != "" && !slices.Contains(headingAnchors(text), anchor) {
			problems = append(problems, name+": link "+link+": "+filepath.ToSlash(target)+" has no heading #"+anchor)
		}
	}
	return problems
}

var headingLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// headingAnchors returns the anchors GitHub gives md's headings: the text
// in lower case, spaces as hyphens, other punctuation dropped, and -1,
// -2, … after a repeated one.
func headingAnchors(md string) []string {
	var anchors []string
	seen := map[string]int{}
	for _, line := range proseLines(md) {
		trimmed := strings.TrimLeft(line, "#")
		if trimmed == line || len(line)-len(trimmed) > 6 || (trimmed != "" && trimmed[0] != ' ') {
			continue
		}
		text := headingLink.ReplaceAllString(strings.TrimSpace(strings.TrimRight(trimmed, "# ")), "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsNumber(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a]++
			a += "-" + strconv.Itoa(n)
		} else {
			seen[a] = 1
		}
		anchors = append(anchors, a)
	}
	return anchors
}
