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
// it, the line.
func Parse(name string, data []byte) (*Catalog, error) {
	// First pass: the document as a node tree, for the scalar types the decoder does not check
	// (strict.go); it also finds syntax errors and extra documents.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("catalog %s: the file is empty", name)
		}
		return nil, fmt.Errorf("catalog %s: %s", name, tidyYAMLError(err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("catalog %s: only one YAML document is allowed", name)
	}
	if err := scalarErrors(&doc); err != nil {
		return nil, fmt.Errorf("catalog %s: %w", name, err)
	}
	// Second pass: the strict decode (unknown keys, structure). Node.Decode has no
	// KnownFields, so this decodes the text again.
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	var c Catalog
	if err := strict.Decode(&c); err != nil {
		return nil, fmt.Errorf("catalog %s: %s", name, tidyYAMLError(err))
	}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("catalog %s: %w", name, err)
	}
	return &c, nil
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
