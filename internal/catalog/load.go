package catalog

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

//go:embed demo.yaml
var demoYAML []byte

// DemoYAML is the embedded demo catalog: one tenant with an alias for every product and every
// package enabled. serve uses it when no catalog file is configured.
func DemoYAML() []byte { return bytes.Clone(demoYAML) }

// Demo returns the parsed demo catalog.
func Demo() *Catalog {
	c, err := Parse("demo.yaml", demoYAML)
	if err != nil {
		panic("embedded demo catalog is invalid: " + err.Error())
	}
	return c
}

// MaxFileBytes and MaxExpandedNodes bound what loading a catalog may cost, at start, on every
// reload and in `admin catalog check`. The cost is in YAML nodes: a load holds a node tree,
// then the decoded structs, several hundred bytes a node at its peak (bench/catalogload: the
// demo tenant, an alias for every product, is 3 KB and 290 nodes; 1,000 such tenants are
// 3 MB, 258,032 nodes, and took a load from 7 to 111 MB resident). Before these bounds a
// 64 MB file took a replica from 59 to 285 MB on a reload (issue 41), and an 8 MiB file of
// one-letter list items (two bytes a node) reached 1 GB.
const (
	// MaxFileBytes: 1,000 tenants the demo's size and room for comments. At most one byte
	// past it is read, and nothing of a larger file is decoded.
	MaxFileBytes = 4 << 20
	// MaxExpandedNodes bounds the nodes a catalog holds, counted twice: an upper bound from
	// its bytes before anything is parsed (structureBound), and the exact count with every
	// alias (*anchor) followed, before the decode expands them (expandedNodes). 524,288 is
	// twice the nodes of the 1,000-tenant catalog, whose bytes bound it at 475,060; the
	// most a load then costs is about 100 MB for its moment (the 1,000 tenants; the densest
	// file accepted, 512 KiB of one-letter list items, 75 MB). Anchors save typing but cannot make
	// a small file cost what a large one would: a 208 KB file whose aliases expanded to ten
	// million alias entries held a reload for 53 s of CPU before.
	MaxExpandedNodes = 1 << 19
)

// structureBound is an upper bound of the YAML nodes in data, read from its bytes without
// parsing. Every node but the root starts after an indicator or at the start of a line, and
// the indicators that can start two are counted twice: ':' (a value, and the single-pair
// mapping "[a: b]" or the block mapping "- a: b" whose key precedes it), ',' '{' and '?' (a
// key, and the empty value of "{a, b}" or "? a"). The root and its first key share the start.
// Comments and scalars holding these characters only make the bound larger than the count
// (FuzzStructureBound checks it against the parser).
func structureBound(data []byte) int {
	n := 2
	for _, c := range data {
		switch c {
		case '[', '-', '\n', '\r':
			n++
		case ':', ',', '{', '?':
			n += 2
		}
	}
	return n
}

// expandedNodes counts the nodes under n with every alias followed, each node's count
// computed once (memo) and every sum capped just past MaxExpandedNodes, so the count costs
// the nodes of the file, not of its expansion. An alias cycle (which the YAML parser does not
// produce) counts as past the bound.
func expandedNodes(n *yaml.Node, memo map[*yaml.Node]int64) int64 {
	if n == nil {
		return 0
	}
	if c, ok := memo[n]; ok {
		if c < 0 {
			return MaxExpandedNodes + 1 // a cycle
		}
		return c
	}
	memo[n] = -1
	total := int64(1)
	if n.Kind == yaml.AliasNode {
		total += expandedNodes(n.Alias, memo)
	}
	for _, c := range n.Content {
		if total += expandedNodes(c, memo); total > MaxExpandedNodes {
			total = MaxExpandedNodes + 1
			break
		}
	}
	total = min(total, MaxExpandedNodes+1)
	memo[n] = total
	return total
}

// errTooLarge is the refusal of a file past MaxFileBytes; it names the bound.
func errTooLarge(name string) error {
	return fmt.Errorf("catalog: %s is larger than the limit of %d MiB for a catalog file (catalog.MaxFileBytes); nothing of it was loaded", name, MaxFileBytes>>20)
}

// ReadFile reads a catalog file, refusing one larger than MaxFileBytes after reading at most
// one byte past the bound: the size is checked on what is read, not on a stat that a file
// growing meanwhile would outrun.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if len(data) > MaxFileBytes {
		return nil, errTooLarge(path)
	}
	return data, nil
}

// Load reads and checks a catalog file.
func Load(path string) (*Catalog, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes and checks a catalog. Every problem names the file, and where the decoder knows
// it, the line. All problems are found in one pass (a *Problems): a wrong scalar or an unknown
// key does not hide the checks after it, so an operator fixes a file in one round, not one
// restart per mistake. Only a file that is not YAML at all stops at its first error.
func Parse(name string, data []byte) (*Catalog, error) {
	c, p := Check(name, data)
	if p != nil {
		return nil, p
	}
	return c, nil
}

// Check is Parse for callers that add problems of their own (what serve needs of its
// environment): it returns what could be decoded along with the problems, nil when there are
// none. A catalog returned with problems is for those further checks only, never for serving;
// it is nil when the file could not be decoded at all.
func Check(name string, data []byte) (*Catalog, *Problems) {
	p := &Problems{File: name}
	if len(data) > MaxFileBytes {
		// Bytes handed over by a caller that did not read them with ReadFile: still never
		// decoded.
		return nil, p.add(fmt.Sprintf("the file is larger than the limit of %d MiB for a catalog file (catalog.MaxFileBytes)", MaxFileBytes>>20))
	}
	if n := structureBound(data); n > MaxExpandedNodes {
		return nil, p.add(fmt.Sprintf("the file may hold up to %d YAML nodes (counted from its commas, colons, dashes, brackets and lines), more than the limit of %d (catalog.MaxExpandedNodes); it was not parsed",
			n, MaxExpandedNodes))
	}
	// First pass: the document as a node tree, for the scalar types and unknown keys the
	// lenient decoder does not report (strict.go); it also finds syntax errors and extra
	// documents.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, p.add("the file is empty")
		}
		return nil, p.add(tidyYAMLError(err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, p.add("only one YAML document is allowed")
	}
	if n := expandedNodes(&doc, map[*yaml.Node]int64{}); n > MaxExpandedNodes {
		return nil, p.add(fmt.Sprintf("its aliases expand to more than %d YAML nodes, the limit (catalog.MaxExpandedNodes); use fewer anchors and aliases",
			MaxExpandedNodes))
	}
	// The walk reports every wrong scalar and unknown key, and repairs the tree (a wrong
	// scalar becomes its string or null) so that the decode and the check below still run
	// and report theirs.
	p.addErr(scalarErrors(&doc))
	var c Catalog
	if err := doc.Decode(&c); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, p.add(tidyYAMLError(err))
		}
		for _, msg := range te.Errors { // structure: a list where a string belongs, …
			p.add(tidyYAMLError(errors.New(msg)))
		}
	}
	p.addErr(c.check())
	if len(p.List) > 0 {
		return &c, p
	}
	// The strict decoder of the text is the last word on structure and unknown keys: the
	// walk above should have found whatever it finds.
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	var again Catalog
	if err := strict.Decode(&again); err != nil {
		return &c, p.add(tidyYAMLError(err))
	}
	return &c, nil
}

// Problems is every problem of a catalog file, one sentence each: the decoder's and the
// scalar checks' in file order, then the catalog check's. Each says where (line, tenant,
// alias, field or account) and why.
type Problems struct {
	File string
	List []string
}

func (p *Problems) Error() string {
	return "catalog " + p.File + ": " + strings.Join(p.List, "\n")
}

func (p *Problems) add(msg string) *Problems {
	p.List = append(p.List, msg)
	return p
}

// addErr adds the problems of err, a join of one-line errors (or nil).
func (p *Problems) addErr(err error) {
	if err == nil {
		return
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if line != "" {
			p.List = append(p.List, line)
		}
	}
}

var (
	reNotFound = regexp.MustCompile(`field (\S+) not found in type \S+`)
	reCannot   = regexp.MustCompile("cannot unmarshal !!(\\w+)( `[^`]*`)? into \\S+")
)

// tidyYAMLError keeps yaml.v3's line numbers but drops Go type names, which mean nothing to an
// operator.
func tidyYAMLError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	msg = strings.ReplaceAll(msg, "\n  ", "; ")
	msg = reNotFound.ReplaceAllString(msg, `unknown key "$1"`)
	msg = reCannot.ReplaceAllStringFunc(msg, func(m string) string {
		sub := reCannot.FindStringSubmatch(m)
		if sub[2] == "" { // a list or mapping: yaml.v3 gives no value
			return fmt.Sprintf("wrong type: a %s is not allowed here", sub[1])
		}
		return fmt.Sprintf("wrong type: %s value %q is not allowed here", sub[1], strings.Trim(sub[2], " `"))
	})
	return msg
}

// Tenant returns the tenant with the given id.
func (c *Catalog) Tenant(id string) (*Tenant, bool) {
	t, ok := c.byID[id]
	return t, ok
}

// Alias returns the tenant's alias with the given name. Lookups are by alias only, so an
// upstream model name or another tenant's alias is simply not found.
func (t *Tenant) Alias(name string) (*Alias, bool) {
	a, ok := t.byAlias[name]
	return a, ok
}

// ProductionResolutionEnabled reports whether the tenant's production package includes res.
func (p ProductionPackage) ProductionResolutionEnabled(res Resolution) bool {
	for _, r := range p.Resolutions {
		if r == res {
			return true
		}
	}
	return false
}
