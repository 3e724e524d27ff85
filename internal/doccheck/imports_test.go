package doccheck

import (
	"go/build"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The import table of docs/architecture.md ("## Imports") is the package graph of the
// binary: one row per part (a folder under internal/, its subpackages included) with the parts
// it imports. These tests hold it against the code, so the document cannot drift from it.

const modulePath = "mediagen"

// archRow is one row of the table: its layer, its part and the parts it imports.
type archRow struct {
	layer, part string
	imports     []string
}

var backticked = regexp.MustCompile("`([^`]+)`")

// importTable reads the table under the "## Imports" heading of docs/architecture.md.
func importTable(t *testing.T, root string) []archRow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Imports\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## Imports" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []archRow
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 {
			t.Fatalf("import table row %q: want 3 cells (layer, part, imports)", line)
		}
		part := backticked.FindStringSubmatch(cells[1])
		if part == nil {
			continue // the header
		}
		r := archRow{layer: strings.TrimSpace(cells[0]), part: part[1]}
		for _, m := range backticked.FindAllStringSubmatch(cells[2], -1) {
			r.imports = append(r.imports, m[1])
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatal("the import table of docs/architecture.md has no rows")
	}
	return rows
}

// partOf names the part of an import path of the module: the folder under internal/.
func partOf(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, modulePath+"/internal/")
	if !ok {
		return "", false
	}
	part, _, _ := strings.Cut(rest, "/")
	return part, true
}

// binaryGraph is what `go list -deps ./cmd/mediagen` shows, by part: every package of the
// module the binary is built from (non-test files, this platform's build) and the other parts
// each part imports.
func binaryGraph(t *testing.T, root string) map[string][]string {
	t.Helper()
	graph := map[string][]string{}
	seen := map[string]bool{}
	queue := []string{modulePath + "/cmd/mediagen"}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		if seen[path] {
			continue
		}
		seen[path] = true
		dir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(path, modulePath)))
		pkg, err := build.Default.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		from, inInternal := partOf(path)
		if inInternal && graph[from] == nil {
			graph[from] = []string{}
		}
		for _, imp := range pkg.Imports {
			if imp != modulePath && !strings.HasPrefix(imp, modulePath+"/") {
				continue
			}
			queue = append(queue, imp)
			to, ok := partOf(imp)
			if inInternal && ok && to != from && !slices.Contains(graph[from], to) {
				graph[from] = append(graph[from], to)
			}
		}
	}
	for _, imps := range graph {
		slices.Sort(imps)
	}
	return graph
}

func TestArchitectureImportTableIsTheBinarysGraph(t *testing.T) {
	root := repoRoot(t)
	graph := binaryGraph(t, root)
	rows := importTable(t, root)
	listed := map[string]bool{}
	for _, r := range rows {
		if listed[r.part] {
			t.Errorf("part %s has two rows", r.part)
		}
		listed[r.part] = true
		want, ok := graph[r.part]
		if !ok {
			t.Errorf("part %s is in the table but not in the binary", r.part)
			continue
		}
		got := slices.Sorted(slices.Values(r.imports))
		if !slices.Equal(got, want) {
			t.Errorf("part %s imports %v; the table says %v", r.part, want, got)
		}
	}
	for part := range graph {
		if !listed[part] {
			t.Errorf("part %s of the binary has no row in the table (imports %v)", part, graph[part])
		}
	}
}

// "Imports point down the table, never up": every part imports only parts on rows below it.
func TestArchitectureImportsPointDownTheTable(t *testing.T) {
	rows := importTable(t, repoRoot(t))
	row := map[string]int{}
	for i, r := range rows {
		row[r.part] = i
	}
	for i, r := range rows {
		for _, imp := range r.imports {
			if j, ok := row[imp]; ok && j <= i {
				t.Errorf("%s (%s) imports %s (%s), which is not below it", r.part, r.layer, imp, rows[j].layer)
			}
		}
	}
}
