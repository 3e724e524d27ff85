package catalog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// padded is the demo catalog with a comment padding it to exactly n bytes.
func padded(t *testing.T, n int) []byte {
	t.Helper()
	demo := DemoYAML()
	pad := n - len(demo) - len("#\n")
	if pad < 0 {
		t.Fatalf("the demo catalog is longer than %d bytes", n)
	}
	return append(append(demo, '#'), append(bytes.Repeat([]byte("x"), pad), '\n')...)
}

// A catalog file is read and decoded only up to MaxFileBytes: one byte more is refused with
// the bound named, by Load (start, reload) and by Check (bytes from elsewhere), before any
// decoding; a file of exactly the bound loads.
func TestCatalogFilesLargerThanTheBoundAreRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	atBound := filepath.Join(dir, "at.yaml")
	if err := os.WriteFile(atBound, padded(t, MaxFileBytes), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(atBound); err != nil {
		t.Fatalf("a file of exactly %d bytes: %v", MaxFileBytes, err)
	}
	over := filepath.Join(dir, "over.yaml")
	big := padded(t, MaxFileBytes+1)
	if err := os.WriteFile(over, big, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(over); err == nil || !strings.Contains(err.Error(), "4 MiB") || !strings.Contains(err.Error(), "over.yaml") {
		t.Errorf("Load of a file one byte past the bound: %v; want a refusal naming the file and 4 MiB", err)
	}
	if _, err := ReadFile(over); err == nil {
		t.Error("ReadFile of a file past the bound succeeded")
	}
	if c, p := Check("over.yaml", big); c != nil || p == nil || !strings.Contains(p.Error(), "4 MiB") {
		t.Errorf("Check of bytes past the bound: %v, %v; want no catalog and a problem naming 4 MiB", c, p)
	}
}

// aliasBomb is a catalog whose text is small but whose aliases expand to tenants × aliases
// alias entries: one tenant's alias list anchored, and every other tenant an alias of one
// tenant that refers to it.
func aliasBomb(tenants, aliases int) []byte {
	var b strings.Builder
	b.WriteString("tenants:\n  - id: a\n    name: A\n    currency: USD\n    aliases: &al\n")
	for i := range aliases {
		fmt.Fprintf(&b, "      - {alias: x%d, product: native, family: fast-2.0, upstream: sandbox, model: m}\n", i)
	}
	b.WriteString("  - &t {id: b, name: B, currency: USD, aliases: *al}\n")
	for range tenants {
		b.WriteString("  - *t\n")
	}
	return []byte(b.String())
}

// Anchors and aliases cannot make a small file cost what a large one would: a catalog whose
// aliases expand to more nodes than MaxExpandedNodes is refused before anything walks or
// decodes the expansion (a 208 KB file expanding to ten million alias entries took 53 s of
// CPU to check before).
func TestAliasExpansionPastTheBoundIsRefused(t *testing.T) {
	t.Parallel()
	doc := aliasBomb(5_000, 2_000)
	began := time.Now()
	_, err := Parse("bomb.yaml", doc)
	if err == nil || !strings.Contains(err.Error(), "aliases expand to more than 524288") {
		t.Fatalf("a %d-byte catalog expanding to 10 million alias entries: %v; want a refusal naming the expansion", len(doc), err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("refusing it took %v", d) // a bound on the test's own time, not a benchmark
	}
	if _, err := Parse("small.yaml", aliasBomb(3, 3)); err != nil && strings.Contains(err.Error(), "aliases expand") {
		t.Errorf("a catalog with a few aliases was refused for its expansion: %v", err)
	}
}

// tenantsCatalog is the demo catalog with n tenants: the demo tenant and copies of it.
func tenantsCatalog(n int) []byte {
	y := DemoYAML()
	i := bytes.Index(y, []byte("\n  - id: demo\n"))
	block := string(y[i:])
	out := bytes.Clone(y)
	for j := 2; j <= n; j++ {
		b := strings.Replace(block, "\n  - id: demo\n", fmt.Sprintf("\n  - id: tenant-%d\n", j), 1)
		out = append(out, strings.Replace(b, "name: Demo tenant", fmt.Sprintf("name: Tenant %d", j), 1)...)
	}
	return out
}

// The bounds leave room for the scale the design names: 1,000 tenants with an alias for
// every product load.
func TestACatalogOfAThousandTenantsLoads(t *testing.T) {
	t.Parallel()
	data := tenantsCatalog(1000)
	c, err := Parse("big.yaml", data)
	if err != nil {
		t.Fatalf("a %d-byte catalog of 1,000 tenants: %v", len(data), err)
	}
	if len(c.Tenants) != 1000 {
		t.Errorf("%d tenants, want 1000", len(c.Tenants))
	}
}

// A file within the byte bound but dense with nodes (one-letter list items, two bytes a
// node) is refused from its bytes, before the YAML parser builds its tree: 4 MiB of them
// took the load to 1 GB.
func TestAFileDenseWithNodesIsRefusedBeforeParsing(t *testing.T) {
	t.Parallel()
	data := []byte("x: [" + strings.Repeat("a,", MaxExpandedNodes) + "a]\n")
	_, err := Parse("dense.yaml", data)
	if err == nil || !strings.Contains(err.Error(), "it was not parsed") {
		t.Fatalf("a %d-byte file of %d list items: %v; want a refusal before parsing", len(data), MaxExpandedNodes+1, err)
	}
}

// structureBound never counts fewer nodes than the parser makes, whatever the style.
func TestStructureBoundIsAnUpperBoundOfTheNodes(t *testing.T) {
	t.Parallel()
	docs := map[string]string{
		"demo":           string(DemoYAML()),
		"100 tenants":    string(tenantsCatalog(100)),
		"flow":           "a: [1, 2, {b: c, d: [e, f]}]\nx: {y: z}\n",
		"block":          "a:\n  - 1\n  - b: c\n    d:\n      - e\n",
		"complex key":    "? [a, b]\n: c\n",
		"multi-line":     "a: |\n  one\n  two\nb: >\n  three\n",
		"quoted":         "a: \"x\"\nb: 'y'\n",
		"anchors":        "a: &x [1, 2]\nb: *x\nc: {<<: {d: 1}}\n",
		"CR line breaks": "a: 1\rb: 2\rc: 3\r",
		"one scalar":     "a",
		"tabs":           "a:\t1\nb:\t[1,\t2]\n",
	}
	for name, d := range docs {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(d), &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		nodes := literalNodes(&doc)
		if b := structureBound([]byte(d)); b < nodes {
			t.Errorf("%s: bound %d < %d nodes", name, b, nodes)
		}
	}
}

// literalNodes counts the nodes of the tree as parsed, an alias as one node.
func literalNodes(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	c := 1
	if n.Kind == yaml.DocumentNode {
		c = 0 // the document is not a node of the text
	}
	for _, k := range n.Content {
		c += literalNodes(k)
	}
	return c
}

// FuzzStructureBound: for any text the YAML parser accepts, the bound read from its bytes is
// at least the nodes it parses to.
func FuzzStructureBound(f *testing.F) {
	for _, s := range []string{"a: [1, {b: c}]", "- a\n- b: c\n", "? a\n: b", "a: |\n  x\n", "\"a\": 'b'", "a: &x [1]\nb: *x", "{a: b}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var doc yaml.Node
		if yaml.Unmarshal([]byte(s), &doc) != nil {
			return
		}
		if b, n := structureBound([]byte(s)), literalNodes(&doc); b < n {
			t.Errorf("%q: bound %d < %d nodes", s, b, n)
		}
	})
}

// An api_key_file is read up to MaxKeyFileBytes: a path naming the wrong file (a large one, or
// /dev/zero, which never ends) fails at once with the bound named, never with its content.
func TestAPIKeyFilesLargerThanTheBoundAreRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("key", []byte("sk-test-key\n"))
	atBound := write("at", append([]byte("sk-"), bytes.Repeat([]byte("k"), MaxKeyFileBytes-3)...))
	big := write("big", bytes.Repeat([]byte("k"), MaxKeyFileBytes+1))
	for _, c := range []struct {
		path, want, wantErr string
	}{
		{ok, "sk-test-key", ""},
		{atBound, "sk-" + strings.Repeat("k", MaxKeyFileBytes-3), ""},
		{big, "", "larger than the limit of 64 KiB"},
		{"/dev/zero", "", "larger than the limit of 64 KiB"},
	} {
		u := UpstreamAccount{Name: "oa", APIKeyFile: c.path}
		key, err := u.APIKey(func(string) string { return "" }, ReadKeyFile)
		switch {
		case c.wantErr == "" && (err != nil || key != c.want):
			t.Errorf("%s: %d bytes, %v; want the key", c.path, len(key), err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr) || strings.Contains(err.Error(), "kkkk")):
			t.Errorf("%s: %v; want a refusal saying %q, without the content", c.path, err, c.wantErr)
		}
	}
}
