package catalog

import (
	"errors"
	"strings"
	"testing"
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
