package catalog

import (
	"strings"
	"testing"
	"time"
)

// withRouting has three generation accounts and two enhancers; acme-fast routes across two.
const withRouting = `upstreams:
  - name: ark-cn
    kind: ark
    base_url: https://ark.cn-beijing.volces.com/api/v3
    api_key_env: ARK_CN_KEY
    max_in_flight: 4
    breaker: {failures: 3, cooldown: 30s}
  - name: ark-intl
    kind: ark
    base_url: https://ark.ap-southeast.bytepluses.com/api/v3
    api_key_env: ARK_INTL_KEY
  - name: openai-main
    kind: openai
    base_url: https://api.openai.com/v1
    api_key_env: OPENAI_KEY
  - name: enh-a
    kind: ffmpeg
  - name: enh-b
    kind: ffmpeg
  - name: speak
    kind: espeak
tenants:
  - id: acme
    name: Acme
    currency: EUR
    packages:
      production: {enabled: true, resolutions: [1080p]}
    aliases:
      - alias: acme-fast
        product: native
        family: fast-2.0
        upstreams: [ark-cn, ark-intl]
        model: seedance-1-0-pro
      - alias: acme-production
        product: production
        tier: standard
        upstreams: [ark-cn, ark-intl]
        enhance_upstreams: [enh-a, enh-b]
        model: seedance-1-0-pro
        generate_resolution: 720p
        enhance_model: up-enhance
      - alias: acme-speech
        product: speech
        upstream: speak
        model: espeak
    rates:
      native:
        acme-fast: 1.5
      production:
        standard:
          1080p: {no_video_input: 0.10, video_input: 0.12}
      speech: 0.0002
`

func TestRoutingListsBindEveryAccountInOrder(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(withRouting))
	if err != nil {
		t.Fatal(err)
	}
	acme, _ := c.Tenant("acme")
	a, _ := acme.Alias("acme-fast")
	if got := accountList(a.Accounts()); got != "ark-cn, ark-intl" || a.Upstream != "ark-cn" || a.RoutingStrategy() != StrategyPriority {
		t.Errorf("acme-fast accounts %s, upstream %s, strategy %s", got, a.Upstream, a.RoutingStrategy())
	}
	p, _ := acme.Alias("acme-production")
	if got := accountList(p.EnhancementAccounts()); got != "enh-a, enh-b" || p.EnhancementUpstream() != "enh-a" {
		t.Errorf("production enhancement accounts %s (%s)", got, p.EnhancementUpstream())
	}
	s, _ := acme.Alias("acme-speech")
	if got := accountList(s.Accounts()); got != "speak" {
		t.Errorf("a one-account alias has its one account: %s", got)
	}
	cn, _ := c.Upstream("ark-cn")
	if n, d := cn.BreakerPolicy(); n != 3 || d != 30*time.Second {
		t.Errorf("ark-cn breaker %d %s", n, d)
	}
	intl, _ := c.Upstream("ark-intl")
	if n, d := intl.BreakerPolicy(); n != DefaultBreakerFailures || d != DefaultBreakerCooldown {
		t.Errorf("default breaker %d %s", n, d)
	}
}

func TestRoutingCatalogCheckRefusesWithReasons(t *testing.T) {
	t.Parallel()
	const fast = "        upstreams: [ark-cn, ark-intl]\n        model: seedance-1-0-pro\n"
	tests := []struct {
		name, old, new, want string
	}{
		{"weighted with one weight per account is accepted", fast, "        upstreams: [ark-cn, ark-intl]\n        strategy: weighted\n        weights: [3, 1]\n        model: m\n", ""},
		{"least_busy is accepted", fast, "        upstreams: [ark-cn, ark-intl, openai-main]\n        strategy: least_busy\n        model: m\n", ""},
		{"upstream and upstreams together are refused", fast, "        upstream: ark-cn\n        upstreams: [ark-cn, ark-intl]\n        model: m\n", "give either upstream (one account) or upstreams (a list), not both"},
		{"a duplicate account is refused", fast, "        upstreams: [ark-cn, ark-cn]\n        model: m\n", `upstreams names "ark-cn" twice`},
		{"an unknown account is named", fast, "        upstreams: [ark-cn, ark-nowhere]\n        model: m\n", `unknown upstream "ark-nowhere"`},
		{"an account that cannot serve the product is named", fast, "        upstreams: [ark-cn, enh-a]\n        model: m\n", `upstream "enh-a" (kind ffmpeg) cannot serve product native`},
		{"weights without weighted are refused", fast, "        upstreams: [ark-cn, ark-intl]\n        weights: [1, 1]\n        model: m\n", "weights apply to strategy weighted only"},
		{"weighted without weights is refused", fast, "        upstreams: [ark-cn, ark-intl]\n        strategy: weighted\n        model: m\n", "strategy weighted needs weights, one per account of upstreams (2 accounts, 0 weights)"},
		{"a weight count unlike the accounts is refused", fast, "        upstreams: [ark-cn, ark-intl]\n        strategy: weighted\n        weights: [1]\n        model: m\n", "(2 accounts, 1 weights)"},
		{"a zero weight is refused", fast, "        upstreams: [ark-cn, ark-intl]\n        strategy: weighted\n        weights: [0, 1]\n        model: m\n", "weights[0] is 0"},
		{"an unknown strategy names its line", fast, "        upstreams: [ark-cn, ark-intl]\n        strategy: random\n        model: m\n", `unknown strategy "random"`},
		{"a resolution every account generates at is accepted",
			"generate_resolution: 720p", "generate_resolution: 480p", "", // both ark accounts do 480p
		},
		{"an account that cannot generate at the production resolution is named",
			"[ark-cn, ark-intl]\n        enhance_upstreams: [enh-a, enh-b]\n        model: seedance-1-0-pro\n        generate_resolution: 720p",
			"[ark-cn, openai-main]\n        enhance_upstreams: [enh-a, enh-b]\n        model: seedance-1-0-pro\n        generate_resolution: 480p",
			`upstream "openai-main" (kind openai) cannot generate at generate_resolution 480p (it does 720p)`},
		{"an enhancement list account that cannot enhance is named", "enhance_upstreams: [enh-a, enh-b]", "enhance_upstreams: [enh-a, speak]",
			`the enhancement half's upstream "speak" (kind espeak) cannot serve enhancement`},
		{"enhance_upstreams on a native alias is refused", fast, "        upstreams: [ark-cn]\n        enhance_upstreams: [enh-a]\n        model: m\n", "enhance_upstreams does not apply to product native"},
		{"a speech list over espeak and openai is accepted", "        upstream: speak\n", "        upstreams: [openai-main, speak]\n        strategy: priority\n", ""},
		{"a weighted speech list is accepted", "        upstream: speak\n", "        upstreams: [speak, openai-main]\n        strategy: weighted\n        weights: [1, 3]\n", ""},
		{"a speech list with an account that cannot speak is named", "        upstream: speak\n", "        upstreams: [speak, ark-cn]\n", `upstream "ark-cn" (kind ark) cannot serve product speech`},
		{"a speech list with an unknown account is named", "        upstream: speak\n", "        upstreams: [speak, nowhere]\n", `unknown upstream "nowhere"`},
		{"a speech_bound is accepted on a speaking account", "  - name: speak\n    kind: espeak\n", "  - name: speak\n    kind: espeak\n    speech_bound: {space_us: 50000, line_break_us: 400000, letter_us: 500000, digit_us: 750000, punctuation_us: 850000, other_us: 2350000, overhead_us: 600000, margin_percent: 10}\n", ""},
		{"a speech_bound on an account that cannot speak is refused", "  - name: enh-b\n    kind: ffmpeg\n", "  - name: enh-b\n    kind: ffmpeg\n    speech_bound: {letter_us: 1, digit_us: 1, punctuation_us: 1, other_us: 1}\n", `upstream "enh-b": speech_bound applies to accounts that serve speech`},
		{"a speech_bound with a zero class is refused", "  - name: speak\n    kind: espeak\n", "  - name: speak\n    kind: espeak\n    speech_bound: {letter_us: 1, digit_us: 0, punctuation_us: 1, other_us: 1}\n", "speech_bound needs letter_us, digit_us, punctuation_us and other_us above 0"},
		{"a negative speech_bound figure is refused", "  - name: speak\n    kind: espeak\n", "  - name: speak\n    kind: espeak\n    speech_bound: {letter_us: 1, digit_us: 1, punctuation_us: 1, other_us: 1, overhead_us: -5}\n", "speech_bound.overhead_us is -5"},
		{"an unknown speech_bound field is refused", "  - name: speak\n    kind: espeak\n", "  - name: speak\n    kind: espeak\n    speech_bound: {letters: 1}\n", "letters"},
		{"a negative breaker is refused", "{failures: 3, cooldown: 30s}", "{failures: -1, cooldown: 30s}", "breaker.failures must be 1 to 1000"},
		{"a sub-second cooldown is refused", "{failures: 3, cooldown: 30s}", "{failures: 3, cooldown: 10ms}", "breaker.cooldown must be 1s to 1h"},
		{"a cooldown that is no duration names its line", "{failures: 3, cooldown: 30s}", "{failures: 3, cooldown: soon}", `line 7: cooldown "soon" must be a duration`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(withRouting, tt.old, tt.new, 1)
			if src == withRouting {
				t.Fatal("the replacement did not apply")
			}
			_, err := Parse("c.yaml", []byte(src))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}
