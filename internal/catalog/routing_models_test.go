package catalog

import (
	"strings"
	"testing"
)

// A routed alias over accounts of two kinds names each account's model; an entry without
// one runs the alias's model.
func TestRoutingEntriesCarryEachAccountsModel(t *testing.T) {
	t.Parallel()
	src := strings.Replace(withRouting, "        upstreams: [ark-cn, ark-intl]\n        model: seedance-1-0-pro\n",
		"        upstreams:\n          - {name: ark-cn, model: seedance-1-0-lite}\n          - ark-intl\n          - name: openai-main\n            model: sora-2\n        model: seedance-1-0-pro\n", 1)
	c, err := Parse("c.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	acme, _ := c.Tenant("acme")
	a, _ := acme.Alias("acme-fast")
	if got := accountList(a.Accounts()); got != "ark-cn, ark-intl, openai-main" || a.Upstream != "ark-cn" {
		t.Fatalf("accounts %s, upstream %s", got, a.Upstream)
	}
	for acct, want := range map[Upstream]string{"ark-cn": "seedance-1-0-lite", "ark-intl": "seedance-1-0-pro", "openai-main": "sora-2", "nowhere": "seedance-1-0-pro"} {
		if got := a.ModelOf(acct); got != want {
			t.Errorf("ModelOf(%s) = %q, want %q", acct, got, want)
		}
	}
}

// Without model: every entry names its own, and the alias's model is the first entry's.
func TestRoutingEntriesWithoutAliasModel(t *testing.T) {
	t.Parallel()
	src := strings.Replace(withRouting, `        upstreams: [ark-cn, ark-intl]
        enhance_upstreams: [enh-a, enh-b]
        model: seedance-1-0-pro
        generate_resolution: 720p
        enhance_model: up-enhance
`, `        upstreams: [{name: ark-cn, model: m-cn}, {name: ark-intl, model: m-intl}]
        enhance_upstreams: [{name: enh-a, model: enh-a-model}, {name: enh-b, model: enh-b-model}]
        generate_resolution: 720p
`, 1)
	if src == withRouting {
		t.Fatal("the replacement did not apply")
	}
	c, err := Parse("c.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	acme, _ := c.Tenant("acme")
	p, _ := acme.Alias("acme-production")
	if p.Model != "m-cn" || p.ModelOf("ark-intl") != "m-intl" || p.EnhanceModel != "enh-a-model" || p.EnhanceModelOf("enh-b") != "enh-b-model" {
		t.Errorf("model %q (intl %q), enhance_model %q (enh-b %q)", p.Model, p.ModelOf("ark-intl"), p.EnhanceModel, p.EnhanceModelOf("enh-b"))
	}
}

func TestRoutingEntriesRefusedWithLines(t *testing.T) {
	t.Parallel()
	const fast = "        upstreams: [ark-cn, ark-intl]\n        model: seedance-1-0-pro\n"
	tests := []struct{ name, new, want string }{
		{"an entry without a model when the alias has none names its line",
			"        upstreams:\n          - {name: ark-cn, model: m-cn}\n          - ark-intl\n", `line 34: upstreams entry "ark-intl" has no model and the alias sets no model`},
		{"an unknown key in an entry names its line",
			"        upstreams:\n          - {name: ark-cn, modle: m-cn}\n          - ark-intl\n        model: m\n", "line 33: field modle not found in an upstreams entry"},
		{"an entry without a name is refused",
			"        upstreams:\n          - {model: m-cn}\n          - ark-intl\n        model: m\n", "line 33: an upstreams entry needs name"},
		{"an entry that is a list is refused",
			"        upstreams:\n          - [ark-cn]\n        model: m\n", "line 33: an upstreams entry is an account name or {name: ACCOUNT, model: MODEL}"},
		{"a model that is a number is refused",
			"        upstreams:\n          - {name: ark-cn, model: 2}\n        model: m\n", "line 33"},
		{"an entry's model equal to an alias name is refused",
			"        upstreams:\n          - {name: ark-cn, model: acme-speech}\n          - ark-intl\n        model: m\n", `alias "acme-speech" is also an upstream model name`},
		{"a duplicate account across both forms is refused",
			"        upstreams:\n          - {name: ark-cn, model: m-cn}\n          - ark-cn\n        model: m\n", `upstreams names "ark-cn" twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(withRouting, fast, tt.new, 1)
			if src == withRouting {
				t.Fatal("the replacement did not apply")
			}
			_, err := Parse("c.yaml", []byte(src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}
