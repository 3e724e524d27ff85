package catalog

import (
	"errors"
	"strings"
	"testing"

	"mediagen/internal/contract"
)

// withKling binds a native alias to a kling account.
const withKling = `upstreams:
  - name: kling-main
    kind: kling
    base_url: https://api-singapore.klingai.com
    access_key_env: KLING_ACCESS_KEY
    secret_key_file: /run/secrets/kling-secret
tenants:
  - id: acme
    name: Acme
    currency: EUR
    aliases:
      - alias: acme-kling
        product: native
        family: fast-2.0
        upstream: kling-main
        model: kling-v2-1
    rates:
      native:
        acme-kling: 1.5
`

func TestKlingAccountReadsBothKeysAndNeverShowsThem(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(withKling))
	if err != nil {
		t.Fatal(err)
	}
	acc, _ := c.Upstream("kling-main")
	env := map[string]string{"KLING_ACCESS_KEY": " ak-123\n"}
	getenv := func(k string) string { return env[k] }
	file := func(p string) ([]byte, error) {
		if p == "/run/secrets/kling-secret" {
			return []byte("sk-456\n"), nil
		}
		return nil, errors.New("no such file")
	}
	access, secret, err := acc.KlingKeys(getenv, file)
	if err != nil || access != "ak-123" || secret != "sk-456" {
		t.Fatalf("keys: %q %q %v", access, secret, err)
	}
	if key, err := acc.APIKey(getenv, file); err != nil || key != "ak-123" {
		t.Errorf("APIKey of a kling account (serve's check): %q %v", key, err)
	}
	noFile := func(string) ([]byte, error) { return nil, errors.New("no such file") }
	if _, err := acc.APIKey(getenv, noFile); err == nil || !strings.Contains(err.Error(), "secret key file /run/secrets/kling-secret") {
		t.Errorf("an unreadable secret: %v; want the file named", err)
	}
	env["KLING_ACCESS_KEY"] = ""
	if _, _, err := acc.KlingKeys(getenv, file); err == nil || !strings.Contains(err.Error(), "KLING_ACCESS_KEY") || strings.Contains(err.Error(), "sk-456") {
		t.Errorf("an empty access key: %v", err)
	}
}

func TestKlingAccountMistakesStopTheLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, old, new, want string
	}{
		{"no secret key is refused", "    secret_key_file: /run/secrets/kling-secret\n", "", "give exactly one of secret_key_env and secret_key_file"},
		{"two access key places are refused", "    access_key_env: KLING_ACCESS_KEY\n", "    access_key_env: KLING_ACCESS_KEY\n    access_key_file: /k\n", "give exactly one of access_key_env and access_key_file"},
		{"an api key is refused", "    access_key_env: KLING_ACCESS_KEY\n", "    access_key_env: KLING_ACCESS_KEY\n    api_key_env: K\n", "not api_key_env"},
		{"another kind takes no kling keys", "kind: kling", "kind: ark", "apply to kinds kling and ark_assets only"},
		{"a local kind takes no kling keys", "kind: kling\n    base_url: https://api-singapore.klingai.com\n", "kind: ffmpeg\n", "do not apply to kind ffmpeg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := parseEdited(t, withKling, tt.old, tt.new)
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestKlingRefusesWhatItsAPICannotDo(t *testing.T) {
	t.Parallel()
	yes := true
	seed := int64(3)
	native := func(edit func(*contract.NativeParams)) *contract.VideoRequest {
		n := &contract.NativeParams{Duration: 5, Resolution: "720p", Ratio: "16:9", OutputFormat: "mp4", OmniTaskType: "auto"}
		if edit != nil {
			edit(n)
		}
		return &contract.VideoRequest{Route: contract.RouteNative, Native: n}
	}
	frame := func(r *contract.VideoRequest, role contract.ContentRole) *contract.VideoRequest {
		r.Native.Ratio = "adaptive"
		r.Content = append(r.Content, contract.ContentItem{Type: contract.TypeImage, Role: role, URL: "https://x/a.png"})
		return r
	}
	tests := []struct {
		name  string
		req   *contract.VideoRequest
		param string
	}{
		{"5 s at 720p, 16:9", native(nil), ""},
		{"10 s at 1080p (pro), 1:1", native(func(n *contract.NativeParams) { n.Duration = 10; n.Resolution = "1080p"; n.Ratio = "1:1" }), ""},
		{"the model's default duration", native(func(n *contract.NativeParams) { n.Duration = -1 }), ""},
		{"no 480p", native(func(n *contract.NativeParams) { n.Resolution = "480p" }), "metadata.resolution"},
		{"no 8 s", native(func(n *contract.NativeParams) { n.Duration = 8 }), "metadata.duration"},
		{"no 4:3", native(func(n *contract.NativeParams) { n.Ratio = "4:3" }), "metadata.ratio"},
		{"no mov", native(func(n *contract.NativeParams) { n.OutputFormat = "mov" }), "metadata.output_format"},
		{"no sound", native(func(n *contract.NativeParams) { n.GenerateAudio = &yes }), "metadata.generate_audio"},
		{"no watermark", native(func(n *contract.NativeParams) { n.Watermark = &yes }), "metadata.watermark"},
		{"no seed", func() *contract.VideoRequest { r := native(nil); r.Seed = &seed; return r }(), "seed"},
		{"no task type", native(func(n *contract.NativeParams) { n.OmniTaskType = "edit" }), "metadata.omni_reference_task_type"},
		{"a first frame", frame(native(nil), contract.RoleFirstFrame), ""},
		{"first and last frames", frame(frame(native(nil), contract.RoleFirstFrame), contract.RoleLastFrame), ""},
		{"a last frame alone", frame(native(nil), contract.RoleLastFrame), ""},
		{"no reference image", frame(native(nil), contract.RoleReferenceImage), "metadata.content"},
		{"a prompt of 2500 characters", func() *contract.VideoRequest { r := native(nil); r.Prompt = strings.Repeat("é", 2500); return r }(), ""},
		{"no prompt of 2501 characters", func() *contract.VideoRequest { r := native(nil); r.Prompt = strings.Repeat("é", 2501); return r }(), "prompt"},
		{"production's generation is checked", &contract.VideoRequest{Route: contract.RouteProduction,
			Production: &contract.ProductionParams{Ratio: "16:9", Duration: 8}}, "metadata.duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			param, msg := KindKling.Refuse(tt.req)
			if param != tt.param || (param != "" && msg == "") {
				t.Errorf("refused %q (%s), want %q", param, msg, tt.param)
			}
		})
	}
	if rs := KindKling.GenerateResolutions(); strings.Join(rs, ",") != "720p,1080p" || !KindKling.Serves(ProductProduction) || KindKling.Serves(ProductSpeech) {
		t.Errorf("capabilities: %v", rs)
	}
}
