package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"mediagen/internal/catalog"
)

// The code blocks of README.md and docs/*.md that are not requests (docs_examples_test.go runs
// those) are checked here without a running service:
//
//   - every ```yaml block is a catalog that internal/catalog loads strictly; a block right after
//     the line <!-- catalog-fragment: FILE --> is a part of one: it is merged into FILE (a
//     catalog of the repository, e.g. examples/catalog.yaml) — mappings key by key, list items
//     with the same id or alias merged, other values replaced — and the result must load;
//   - every `mediagen admin …` line of a ```sh block runs, in order, against one fresh data
//     directory with the demo catalog (grp_… ids the commands print stand in for $GROUP_ID,
//     the first "key id:" a command prints for $KEY_ID);
//   - every ```json or ```http block whose info string starts with "response" is an answer that
//     docs/openapi.yaml documents (docs_responses_test.go).

// docBlock is one fenced code block of the documentation.
type docBlock struct {
	file   string // repository-relative path
	line   int    // the line of the opening fence (1-based)
	lang   string
	info   string // the rest of the info string
	marker string // the HTML comment on the line before the fence, without <!-- -->
	text   string
}

func (b docBlock) where() string { return b.file + ":" + strconv.Itoa(b.line) }

var htmlComment = regexp.MustCompile(`^<!--\s*(.*?)\s*-->$`)

// docBlocks returns every fenced code block of README.md and docs/*.md.
func docBlocks(t *testing.T) []docBlock {
	t.Helper()
	files, _ := filepath.Glob("../../docs/*.md")
	files = append([]string{"../../README.md"}, files...)
	var out []docBlock
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(f, "../../")
		var cur *docBlock
		var body []string
		prev := ""
		for i, line := range strings.Split(string(b), "\n") {
			trimmed := strings.TrimSpace(line)
			switch {
			case cur == nil && strings.HasPrefix(trimmed, "```"):
				lang, info, _ := strings.Cut(strings.TrimPrefix(trimmed, "```"), " ")
				cur = &docBlock{file: rel, line: i + 1, lang: lang, info: strings.TrimSpace(info)}
				if m := htmlComment.FindStringSubmatch(prev); m != nil {
					cur.marker = m[1]
				}
				body = nil
			case cur != nil && trimmed == "```":
				cur.text = strings.Join(body, "\n") + "\n"
				out = append(out, *cur)
				cur = nil
			case cur != nil:
				body = append(body, line)
			}
			if trimmed != "" {
				prev = trimmed
			}
		}
	}
	return out
}

func TestDocsCatalogBlocksLoad(t *testing.T) {
	t.Parallel()
	n := 0
	for _, b := range docBlocks(t) {
		if b.lang != "yaml" && b.lang != "yml" {
			continue
		}
		n++
		data := []byte(b.text)
		if base, ok := strings.CutPrefix(b.marker, "catalog-fragment:"); ok {
			merged, err := mergeCatalogFragment(filepath.Join("../..", strings.TrimSpace(base)), data)
			if err != nil {
				t.Errorf("%s: %v", b.where(), err)
				continue
			}
			data = merged
		}
		if _, err := catalog.Parse(b.where(), data); err != nil {
			t.Errorf("%s: does not load as a catalog (a part of one is marked <!-- catalog-fragment: FILE -->, and merged into FILE): %v", b.where(), err)
		}
	}
	if n < 5 {
		t.Fatalf("found %d yaml blocks in the docs; the parser lost them", n)
	}
}

// mergeCatalogFragment merges a YAML fragment into the catalog file base, on node trees so that
// every scalar keeps its exact text (the strict loader cares: 2.5 and "2.5" differ).
func mergeCatalogFragment(base string, fragment []byte) ([]byte, error) {
	raw, err := os.ReadFile(base)
	if err != nil {
		return nil, err
	}
	var dst, src yaml.Node
	if err := yaml.Unmarshal(raw, &dst); err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(fragment, &src); err != nil {
		return nil, err
	}
	if len(dst.Content) != 1 || len(src.Content) != 1 {
		return nil, os.ErrInvalid
	}
	mergeNode(dst.Content[0], src.Content[0])
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	if err := enc.Encode(&dst); err != nil {
		return nil, err
	}
	return out.Bytes(), enc.Close()
}

func mergeNode(dst, src *yaml.Node) {
	switch {
	case dst.Kind == yaml.MappingNode && src.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(src.Content); i += 2 {
			k, v := src.Content[i], src.Content[i+1]
			if j := mappingIndex(dst, k.Value); j >= 0 {
				mergeNode(dst.Content[j+1], v)
			} else {
				dst.Content = append(dst.Content, k, v)
			}
		}
	case dst.Kind == yaml.SequenceNode && src.Kind == yaml.SequenceNode && identified(src):
		for _, item := range src.Content {
			if d := findIdentified(dst, item); d != nil {
				mergeNode(d, item)
			} else {
				dst.Content = append(dst.Content, item)
			}
		}
	default:
		*dst = *src
	}
}

func mappingIndex(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return i
		}
	}
	return -1
}

// identity is the key that names a list item: a tenant's id, an alias's alias.
func identity(n *yaml.Node) string {
	if n.Kind != yaml.MappingNode {
		return ""
	}
	for _, k := range []string{"id", "alias"} {
		if i := mappingIndex(n, k); i >= 0 {
			return k + "=" + n.Content[i+1].Value
		}
	}
	return ""
}

func identified(seq *yaml.Node) bool {
	for _, item := range seq.Content {
		if identity(item) == "" {
			return false
		}
	}
	return len(seq.Content) > 0
}

func findIdentified(seq, item *yaml.Node) *yaml.Node {
	id := identity(item)
	for _, d := range seq.Content {
		if identity(d) == id {
			return d
		}
	}
	return nil
}

// adminLine is one `mediagen admin …` command of the docs, with the output the docs show for it:
// a comment line right below the command.
type adminLine struct {
	where string
	args  []string
	want  string
}

func docAdminLines(t *testing.T) []adminLine {
	t.Helper()
	var out []adminLine
	for _, b := range docBlocks(t) {
		if b.lang != "sh" {
			continue
		}
		lines := strings.Split(b.text, "\n")
		for i, line := range lines {
			c := strings.TrimSpace(line)
			if !strings.HasPrefix(c, "mediagen admin ") {
				continue
			}
			a := adminLine{where: b.file + ":" + strconv.Itoa(b.line+1+i)}
			a.args = shellSplit(trailingComment.ReplaceAllString(c, ""))[1:]
			if i+1 < len(lines) {
				if want, ok := strings.CutPrefix(strings.TrimSpace(lines[i+1]), "# "); ok {
					a.want = want
				}
			}
			out = append(out, a)
		}
	}
	return out
}

func TestDocsAdminCommandsRun(t *testing.T) {
	t.Parallel()
	lines := docAdminLines(t)
	if len(lines) < 5 {
		t.Fatalf("found %d mediagen admin lines in the docs; the parser lost them", len(lines))
	}
	dir := t.TempDir()
	groupID := regexp.MustCompile(`\bgrp_[a-z0-9]+`)
	keyID := regexp.MustCompile(`key id:\s+(key_[a-z0-9]+)`)
	vars := map[string]string{}
	for _, a := range lines {
		args := append([]string(nil), a.args...)
		for i, arg := range args {
			if strings.HasPrefix(arg, "$") {
				v, ok := vars[arg[1:]]
				if !ok {
					t.Fatalf("%s: %s is not set by an earlier command", a.where, arg)
				}
				args[i] = v
			} else if _, err := os.Stat(filepath.Join("../..", arg)); err == nil && i > 2 {
				args[i] = filepath.Join("../..", arg) // the docs' paths are from the repository root
			}
		}
		var stdout, stderr bytes.Buffer
		err := run(t.Context(), append(args, "--data-dir", dir), env(nil), &stdout, &stderr)
		if err != nil {
			t.Errorf("%s: mediagen %s: %v\n%s%s", a.where, strings.Join(a.args, " "), err, stdout.String(), stderr.String())
			continue
		}
		got := strings.ReplaceAll(stdout.String(), "../../", "")
		if a.want != "" && !strings.Contains(got, a.want) {
			t.Errorf("%s: mediagen %s printed %q; the docs show %q", a.where, strings.Join(a.args, " "), got, a.want)
		}
		if id := groupID.FindString(got); id != "" {
			if _, set := vars["GROUP_ID"]; !set {
				vars["GROUP_ID"] = id
			}
		}
		if m := keyID.FindStringSubmatch(got); m != nil {
			if _, set := vars["KEY_ID"]; !set {
				vars["KEY_ID"] = m[1]
			}
		}
	}
}

// TestDocsMakeTargetsExist: the `make …` lines of the docs name targets of the Makefile. What
// `make run` starts is what the docs tests start (serve with the demo catalog and the sandbox);
// `make test` is the suite itself.
func TestDocsMakeTargetsExist(t *testing.T) {
	t.Parallel()
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range docBlocks(t) {
		if b.lang != "sh" {
			continue
		}
		for _, line := range strings.Split(b.text, "\n") {
			f := strings.Fields(trailingComment.ReplaceAllString(strings.TrimSpace(line), ""))
			if len(f) < 2 || f[0] != "make" {
				continue
			}
			n++
			for _, target := range f[1:] {
				if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:`).Match(mk) {
					t.Errorf("%s: make %s: the Makefile has no target %q", b.where(), target, target)
				}
			}
		}
	}
	if n < 2 {
		t.Fatalf("found %d make lines in the docs; the parser lost them", n)
	}
}

// TestDocsGoBlocksAreCompiledCode: a ```go block is either import lines of packages of this
// module, or lines of a Go file of the repository named in its info string (```go
// client/example_test.go), in the same order (blank lines and runs of spaces aside). Those
// files are Example functions or their helpers, compiled (and, with an Output comment, run) by
// their package's tests, so a snippet cannot show code that no longer compiles.
func TestDocsGoBlocksAreCompiledCode(t *testing.T) {
	t.Parallel()
	// The Go client is a module of its own under client/ (docs/clients.md).
	importRE := regexp.MustCompile(`^import "(?:mediagen|github\.com/mediagen-dev/mediagen)/([^"]+)"$`)
	n := 0
	for _, b := range docBlocks(t) {
		if b.lang != "go" {
			continue
		}
		n++
		lines := normalizedLines(b.text)
		if len(lines) > 0 && importRE.MatchString(lines[0]) {
			for _, l := range lines {
				m := importRE.FindStringSubmatch(l)
				if m == nil {
					t.Errorf("%s: an import block holds only imports of this module, got %q", b.where(), l)
				} else if st, err := os.Stat(filepath.Join("../..", m[1])); err != nil || !st.IsDir() {
					t.Errorf("%s: %s: no such package in the repository", b.where(), l)
				}
			}
			continue
		}
		src := strings.Fields(b.info)
		if len(src) != 1 || !strings.HasSuffix(src[0], "_test.go") {
			t.Errorf("%s: name the example file the snippet comes from: ```go path/to/example_test.go", b.where())
			continue
		}
		code, err := os.ReadFile(filepath.Join("../..", src[0]))
		if err != nil {
			t.Errorf("%s: %v", b.where(), err)
			continue
		}
		file := normalizedLines(string(code))
		i := 0
		for _, want := range lines {
			for i < len(file) && file[i] != want {
				i++
			}
			if i == len(file) {
				t.Errorf("%s: %q is not in %s (in this order)", b.where(), want, src[0])
				break
			}
			i++
		}
	}
	if n < 5 {
		t.Fatalf("found %d go blocks in the docs; the parser lost them", n)
	}
}

// normalizedLines returns the non-blank lines of text, trimmed, with runs of blanks as one
// space (gofmt aligns comments differently in a file and a snippet).
func normalizedLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			out = append(out, strings.Join(f, " "))
		}
	}
	return out
}
