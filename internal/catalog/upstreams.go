package catalog

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// UpstreamKind is what engine an upstream account is: the built-in sandbox, or a local
// production engine. docs/upstreams.md describes each.
type UpstreamKind string

const (
	// KindSandbox is the embedded test engine: every product, integrator markers, a pace.
	KindSandbox UpstreamKind = "sandbox"
	// KindFFmpeg is the local enhancement engine: real scaling, frame rate, bitrate and bit
	// depth with ffmpeg, no markers, no pace.
	KindFFmpeg UpstreamKind = "ffmpeg"
	// KindEspeak is the local speech engine: espeak-ng, no markers.
	KindEspeak UpstreamKind = "espeak"
)

func (k *UpstreamKind) UnmarshalYAML(n *yaml.Node) (err error) {
	*k, err = enum(n, "upstream kind", KindSandbox, KindFFmpeg, KindEspeak)
	return err
}

// Serves reports whether an engine of the kind can run the product. The catalog check
// refuses an alias bound to an account that cannot serve it, so such a request is never
// accepted.
func (k UpstreamKind) Serves(p Product) bool {
	switch k {
	case KindSandbox:
		return true
	case KindFFmpeg:
		return p == ProductEnhancement
	case KindEspeak:
		return p == ProductSpeech
	}
	return false
}

// UpstreamAccount is a named upstream in the catalog's upstreams section. Aliases bind to it
// by name (alias.upstream). The account "sandbox" of kind sandbox is built in.
type UpstreamAccount struct {
	Name string       `yaml:"name"`
	Kind UpstreamKind `yaml:"kind"`
	// MaxConcurrent bounds the jobs of this account running at once in one process (local
	// engines: renders; speech has its own bound of the same size). 0: the engine's default.
	MaxConcurrent int `yaml:"max_concurrent"`
}

// sandboxAccount is the built-in account every catalog has.
var sandboxAccount = UpstreamAccount{Name: string(UpstreamSandbox), Kind: KindSandbox}

// Upstream returns the account of a name: one of the catalog's upstreams, or the built-in
// sandbox.
func (c *Catalog) Upstream(name string) (UpstreamAccount, bool) {
	if name == string(UpstreamSandbox) {
		return sandboxAccount, true
	}
	for _, u := range c.Upstreams {
		if u != nil && u.Name == name {
			return *u, true
		}
	}
	return UpstreamAccount{}, false
}

// Accounts returns every account aliases may bind to: the built-in sandbox first, then the
// catalog's upstreams in file order.
func (c *Catalog) Accounts() []UpstreamAccount {
	out := []UpstreamAccount{sandboxAccount}
	for _, u := range c.Upstreams {
		if u != nil {
			out = append(out, *u)
		}
	}
	return out
}

// checkUpstreams checks the upstreams section: names unique and not "sandbox", a kind each.
func (c *Catalog) checkUpstreams() []error {
	var errs []error
	seen := map[string]bool{string(UpstreamSandbox): true}
	for i, u := range c.Upstreams {
		switch {
		case u == nil:
			errs = append(errs, fmt.Errorf("upstreams[%d] is empty", i))
		case !reID.MatchString(u.Name):
			errs = append(errs, fmt.Errorf("upstreams[%d]: name %q must be 1-64 lower-case letters, digits, '-' or '_'", i, u.Name))
		case seen[u.Name]:
			errs = append(errs, fmt.Errorf("upstream %q is defined twice (sandbox is built in)", u.Name))
		case u.Kind == "":
			errs = append(errs, fmt.Errorf("upstream %q: kind is required (ffmpeg or espeak)", u.Name))
		case u.MaxConcurrent < 0:
			errs = append(errs, fmt.Errorf("upstream %q: max_concurrent must not be negative", u.Name))
		default:
			seen[u.Name] = true
		}
	}
	return errs
}
