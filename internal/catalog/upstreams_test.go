package catalog

import (
	"errors"
	"strings"
	"testing"

	"mediagen/internal/contract"
)

// withUpstreams is minimal with an upstreams section and an enhancement alias.
const withUpstreams = `upstreams:
  - name: local-enhance
    kind: ffmpeg
  - name: local-speech
    kind: espeak
    max_concurrent: 2
tenants:
  - id: acme
    name: Acme
    currency: EUR
    aliases:
      - alias: acme-fast
        product: native
        family: fast-2.0
        upstream: sandbox
        model: up-fast
      - alias: acme-enhance
        product: enhancement
        route: lite
        upstream: local-enhance
        model: up-enhance
    rates:
      native:
        acme-fast: 1.5
      enhancement:
        lite: {up_to_720p: 1, 1080p: 1, 2k: 1, 4k: 1}
`

func TestUpstreamAccountsBindAliasesByName(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(withUpstreams))
	if err != nil {
		t.Fatal(err)
	}
	acme, _ := c.Tenant("acme")
	a, _ := acme.Alias("acme-enhance")
	acc, ok := c.Upstream(string(a.Upstream))
	if !ok || acc.Kind != KindFFmpeg || acc.Name != "local-enhance" {
		t.Fatalf("account of acme-enhance: %+v %v", acc, ok)
	}
	if sb, ok := c.Upstream("sandbox"); !ok || sb.Kind != KindSandbox {
		t.Errorf("the built-in sandbox: %+v %v", sb, ok)
	}
	var names []string
	for _, u := range c.Accounts() {
		names = append(names, u.Name)
	}
	if got := strings.Join(names, " "); got != "sandbox local-enhance local-speech" {
		t.Errorf("accounts %s", got)
	}
}

func TestUpstreamMistakesStopTheLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, old, new, want string
	}{
		{"an account that cannot serve the product is refused",
			"upstream: sandbox", "upstream: local-enhance", `upstream "local-enhance" (kind ffmpeg) cannot serve product native`},
		{"a speech engine cannot enhance",
			"upstream: local-enhance", "upstream: local-speech", `upstream "local-speech" (kind espeak) cannot serve product enhancement`},
		{"an unknown kind names value and line", "kind: ffmpeg", "kind: ark9", `line 3: unknown upstream kind "ark9"`},
		{"a missing kind is refused", "    kind: espeak\n", "", `upstream "local-speech": kind is required`},
		{"a duplicate name is refused", "name: local-speech", "name: local-enhance", `upstream "local-enhance" is defined twice`},
		{"sandbox is built in", "name: local-speech", "name: sandbox", `upstream "sandbox" is defined twice (sandbox is built in)`},
		{"a negative concurrency is refused", "max_concurrent: 2", "max_concurrent: -1", "max_concurrent and max_in_flight must not be negative"},
		{"an unknown key of an account names its line", "    kind: ffmpeg\n", "    kind: ffmpeg\n    api_key: x\n", `line 4: unknown key "api_key"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := parseEdited(t, withUpstreams, tt.old, tt.new)
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "c.yaml") {
				t.Fatalf("error %q does not contain %q and the file name", err, tt.want)
			}
		})
	}
}

const withArk = `upstreams:
  - name: ark-main
    kind: ark
    base_url: https://ark.cn-beijing.volces.com/api/v3
    api_key_env: ARK_API_KEY
tenants:
  - id: acme
    name: Acme
    currency: EUR
    aliases:
      - alias: acme-fast
        product: native
        family: fast-2.0
        upstream: ark-main
        model: seedance-1-0-pro
    rates:
      native:
        acme-fast: 1.5
`

func TestRemoteAccountsNameWhereTheirKeyIsNeverTheKey(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(withArk))
	if err != nil {
		t.Fatal(err)
	}
	acc, _ := c.Upstream("ark-main")
	env := map[string]string{"ARK_API_KEY": "  sk-secret-123\n"}
	getenv := func(k string) string { return env[k] }
	noFile := func(string) ([]byte, error) { return nil, errors.New("no such file") }
	if key, err := acc.APIKey(getenv, noFile); err != nil || key != "sk-secret-123" {
		t.Fatalf("key from the environment: %q %v", key, err)
	}
	env["ARK_API_KEY"] = " "
	if _, err := acc.APIKey(getenv, noFile); err == nil || !strings.Contains(err.Error(), "ark-main") || !strings.Contains(err.Error(), "ARK_API_KEY") {
		t.Errorf("an empty key: %v; want the account and the variable named", err)
	}
	acc.APIKeyEnv, acc.APIKeyFile = "", "/run/secrets/ark"
	if _, err := acc.APIKey(getenv, noFile); err == nil || !strings.Contains(err.Error(), "/run/secrets/ark") || strings.Contains(err.Error(), "no such file") {
		t.Errorf("an unreadable key file: %v", err)
	}
	file := func(string) ([]byte, error) { return []byte("sk-from-file\n"), nil }
	if key, err := acc.APIKey(getenv, file); err != nil || key != "sk-from-file" {
		t.Errorf("key from a file: %q %v", key, err)
	}
}

func TestRemoteAccountMistakesStopTheLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, old, new, want string
	}{
		{"plain http is refused", "base_url: https://", "base_url: http://", "base_url must be an https URL"},
		{"no key location is refused", "    api_key_env: ARK_API_KEY\n", "", "give exactly one of api_key_env"},
		{"two key locations are refused", "    api_key_env: ARK_API_KEY\n", "    api_key_env: ARK_API_KEY\n    api_key_file: /k\n", "give exactly one of api_key_env"},
		{"ark does not serve speech", "        product: native\n        family: fast-2.0\n", "        product: speech\n", `upstream "ark-main" (kind ark) cannot serve product speech`},
		{"a local kind takes no credentials", "kind: ark", "kind: ffmpeg", "do not apply to kind ffmpeg"},
		{"a timeout beyond ten minutes is refused", "    api_key_env: ARK_API_KEY\n", "    api_key_env: ARK_API_KEY\n    timeout_seconds: 601\n", "timeout_seconds must be 1 to 600"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := parseEdited(t, withArk, tt.old, tt.new)
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// withSplitProduction binds a production alias's generation to ark and its enhancement to a
// local ffmpeg account, and speech to an openai account.
const withSplitProduction = `upstreams:
  - name: ark-main
    kind: ark
    base_url: https://ark.cn-beijing.volces.com/api/v3
    api_key_env: ARK_API_KEY
  - name: local-enhance
    kind: ffmpeg
  - name: openai-main
    kind: openai
    base_url: https://api.openai.com/v1
    api_key_file: /run/secrets/openai
    voice: nova
tenants:
  - id: acme
    name: Acme
    currency: EUR
    packages:
      production: {enabled: true, resolutions: [1080p]}
    aliases:
      - alias: acme-production
        product: production
        tier: standard
        upstream: ark-main
        enhance_upstream: local-enhance
        model: seedance-1-0-pro
        generate_resolution: 720p
        enhance_model: up-enhance
      - alias: acme-speech
        product: speech
        upstream: openai-main
        model: gpt-4o-mini-tts
    rates:
      production:
        standard:
          1080p: {no_video_input: 0.10, video_input: 0.12}
      speech: 0.0002
`

func TestProductionHalvesBindToTheirOwnAccounts(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(withSplitProduction))
	if err != nil {
		t.Fatal(err)
	}
	acme, _ := c.Tenant("acme")
	p, _ := acme.Alias("acme-production")
	if p.Upstream != "ark-main" || p.EnhancementUpstream() != "local-enhance" {
		t.Errorf("production halves: %s and %s", p.Upstream, p.EnhancementUpstream())
	}
	if acc, _ := c.Upstream("openai-main"); acc.Voice != "nova" || !acc.Kind.Remote() || !acc.Kind.Serves(ProductSpeech) {
		t.Errorf("openai account %+v", acc)
	}
	tests := []struct {
		name, old, new, want string
	}{
		{"an enhancement half on an account that cannot enhance",
			"        enhance_upstream: local-enhance\n", "", `the enhancement half's upstream "ark-main" (kind ark) cannot serve enhancement`},
		{"an unknown enhancement account", "enhance_upstream: local-enhance", "enhance_upstream: nowhere", `unknown enhance_upstream "nowhere"`},
		{"a generation resolution the account cannot make", "generate_resolution: 720p", "generate_resolution: 4k", "cannot generate at generate_resolution 4k"},
		{"openai generates at 720p only", "        upstream: ark-main\n", "        upstream: openai-main\n", ""},
		{"openai at 1080p is refused", "        upstream: ark-main\n        enhance_upstream: local-enhance\n        model: seedance-1-0-pro\n        generate_resolution: 720p",
			"        upstream: openai-main\n        enhance_upstream: local-enhance\n        model: sora-2\n        generate_resolution: 1080p", `upstream "openai-main" (kind openai) cannot generate at generate_resolution 1080p`},
		{"enhance_upstream applies to production only", "        model: gpt-4o-mini-tts\n", "        model: gpt-4o-mini-tts\n        enhance_upstream: local-enhance\n", "enhance_upstream does not apply to product speech"},
		{"voice applies to openai only", "    api_key_env: ARK_API_KEY\n", "    api_key_env: ARK_API_KEY\n    voice: nova\n", "voice applies to kinds openai, elevenlabs and seedspeech only"},
		{"ark does not speak", "        upstream: openai-main\n", "        upstream: ark-main\n", `upstream "ark-main" (kind ark) cannot serve product speech`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.want == "" {
				if _, err := Parse("c.yaml", []byte(strings.Replace(withSplitProduction, tt.old, tt.new, 1))); err != nil {
					t.Fatalf("loads: %v", err)
				}
				return
			}
			err := parseEdited(t, withSplitProduction, tt.old, tt.new)
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// A contract-valid request a kind cannot serve is refused at submission, naming the field.
func TestKindsRefuseWhatTheirAPIsCannotDo(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	seed := int64(3)
	native := func(edit func(*contract.NativeParams)) *contract.VideoRequest {
		n := &contract.NativeParams{Duration: 8, Resolution: "720p", Ratio: "16:9", OutputFormat: "mp4", OmniTaskType: "auto"}
		if edit != nil {
			edit(n)
		}
		return &contract.VideoRequest{Route: contract.RouteNative, Native: n}
	}
	frame := func(r *contract.VideoRequest, role contract.ContentRole) *contract.VideoRequest {
		r.Content = append(r.Content, contract.ContentItem{Type: contract.TypeImage, Role: role, URL: "https://x/a.png"})
		return r
	}
	tests := []struct {
		name  string
		kind  UpstreamKind
		req   *contract.VideoRequest
		param string
	}{
		{"ark makes 1080p", KindArk, native(func(n *contract.NativeParams) { n.Resolution = "1080p" }), ""},
		{"ark cannot make 4k", KindArk, native(func(n *contract.NativeParams) { n.Resolution = "4k" }), "metadata.resolution"},
		{"ark cannot write mov", KindArk, native(func(n *contract.NativeParams) { n.OutputFormat = "mov" }), "metadata.output_format"},
		{"ark makes at most 15 s", KindArk, native(func(n *contract.NativeParams) { n.Duration = 20 }), "metadata.duration"},
		{"openai takes 16:9 at 720p for 8 s", KindOpenAI, native(nil), ""},
		{"openai takes the model's default duration", KindOpenAI, native(func(n *contract.NativeParams) { n.Duration = -1 }), ""},
		{"openai cannot make 1:1", KindOpenAI, native(func(n *contract.NativeParams) { n.Ratio = "1:1" }), "metadata.ratio"},
		{"openai cannot make adaptive from text", KindOpenAI, native(func(n *contract.NativeParams) { n.Ratio = "adaptive" }), "metadata.ratio"},
		{"openai follows a first frame's shape", KindOpenAI, frame(native(func(n *contract.NativeParams) { n.Ratio = "adaptive" }), contract.RoleFirstFrame), ""},
		{"openai takes no last frame", KindOpenAI, frame(frame(native(func(n *contract.NativeParams) { n.Ratio = "adaptive" }), contract.RoleFirstFrame), contract.RoleLastFrame), "metadata.content"},
		{"openai takes no reference image", KindOpenAI, frame(native(nil), contract.RoleReferenceImage), "metadata.content"},
		{"openai makes 4, 8 or 12 s", KindOpenAI, native(func(n *contract.NativeParams) { n.Duration = 5 }), "metadata.duration"},
		{"openai always makes sound", KindOpenAI, native(func(n *contract.NativeParams) { n.GenerateAudio = &no }), "metadata.generate_audio"},
		{"openai with sound asked", KindOpenAI, native(func(n *contract.NativeParams) { n.GenerateAudio = &yes }), ""},
		{"openai takes no seed", KindOpenAI, func() *contract.VideoRequest { r := native(nil); r.Seed = &seed; return r }(), "seed"},
		{"openai takes no task type", KindOpenAI, native(func(n *contract.NativeParams) { n.OmniTaskType = "edit" }), "metadata.omni_reference_task_type"},
		{"openai checks production's generation", KindOpenAI, &contract.VideoRequest{Route: contract.RouteProduction,
			Production: &contract.ProductionParams{Ratio: "4:3", Duration: 8}}, "metadata.ratio"},
		{"the sandbox does everything", KindSandbox, native(func(n *contract.NativeParams) { n.Resolution = "4k"; n.OutputFormat = "mov" }), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			param, msg := tt.kind.Refuse(tt.req)
			if param != tt.param || (param != "" && msg == "") {
				t.Errorf("refused %q (%s), want %q", param, msg, tt.param)
			}
		})
	}
	speech := &contract.SpeechRequest{Text: "hi", References: []contract.SpeechReference{{Type: "audio_url", URL: "https://x/a.mp3"}}}
	if p, _ := KindOpenAI.RefuseSpeech(speech); p != "metadata.references" {
		t.Errorf("openai speech with references: %q", p)
	}
	// espeak speaks with its own voice: it refuses references rather than ignore them.
	if p, _ := KindEspeak.RefuseSpeech(speech); p != "metadata.references" {
		t.Errorf("espeak speech with references: %q", p)
	}
}

func TestResultHostsBoundWhereResultsAreRead(t *testing.T) {
	t.Parallel()
	acc := UpstreamAccount{ResultHosts: []string{"*.volces.com", "cdn.example.com", "127.0.0.1"}}
	allowed := acc.ResultHostAllowed()
	for host, want := range map[string]bool{
		"ark-content.tos-cn-beijing.volces.com": true, "a.volces.com": true, "volces.com": false, "evilvolces.com": false,
		"cdn.example.com": true, "CDN.example.com.": true, "x.cdn.example.com": false, "127.0.0.1": true, "127.0.0.2": false,
	} {
		if got := allowed(host); got != want {
			t.Errorf("%s: allowed %v, want %v", host, got, want)
		}
	}
	if (UpstreamAccount{}).ResultHostAllowed() != nil {
		t.Error("an account without result_hosts bounds nothing")
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"an entry must be a host name", "    api_key_env: ARK_API_KEY\n", "    api_key_env: ARK_API_KEY\n    result_hosts: [\"https://cdn.example.com\"]\n", `result_hosts entry "https://cdn.example.com"`},
		{"a wildcard needs a domain under it", "    api_key_env: ARK_API_KEY\n", "    api_key_env: ARK_API_KEY\n    result_hosts: [\"*.com\"]\n", `result_hosts entry "*.com"`},
		{"local kinds read no result links", "kind: ark", "kind: ffmpeg\n    result_hosts: [a.example.com]", "result_hosts do not apply to kind ffmpeg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := parseEdited(t, withArk, tc.old, tc.new); !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}
