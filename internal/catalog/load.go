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

// Load reads and checks a catalog file.
func Load(path string) (*Catalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
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
