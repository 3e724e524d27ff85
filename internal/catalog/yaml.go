package catalog

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"mediagen/internal/contract"
	"mediagen/internal/money"
)

// Scalar decoders. They live on the leaf types only: yaml.v3 forgets KnownFields inside a
// custom UnmarshalYAML of a struct, so structs are left to the strict default decoder.

func enum[T ~string](n *yaml.Node, what string, allowed ...T) (T, error) {
	var zero T
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return zero, fmt.Errorf("line %d: %s must be one of %s", n.Line, what, list(allowed))
	}
	for _, a := range allowed {
		if string(a) == n.Value {
			// A known value is still a wrong type if YAML reads it as a number or a
			// boolean: family: 2.5 must be written "2.5".
			if err := strictString(n, what); err != nil {
				return zero, err
			}
			return a, nil
		}
	}
	return zero, fmt.Errorf("line %d: unknown %s %q (want one of %s)", n.Line, what, n.Value, list(allowed))
}

// convert turns the contract's values of an enum into the catalog's wrapper type.
func convert[T ~string, F ~string](v []F) []T {
	out := make([]T, len(v))
	for i, x := range v {
		out[i] = T(x)
	}
	return out
}

func list[T ~string](v []T) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = string(x)
	}
	return strings.Join(s, ", ")
}

func (p *Product) UnmarshalYAML(n *yaml.Node) (err error) {
	*p, err = enum(n, "product", ProductNative, ProductProduction, ProductEnhancement, ProductSpeech)
	return err
}

func (f *Family) UnmarshalYAML(n *yaml.Node) (err error) {
	*f, err = enum(n, "family", convert[Family](contract.Families())...)
	return err
}

func (t *Tier) UnmarshalYAML(n *yaml.Node) (err error) {
	*t, err = enum(n, "tier", convert[Tier](contract.Tiers())...)
	return err
}

func (r *EnhRoute) UnmarshalYAML(n *yaml.Node) (err error) {
	*r, err = enum(n, "route", convert[EnhRoute](contract.EnhRoutes())...)
	return err
}

func (r *Resolution) UnmarshalYAML(n *yaml.Node) (err error) {
	*r, err = enum(n, "resolution", Res480p, Res720p, Res1080p, Res2K, Res4K)
	return err
}

// UnmarshalYAML reads an account name as a string; the catalog check resolves it.
func (u *Upstream) UnmarshalYAML(n *yaml.Node) error {
	if err := strictString(n, "upstream"); err != nil {
		return err
	}
	*u = Upstream(n.Value)
	return nil
}

// UnmarshalYAML decodes the literal text of the node, so 0.10 in YAML is exactly 100000
// micro-units and never passes through a float.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float" && n.Tag != "!!str") {
		return fmt.Errorf("line %d: a rate must be a decimal number", n.Line)
	}
	m, err := money.Parse(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: rate %q: want a decimal number with at most 6 decimal places", n.Line, n.Value)
	}
	if m < 0 {
		return fmt.Errorf("line %d: rate %q must not be negative", n.Line, n.Value)
	}
	if m > MaxRate {
		return fmt.Errorf("line %d: rate %q is above the ceiling of %s per unit (docs/limits.md, \"Money\")", n.Line, n.Value, money.Micros(MaxRate))
	}
	*r = Rate(m)
	return nil
}

// UnmarshalYAML reads a spend cap: none, or an amount from 0 (nothing may be spent) to
// money.MaxAmount, read exactly like a rate.
func (c *Cap) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float" && n.Tag != "!!str") {
		return fmt.Errorf("line %d: a spend cap must be a decimal number, or none", n.Line)
	}
	v, err := money.ParseCap(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: spend cap %q: %w", n.Line, n.Value, err)
	}
	c.Cap = v
	return nil
}
