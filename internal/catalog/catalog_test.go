package catalog

import (
	"strings"
	"testing"

	"mediagen/internal/money"

	"mediagen/internal/contract"
)

func TestDemoCatalogHasEveryProduct(t *testing.T) {
	t.Parallel()
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
	if r, ok := ten.Rates.ProductionRate(Tier(contract.TierLite), Res1080p, false); !ok || r != 50_000 {
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
	t.Parallel()
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
	t.Parallel()
	tests := []struct {
		name, old, new, want string
	}{
		{"unknown key names key and line", "    name: Acme\n", "    name: Acme\n    colour: red\n", `line 4: unknown key "colour"`},
		{"unknown family names value and line", "family: fast-2.0", "family: fast-3.0", `line 8: unknown family "fast-3.0"`},
		{"unknown product", "product: native", "product: music", `unknown product "music"`},
		{"unknown upstream", "upstream: sandbox", "upstream: elsewhere", `unknown upstream "elsewhere"`},
		{"wrong type", "name: Acme", "name: [1, 2]", "line 3: wrong type: a seq is not allowed here"},
		{"wrong type of a section", "    currency: EUR\n", "    currency: EUR\n    packages: [1]\n", "line 5: wrong type: a seq is not allowed here"},
		{"wrong type with a value", "  - id: acme\n", "  - id: acme\n    virtual_groups: 5\n", `line 3: wrong type: int value "5" is not allowed here`},
		{"bad rate text", "acme-fast: 1.5", "acme-fast: 1.5e3", `rate "1.5e3"`},
		{"negative rate", "acme-fast: 1.5", "acme-fast: -1", "must not be negative"},
		{"too precise rate", "acme-fast: 1.5", "acme-fast: 0.0000001", "6 decimal places"},
		{"missing native rate", "      native:\n        acme-fast: 1.5\n", "      speech: 1\n", "no rate under rates.native"},
		{"rate for unknown alias", "        acme-fast: 1.5\n", "        acme-fast: 1.5\n        ghost: 2\n", `"ghost" is not a native alias`},
		{"bad currency", "currency: EUR", "currency: euro", "three-letter"},
		{"family on speech", "product: native", "product: speech", "family does not apply"},
		{"alias equal to upstream name", "alias: acme-fast", "alias: up-fast", "also an upstream model name"},
		{"missing family", "        family: fast-2.0\n", "", "family is required"},
		{"zero weight", "    currency: EUR\n", "    currency: EUR\n    weight: 0\n", "weight 0 must be 1 to 100"},
		{"weight above the bound", "    currency: EUR\n", "    currency: EUR\n    weight: 101\n", "weight 101 must be 1 to 100"},
		{"webhook endpoints above the bound", "    currency: EUR\n", "    currency: EUR\n    webhooks: {enabled: true, max_endpoints: 51}\n", "webhooks.max_endpoints 51 must be 1 to 50"},
		{"webhook endpoints negative", "    currency: EUR\n", "    currency: EUR\n    webhooks: {enabled: true, max_endpoints: -1}\n", "webhooks.max_endpoints -1 must be 1 to 50"},
		{"webhooks unknown field", "    currency: EUR\n", "    currency: EUR\n    webhooks: {enabled: true, url: x}\n", "line 5"},
		{"weight not a number", "    currency: EUR\n", "    currency: EUR\n    weight: heavy\n", "line 5"},
		{"negative spend cap", "    currency: EUR\n", "    currency: EUR\n    spend_caps:\n      monthly: -5\n", `line 6: spend cap "-5": a cap must be an amount from 0 to 1000000000000`},
		{"spend cap above the ceiling", "    currency: EUR\n", "    currency: EUR\n    spend_caps:\n      daily: 1000000000000.000001\n", `line 6: spend cap "1000000000000.000001": a cap must be an amount from 0 to 1000000000000`},
		{"spend cap that is no amount", "    currency: EUR\n", "    currency: EUR\n    spend_caps:\n      daily: lots\n", `line 6: spend cap "lots"`},
		{"rate above the ceiling names the line", "acme-fast: 1.5", "acme-fast: 1000000.000001", `line 13: rate "1000000.000001" is above the ceiling of 1000000 per unit`},
		{"the issue's rate", "acme-fast: 1.5", "acme-fast: 9223372036854.775807", `rate "9223372036854.775807" is above the ceiling`},
		{"unknown spend cap period", "    currency: EUR\n", "    currency: EUR\n    spend_caps:\n      weekly: 5\n", `unknown key "weekly"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := parseEdited(t, minimal, tt.old, tt.new)
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
	t.Parallel()
	if _, err := Parse("c.yaml", nil); err == nil {
		t.Error("empty file accepted")
	}
	if _, err := Parse("c.yaml", []byte(minimal+"---\n"+minimal)); err == nil {
		t.Error("two documents accepted")
	}
}

func TestParseRequiresEveryRateATenantCanBuy(t *testing.T) {
	t.Parallel()
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

// typed is a valid catalog with a field of every scalar kind; the line numbers matter to the
// wrong-type cases below.
const typed = `tenants:
  - id: acme
    name: Acme
    currency: EUR
    packages:
      native_4k: false
      enhance_8k: false
      production:
        enabled: false
        last_frame: false
    aliases:
      - alias: acme-fast
        product: native
        family: fast-2.0
        upstream: sandbox
        model: up-fast
    virtual_groups:
      - {id: brand, name: Brand, description: Logos}
    rates:
      native:
        acme-fast: 1.5
`

// yaml.v3 takes yes/on as true and any scalar as a string even with KnownFields; the catalog
// does not.
func TestParseRejectsWrongScalarTypes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, old, new string
		want           []string
	}{
		// Booleans: only unquoted true and false.
		{"bool yes", "native_4k: false", "native_4k: yes", []string{"line 6: packages.native_4k must be true or false, not yes"}},
		{"bool quoted yes", "native_4k: false", `native_4k: "yes"`, []string{`line 6: packages.native_4k must be true or false, not "yes"`}},
		{"bool on", "enhance_8k: false", "enhance_8k: on", []string{"line 7: packages.enhance_8k must be true or false, not on"}},
		{"bool 1", "enabled: false", "enabled: 1", []string{"line 9: packages.production.enabled must be true or false, not 1"}},
		{"bool y", "last_frame: false", "last_frame: y", []string{"line 10: packages.production.last_frame must be true or false, not y"}},
		{"bool True", "last_frame: false", "last_frame: True", []string{"line 10:", "not True"}},
		{"bool quoted true", "native_4k: false", `native_4k: "true"`, []string{`line 6: packages.native_4k must be true or false, not "true"`, "without quotes"}},
		{"bool single-quoted false", "native_4k: false", `native_4k: 'false'`, []string{`line 6:`, `not 'false'`, "without quotes"}},
		// Strings: a YAML string scalar, plain or quoted; a bare number, boolean or date is not.
		{"string 42", "name: Acme", "name: 42", []string{`line 3: name must be a string, but 42 is a YAML number; quote it: "42"`}},
		{"string true", "name: Acme", "name: true", []string{`line 3: name must be a string, but true is a YAML boolean; quote it: "true"`}},
		{"string bare 2.5", "name: Acme", "name: 2.5", []string{`line 3: name must be a string, but 2.5 is a YAML number; quote it: "2.5"`}},
		{"string date", "description: Logos", "description: 2024-01-01", []string{`line 18: description must be a string, but 2024-01-01 is a YAML date; quote it: "2024-01-01"`}},
		{"string explicit tag", "name: Acme", "name: !!binary QWNtZQ==", []string{"line 3: name must be a string, not a value tagged !!binary"}},
		{"id number", "id: acme", "id: 7", []string{"line 2: id must be a string", `quote it: "7"`}},
		{"alias number", "alias: acme-fast", "alias: 2.5", []string{"line 12: alias must be a string", `quote it: "2.5"`}},
		{"model number", "model: up-fast", "model: 3", []string{"line 16: model must be a string", `quote it: "3"`}},
		{"group name number", "name: Brand", "name: 7", []string{"line 18: name must be a string", `quote it: "7"`}},
		{"rate key number", "acme-fast: 1.5", "42: 1.5", []string{"line 21: a key under rates.native must be a string", `quote it: "42"`}},
		// Enums are strings too: the docs' "2.5" family must be quoted.
		{"family bare 2.5", "family: fast-2.0", "family: 2.5", []string{`line 14: family must be a string, but 2.5 is a YAML number; quote it: "2.5"`}},
		{"unknown family number", "family: fast-2.0", "family: 3", []string{`line 14: unknown family "3"`}},
		{"product boolean", "product: native", "product: true", []string{`line 13: unknown product "true"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := parseEdited(t, typed, tt.old, tt.new)
			if !strings.HasPrefix(err.Error(), "catalog c.yaml: ") {
				t.Errorf("error %q does not start with the file name", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if _, err := Parse("c.yaml", []byte(typed)); err != nil {
		t.Fatalf("typed catalog rejected: %v", err)
	}
}

func TestParseReportsEveryWrongScalarType(t *testing.T) {
	t.Parallel()
	src := strings.NewReplacer("name: Acme", "name: 42", "native_4k: false", "native_4k: on", "family: fast-2.0", "family: 2.5").Replace(typed)
	_, err := Parse("c.yaml", []byte(src))
	if err == nil {
		t.Fatal("accepted")
	}
	want := "catalog c.yaml: line 3: name must be a string, but 42 is a YAML number; quote it: \"42\"\n" +
		"line 6: packages.native_4k must be true or false, not on\n" +
		"line 14: family must be a string, but 2.5 is a YAML number; quote it: \"2.5\""
	if err.Error() != want {
		t.Errorf("error:\n%s\nwant:\n%s", err, want)
	}
}

func TestParseAcceptsWellTypedScalars(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		repl  []string
		check func(*testing.T, *Tenant)
	}{
		{"true and false", []string{"native_4k: false", "native_4k: true", "enhance_8k: false", "enhance_8k: true"}, func(t *testing.T, ten *Tenant) {
			if !ten.Packages.Native4K || !ten.Packages.Enhance8K || ten.Packages.Production.LastFrame {
				t.Errorf("packages = %+v", ten.Packages)
			}
		}},
		{"explicit !!bool tag", []string{"native_4k: false", "native_4k: !!bool true"}, func(t *testing.T, ten *Tenant) {
			if !ten.Packages.Native4K {
				t.Error("native_4k not set")
			}
		}},
		{"null bool is absent", []string{"native_4k: false", "native_4k:"}, func(t *testing.T, ten *Tenant) {
			if ten.Packages.Native4K {
				t.Error("native_4k set")
			}
		}},
		{"double-quoted number as string", []string{"name: Acme", `name: "42"`}, func(t *testing.T, ten *Tenant) {
			if ten.Name != "42" {
				t.Errorf("name = %q", ten.Name)
			}
		}},
		{"single-quoted boolean as string", []string{"name: Acme", `name: 'true'`}, func(t *testing.T, ten *Tenant) {
			if ten.Name != "true" {
				t.Errorf("name = %q", ten.Name)
			}
		}},
		{"plain text with digits and spaces", []string{"name: Acme", "name: Acme 2.5 Inc."}, func(t *testing.T, ten *Tenant) {
			if ten.Name != "Acme 2.5 Inc." {
				t.Errorf("name = %q", ten.Name)
			}
		}},
		{"explicit !!str tag", []string{"name: Acme", "name: !!str 42"}, func(t *testing.T, ten *Tenant) {
			if ten.Name != "42" {
				t.Errorf("name = %q", ten.Name)
			}
		}},
		{"block scalar", []string{"name: Acme", "name: >-\n      Acme\n      Films"}, func(t *testing.T, ten *Tenant) {
			if ten.Name != "Acme Films" {
				t.Errorf("name = %q", ten.Name)
			}
		}},
		{"quoted 2.5 family", []string{"family: fast-2.0", `family: "2.5"`}, func(t *testing.T, ten *Tenant) {
			if a, _ := ten.Alias("acme-fast"); a.Family != Family(contract.Family25) {
				t.Errorf("family = %q", a.Family)
			}
		}},
		{"single-quoted 2.5 family", []string{"family: fast-2.0", `family: '2.5'`}, func(t *testing.T, ten *Tenant) {
			if a, _ := ten.Alias("acme-fast"); a.Family != Family(contract.Family25) {
				t.Errorf("family = %q", a.Family)
			}
		}},
		{"quoted alias name and rate key", []string{"alias: acme-fast", `alias: "2.5"`, "acme-fast: 1.5", `"2.5": 1.5`}, func(t *testing.T, ten *Tenant) {
			if r, ok := ten.Rates.NativeRate("2.5"); !ok || r != 1_500_000 {
				t.Errorf("rate = %d,%v", r, ok)
			}
		}},
		{"bare rate", []string{"acme-fast: 1.5", "acme-fast: 2.50"}, func(t *testing.T, ten *Tenant) {
			if r, ok := ten.Rates.NativeRate("acme-fast"); !ok || r != 2_500_000 {
				t.Errorf("rate = %d,%v", r, ok)
			}
		}},
		{"quoted rate", []string{"acme-fast: 1.5", `acme-fast: "2.50"`}, func(t *testing.T, ten *Tenant) {
			if r, ok := ten.Rates.NativeRate("acme-fast"); !ok || r != 2_500_000 {
				t.Errorf("rate = %d,%v", r, ok)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.NewReplacer(tt.repl...).Replace(typed)
			if src == typed {
				t.Fatalf("case did not change the catalog")
			}
			c, err := Parse("c.yaml", []byte(src))
			if err != nil {
				t.Fatalf("rejected: %v", err)
			}
			ten, _ := c.Tenant("acme")
			tt.check(t, ten)
		})
	}
}

// Anchors, aliases and merge keys are followed: a wrong scalar reached through them is reported
// (once, at its own line), and a right one is accepted.
func TestParseFollowsAnchorsAndMergeKeys(t *testing.T) {
	t.Parallel()
	const src = `tenants:
  - id: a
    name: A
    currency: EUR
    packages: &pk
      native_4k: NATIVE
  - id: b
    name: B
    currency: EUR
    packages:
      <<: *pk
      enhance_8k: true
  - id: c
    name: C
    currency: EUR
    packages: *pk
`
	c, err := Parse("c.yaml", []byte(strings.Replace(src, "NATIVE", "true", 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if ten, _ := c.Tenant(id); !ten.Packages.Native4K {
			t.Errorf("tenant %s: native_4k not set", id)
		}
	}
	_, err = Parse("c.yaml", []byte(strings.Replace(src, "NATIVE", "yes", 1)))
	if want := "catalog c.yaml: line 6: packages.native_4k must be true or false, not yes"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
}

// parseEdited parses base with old replaced by new and returns the error, failing the test
// when the edit changed nothing or the edited catalog was accepted.
func parseEdited(t *testing.T, base, old, new string) error {
	t.Helper()
	src := strings.Replace(base, old, new, 1)
	if src == base {
		t.Fatalf("case did not change the catalog")
	}
	_, err := Parse("c.yaml", []byte(src))
	if err == nil {
		t.Fatal("accepted")
	}
	return err
}

// A tenant's weight is 1 unless the catalog says otherwise; Weights lists the others, which is
// what the job engine's claims read.
func TestTenantWeightDefaultsToOne(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if tn, _ := c.Tenant("acme"); tn.Weight() != 1 || len(c.Weights()) != 0 {
		t.Fatalf("weight %d, weights %v; want 1 and none listed", tn.Weight(), c.Weights())
	}
	c, err = Parse("c.yaml", []byte(strings.Replace(minimal, "    currency: EUR\n", "    currency: EUR\n    weight: 3\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Weights(); len(got) != 1 || got["acme"] != 3 {
		t.Fatalf("weights %v; want acme: 3", got)
	}
}

// Webhooks are off unless the operator switches them on; the endpoint bound then defaults.
func TestTenantWebhooksOffByDefault(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if tn, _ := c.Tenant("acme"); tn.WebhooksEnabled() || tn.WebhookEndpointLimit() != 0 {
		t.Fatalf("enabled %v, limit %d; want off, 0", tn.WebhooksEnabled(), tn.WebhookEndpointLimit())
	}
	for _, tc := range []struct {
		yaml string
		want int
	}{
		{"    webhooks: {enabled: true}\n", DefaultMaxWebhookEndpoints},
		{"    webhooks: {enabled: true, max_endpoints: 2}\n", 2},
		{"    webhooks: {enabled: false, max_endpoints: 2}\n", 0},
	} {
		c, err := Parse("c.yaml", []byte(strings.Replace(minimal, "    currency: EUR\n", "    currency: EUR\n"+tc.yaml, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if tn, _ := c.Tenant("acme"); tn.WebhookEndpointLimit() != tc.want {
			t.Errorf("%q: limit %d; want %d", tc.yaml, tn.WebhookEndpointLimit(), tc.want)
		}
	}
}

// One file with a problem of every kind: each is listed, in file order, then the checks'
// findings, and none hides another.
func TestCheckListsEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	src := strings.NewReplacer(
		"    name: Acme\n", "    name: Acme\n    colour: red\n", // unknown key (line 4)
		"native_4k: false", "native_4k: yes", // wrong scalar
		"upstream: sandbox", "upstream: elsewhere", // unknown account
		"acme-fast: 1.5", "acme-fast: -1", // bad rate
	).Replace(typed)
	c, p := Check("c.yaml", []byte(src))
	if p == nil {
		t.Fatal("accepted")
	}
	if c == nil {
		t.Fatal("no partial catalog for the caller's own checks")
	}
	want := []string{
		`line 4: unknown key "colour"`,
		"packages.native_4k must be true or false, not yes",
		`rate "-1" must not be negative`,
		`tenant "acme" alias "acme-fast": unknown upstream "elsewhere"`,
	}
	if len(p.List) < len(want) {
		t.Fatalf("%d problems, want at least %d:\n%s", len(p.List), len(want), p)
	}
	for i, w := range want {
		found := -1
		for j, got := range p.List {
			if strings.Contains(got, w) {
				found = j
			}
		}
		if found < 0 {
			t.Errorf("no problem says %q:\n%s", w, p)
		} else if found < i {
			t.Errorf("%q is problem %d, before the earlier findings:\n%s", w, found, p)
		}
	}
	if _, err := Parse("c.yaml", []byte(src)); err == nil || err.Error() != p.Error() {
		t.Errorf("Parse's error %v is not Check's problems", err)
	}
}

func TestTenantSpendCapsAreOptionalAmounts(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		yaml           string
		daily, monthly money.Cap
	}{
		{"      monthly: 100.50\n", money.NoCap, money.CapOf(100_500_000)},
		// 0 is a cap that lets nothing be spent, as in the admin API and the CLI; none is no cap.
		{"      daily: 0\n      monthly: none\n", money.CapOf(0), money.NoCap},
		{"      daily: NONE\n      monthly: 1000000000000\n", money.NoCap, money.CapOf(money.MaxAmount)},
	} {
		c, err := Parse("c.yaml", []byte(strings.Replace(minimal, "    currency: EUR\n", "    currency: EUR\n    spend_caps:\n"+tt.yaml, 1)))
		if err != nil {
			t.Fatalf("%q: %v", tt.yaml, err)
		}
		acme, _ := c.Tenant("acme")
		if d, m := acme.SpendCaps.Amounts(); d != tt.daily || m != tt.monthly {
			t.Errorf("%q: caps %s and %s, want %s and %s", tt.yaml, d, m, tt.daily, tt.monthly)
		}
	}
	if _, err := Parse("c.yaml", []byte(strings.Replace(minimal, "acme-fast: 1.5", "acme-fast: 1000000", 1))); err != nil {
		t.Errorf("a rate at the ceiling: %v", err)
	}
}
