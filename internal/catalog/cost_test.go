package catalog

import (
	"strings"
	"testing"
)

// withCost has an ark account with a cost block, sold above cost on one alias and below on
// another, and an ffmpeg account with a per-second cost.
const withCost = `upstreams:
  - name: ark-cn
    kind: ark
    base_url: https://ark.example.com/api/v3
    api_key_env: ARK_KEY
    cost: {currency: USD, per_million_tokens: 0.9, per_second: {480p: 0.01, 720p: 0.02, 1080p: 0.04}}
  - name: local-enhance
    kind: ffmpeg
    cost: {currency: USD, per_second: {720p: 0.5, 4k: 2}}
  - name: free
    kind: ffmpeg
tenants:
  - id: acme
    name: Acme
    currency: USD
    aliases:
      - alias: acme-fast
        product: native
        family: fast-2.0
        upstream: ark-cn
        model: up-fast
      - alias: acme-cheap
        product: native
        family: fast-2.0
        upstream: ark-cn
        model: up-cheap
      - alias: acme-enhance
        product: enhancement
        route: lite
        upstream: local-enhance
        model: up-enhance
    rates:
      native:
        acme-fast: 1.5
        acme-cheap: 0.5
      enhancement:
        lite: {up_to_720p: 1, 1080p: 1, 2k: 1, 4k: 1.25}
  - id: euro
    name: Euro
    currency: EUR
    aliases:
      - alias: euro-cheap
        product: native
        family: fast-2.0
        upstream: ark-cn
        model: up-euro
    rates:
      native:
        euro-cheap: 0.1
`

func TestAccountCostParsesExactly(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(withCost))
	if err != nil {
		t.Fatal(err)
	}
	ark, _ := c.Upstream("ark-cn")
	if r, ok := ark.Cost.TokenRate(); !ok || r != 900_000 {
		t.Errorf("per_million_tokens %d %v, want 900000", r, ok)
	}
	if r, ok := ark.Cost.SecondRate("1080p"); !ok || r != 40_000 {
		t.Errorf("per_second 1080p %d %v, want 40000", r, ok)
	}
	if _, ok := ark.Cost.SecondRate("4k"); ok {
		t.Error("per_second 4k is not declared: want unknown")
	}
	if _, ok := ark.Cost.CharacterRate(); ok {
		t.Error("per_character is not declared: want unknown")
	}
	free, _ := c.Upstream("free")
	if free.Cost != nil {
		t.Errorf("an account without cost has %+v", free.Cost)
	}
	if _, ok := free.Cost.TokenRate(); ok {
		t.Error("an absent cost block must be unknown")
	}
}

func TestAliasSoldBelowCostIsAWarningWithFigures(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(withCost))
	if err != nil {
		t.Fatalf("a catalog that only sells below cost must load: %v", err)
	}
	want := []string{
		`tenant "acme" alias "acme-cheap": sold below cost: rates.native 0.5 USD per million tokens, upstream "ark-cn" costs 0.9 USD per million tokens`,
		// up_to_720p at 1 is above its cost 0.5; 4k at 1.25 is below 2. The EUR tenant's
		// alias is not compared with a USD cost.
		`tenant "acme" alias "acme-enhance": sold below cost: rates.enhancement.lite.4k 1.25 USD per second, upstream "local-enhance" costs 2 USD per second`,
	}
	got := c.Warnings()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestCostMistakesStopTheLoad(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, old, new, want string }{
		{"a cost needs a currency", "cost: {currency: USD, per_second: {720p: 0.5, 4k: 2}}", "cost: {per_second: {720p: 0.5}}",
			`upstream "local-enhance": cost.currency "" must be a three-letter ISO 4217 code`},
		{"an unknown resolution is named", "{720p: 0.5, 4k: 2}", "{720p: 0.5, 5k: 2}",
			`upstream "local-enhance": cost.per_second: "5k" is not a resolution`},
		{"a cost with no unit is refused", "cost: {currency: USD, per_second: {720p: 0.5, 4k: 2}}", "cost: {currency: USD}",
			`upstream "local-enhance": cost names no unit`},
		{"a negative cost is refused", "per_million_tokens: 0.9", "per_million_tokens: -0.9", "line 6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(withCost, tt.old, tt.new, 1)
			if src == withCost {
				t.Fatal("the edit did not apply")
			}
			_, err := Parse("c.yaml", []byte(src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
