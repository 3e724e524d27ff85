package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// repoRoot walks up from the package directory to the directory holding go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// markdownFiles are the documents a reader of a clone follows links in.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.md", "docs/*.md", "bench/*.md", "examples/*.md", "examples/*/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal("no markdown files found")
	}
	return files
}

var (
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refDef     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// doc is one parsed markdown file: its link targets with line numbers, and its anchors.
type doc struct {
	links   []link
	anchors []string
}

type link struct {
	line   int
	target string
}

// parse reads links and headings outside fenced code blocks and code spans.
func parse(text string) doc {
	var d doc
	seen := map[string]int{}
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		if strings.HasPrefix(line, "#") {
			title := strings.TrimSpace(strings.TrimLeft(line, "#"))
			a := slug(title)
			if n := seen[a]; n > 0 {
				d.anchors = append(d.anchors, a+"-"+itoa(n))
			} else {
				d.anchors = append(d.anchors, a)
			}
			seen[a]++
		}
		plain := codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(plain, -1) {
			d.links = append(d.links, link{i + 1, m[1]})
		}
		if m := refDef.FindStringSubmatch(plain); m != nil {
			d.links = append(d.links, link{i + 1, m[1]})
		}
	}
	return d
}

// slug is GitHub's heading anchor: lower case, markup and punctuation dropped except '-'
// and '_', spaces turned into '-'.
func slug(title string) string {
	title = codeSpan.ReplaceAllStringFunc(title, func(s string) string { return strings.Trim(s, "`") })
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// broken returns one message per link of file whose target is missing from the repository.
func broken(root, file string, docs map[string]doc) []string {
	var out []string
	rel, _ := filepath.Rel(root, file)
	for _, l := range docs[file].links {
		if scheme.MatchString(l.target) || strings.HasPrefix(l.target, "//") {
			continue // leaves the repository: not checked here
		}
		target, anchor, _ := strings.Cut(l.target, "#")
		dest := file
		if target != "" {
			dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(target))
			inside, err := filepath.Rel(root, dest)
			if err != nil || inside == ".." || strings.HasPrefix(inside, ".."+string(filepath.Separator)) {
				out = append(out, rel+":"+itoa(l.line)+": "+l.target+" points outside the repository")
				continue
			}
			if _, err := os.Stat(dest); err != nil {
				out = append(out, rel+":"+itoa(l.line)+": "+l.target+" does not exist")
				continue
			}
		}
		if anchor == "" || !strings.HasSuffix(dest, ".md") {
			continue
		}
		d, ok := docs[dest]
		if !ok {
			b, err := os.ReadFile(dest)
			if err != nil {
				out = append(out, rel+":"+itoa(l.line)+": "+err.Error())
				continue
			}
			d = parse(string(b))
			docs[dest] = d
		}
		if !slices.Contains(d.anchors, anchor) {
			out = append(out, rel+":"+itoa(l.line)+": "+l.target+": no heading has the anchor #"+anchor)
		}
	}
	return out
}

func TestEveryRelativeLinkResolvesInsideTheClone(t *testing.T) {
	root := repoRoot(t)
	docs := map[string]doc{}
	files := markdownFiles(t, root)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[f] = parse(string(b))
	}
	checked := 0
	for _, f := range files {
		checked += len(docs[f].links)
		for _, msg := range broken(root, f, docs) {
			t.Error(msg)
		}
	}
	if checked == 0 {
		t.Fatal("no links found: the parser is broken")
	}
}

// The checker itself: each kind of broken link is reported, each good one is not.
func TestBrokenLinksAreReported(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/b.md", "# Title\n\n## Money and `time` (UTC)\n\n## Money and `time` (UTC)\n")
	readme := strings.Join([]string{
		"[ok](docs/b.md)",
		"[ok anchor](docs/b.md#money-and-time-utc)",
		"[ok dup anchor](docs/b.md#money-and-time-utc-1)",
		"[ok web](https://example.com/x)",
		"`[in code](nowhere.md)`",
		"```",
		"[in fence](nowhere.md)",
		"```",
		"[outside](../shared/spec/contract.md)",
		"[missing](docs/none.md)",
		"[bad anchor](docs/b.md#nope)",
		"[self](#title-here)",
		"# Title here",
		"[ref]: docs/gone.md",
	}, "\n")
	write("README.md", readme)
	docs := map[string]doc{}
	f := filepath.Join(root, "README.md")
	docs[f] = parse(readme)
	got := broken(root, f, docs)
	want := []string{
		"README.md:9: ../shared/spec/contract.md points outside the repository",
		"README.md:10: docs/none.md does not exist",
		"README.md:11: docs/b.md#nope: no heading has the anchor #nope",
		"README.md:14: docs/gone.md does not exist",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
