package catalog

import (
	"strings"
	"testing"
)

func TestDemoCatalogHasEveryProduct(t *testing.T) {
	c := Demo()
	ten, ok := c.Tenant("demo")
	if !ok {
		t.Fatal("demo tenant missing")
	}
	seen := map[string]bool{}
	for _, a := range ten.Aliases {
		seen[string(a.Product)+"/"+string(a.Family)+string(a.Tier)+string(a.Route)] = true
	}
	for _, want := range []string{"native/standard-2.0", "native/fast-2.0", "native/mini-2.0", "native/2.5",
		"production/lite", "production/standard", "production/pro", "enhancement/lite", "enhancement/standard", "speech/"} {
		if !seen[want] {
			t.Errorf("demo catalog lacks %s", want)
		}
	}
	p := ten.Packages
	if !p.Native4K || !p.Enhance8K || !p.Production.Enabled || !p.Production.LastFrame || len(p.Production.Resolutions) != 3 {
		t.Errorf("demo packages not all enabled: %+v", p)
	}
	if r, ok := ten.Rates.ProductionRate(TierLite, Res1080p, false); !ok || r != 50_000 {
		t.Errorf("lite 1080p rate = %d,%v", r, ok)
	}
	if r, ok := ten.Rates.EnhancementRate("professional", Band8K); !ok || r != 160_000 {
		t.Errorf("professional 8k rate = %d,%v", r, ok)
	}
	if r, ok := ten.Rates.EnhancementRate("lite", Band8K); ok {
		t.Errorf("lite 8k rate exists: %d", r)
	}
	if r, ok := ten.Rates.SpeechRate(); !ok || r != 200 {
		t.Errorf("speech rate = %d,%v", r, ok)
	}
	if _, ok := ten.Alias("sandbox-video-2.5"); ok {
		t.Error("upstream model name resolved as an alias")
	}
}

func TestExampleFileLoads(t *testing.T) {
	if _, err := Load("../../examples/catalog.yaml"); err != nil {
		t.Fatal(err)
	}
}

// minimal is a valid one-tenant catalog that each case breaks in one place.
const minimal = `tenants:
  - id: acme
    name: Acme
    currency: EUR
    aliases:
      - alias: acme-fast
        product: native
        family: fast-2.0
        upstream: sandbox
        model: up-fast
    rates:
      native:
        acme-fast: 1.5
`

func TestParseRejectsBrokenCatalogs(t *testing.T) {
	tests := []struct {
		name, old, new, want string
	}{
		{"unknown key names key and line", "    name: Acme\n", "    name: Acme\n    colour: red\n", `line 4: unknown key "colour"`},
		{"unknown family names value and line", "family: fast-2.0", "family: fast-3.0", `line 8: unknown family "fast-3.0"`},
		{"unknown product", "product: native", "product: music", `unknown product "music"`},
		{"unknown upstream", "upstream: sandbox", "upstream: elsewhere", `unknown upstream "elsewhere"`},
		{"wrong type", "name: Acme", "name: [1, 2]", "line 3"},
		{"bad rate text", "acme-fast: 1.5", "acme-fast: 1.5e3", `rate "1.5e3"`},
		{"negative rate", "acme-fast: 1.5", "acme-fast: -1", "must not be negative"},
		{"too precise rate", "acme-fast: 1.5", "acme-fast: 0.0000001", "6 decimal places"},
		{"missing native rate", "      native:\n        acme-fast: 1.5\n", "      speech: 1\n", "no rate under rates.native"},
		{"rate for unknown alias", "        acme-fast: 1.5\n", "        acme-fast: 1.5\n        ghost: 2\n", `"ghost" is not a native alias`},
		{"bad currency", "currency: EUR", "currency: euro", "three-letter"},
		{"family on speech", "product: native", "product: speech", "family does not apply"},
		{"alias equal to upstream name", "alias: acme-fast", "alias: up-fast", "also an upstream model name"},
		{"missing family", "        family: fast-2.0\n", "", "family is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(minimal, tt.old, tt.new, 1)
			if src == minimal {
				t.Fatalf("case did not change the catalog")
			}
			_, err := Parse("c.yaml", []byte(src))
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "c.yaml") {
				t.Fatalf("error %q does not contain %q and the file name", err, tt.want)
			}
			if strings.Contains(err.Error(), "catalog.") && strings.Contains(err.Error(), "type") {
				t.Errorf("error leaks Go type names: %q", err)
			}
		})
	}
	if _, err := Parse("c.yaml", []byte(minimal)); err != nil {
		t.Fatalf("minimal catalog rejected: %v", err)
	}
}

func TestParseRejectsEmptyAndMultiDocument(t *testing.T) {
	if _, err := Parse("c.yaml", nil); err == nil {
		t.Error("empty file accepted")
	}
	if _, err := Parse("c.yaml", []byte(minimal+"---\n"+minimal)); err == nil {
		t.Error("two documents accepted")
	}
}

func TestParseRequiresEveryRateATenantCanBuy(t *testing.T) {
	src := Demo()
	_ = src
	broken := strings.Replace(string(DemoYAML()), "8k: 0.16", "", 1)
	if _, err := Parse("demo.yaml", []byte(broken)); err == nil || !strings.Contains(err.Error(), "rates.enhancement.professional.8k") {
		t.Fatalf("missing 8k rate: %v", err)
	}
	broken = strings.Replace(string(DemoYAML()), "4k:    {no_video_input: 0.45, video_input: 0.54}", "4k:    {no_video_input: 0.45}", 1)
	if _, err := Parse("demo.yaml", []byte(broken)); err == nil || !strings.Contains(err.Error(), "rates.production.pro.4k") {
		t.Fatalf("missing production rate: %v", err)
	}
}
