package catalog

import (
	"strings"
	"testing"

	"mediagen/internal/contract"
)

const withVertex = `upstreams:
  - name: veo-vertex
    kind: vertex
    base_url: https://us-central1-aiplatform.googleapis.com
    project: my-project
    location: us-central1
    api_key_file: /etc/mediagen/vertex-sa.json
tenants:
  - id: acme
    name: Acme
    currency: EUR
    aliases:
      - alias: acme-veo
        product: native
        family: fast-2.0
        upstream: veo-vertex
        model: veo-3.0-generate-001
    rates:
      native: {acme-veo: 1.2}
`

func TestVertexAccountLoadsAndServesVideoOnly(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(withVertex))
	if err != nil {
		t.Fatal(err)
	}
	acc, ok := c.Upstream("veo-vertex")
	if !ok || acc.Kind != KindVertex || !acc.Kind.Remote() || !acc.Kind.Serves(ProductNative) || !acc.Kind.Serves(ProductProduction) ||
		acc.Project != "my-project" || acc.Location != "us-central1" || acc.TokenURL != "" {
		t.Fatalf("account %+v", acc)
	}
	if acc.Kind.Serves(ProductSpeech) || acc.Kind.Serves(ProductEnhancement) {
		t.Fatal("vertex serves video generation only")
	}
}

// A vertex account names its project and location (and an https token_url, if any); no other
// kind names them.
func TestVertexAccountFieldsAreCheckedAtLoad(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"no project", "    project: my-project\n", "", "project is required for kind vertex"},
		{"no location", "    location: us-central1\n", "", "location is required for kind vertex"},
		{"a project with a slash", "project: my-project", "project: my/project", "project is required for kind vertex"},
		{"an http token_url", "    location: us-central1\n", "    location: us-central1\n    token_url: http://oauth2.googleapis.com/token\n", "token_url must be an https URL"},
		{"a project on another kind", "kind: vertex", "kind: gemini", "project, location, token_url, storage_uri and storage_url apply to kind vertex only"},
		{"a storage_uri that is not gs://", "    location: us-central1\n", "    location: us-central1\n    storage_uri: https://bucket/x\n", "storage_uri must be a Cloud Storage prefix"},
		{"a storage_url without storage_uri", "    location: us-central1\n", "    location: us-central1\n    storage_url: https://storage.googleapis.com\n", "applies with storage_uri only"},
		{"no key file", "    api_key_file: /etc/mediagen/vertex-sa.json\n", "", "give exactly one of api_key_env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(strings.Replace(withVertex, tc.from, tc.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	ok := strings.Replace(withVertex, "    location: us-central1\n", "    location: us-central1\n    token_url: https://oauth2.googleapis.com/token\n"+
		"    storage_uri: gs://my-bucket/veo/\n    storage_url: https://storage.googleapis.com\n", 1)
	if _, err := Parse("c.yaml", []byte(ok)); err != nil {
		t.Fatalf("an https token_url and a storage_uri: %v", err)
	}
}

// Vertex AI refuses what Veo cannot make as the Gemini API does, except sound: Veo 3 may be
// asked for a silent video (generateAudio false), Veo 2 never for sound.
func TestVertexRefusesWhatTheAliasesVeoModelCannotMake(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	seed := int64(1)
	native := func(edit func(*contract.NativeParams)) *contract.VideoRequest {
		n := &contract.NativeParams{Duration: 8, Resolution: "720p", Ratio: "16:9", OutputFormat: "mp4", OmniTaskType: "auto"}
		if edit != nil {
			edit(n)
		}
		return &contract.VideoRequest{Route: contract.RouteNative, Native: n}
	}
	const veo3, veo2 = "veo-3.0-generate-001", "veo-2.0-generate-001"
	for _, tt := range []struct {
		name, model string
		req         *contract.VideoRequest
		param       string
	}{
		{"Veo 3: 8 s at 720p", veo3, native(nil), ""},
		{"Veo 3: 5 s", veo3, native(func(n *contract.NativeParams) { n.Duration = 5 }), "metadata.duration"},
		{"Veo 3: 1080p at 9:16", veo3, native(func(n *contract.NativeParams) { n.Resolution = "1080p"; n.Ratio = "9:16" }), "metadata.resolution"},
		{"Veo 3: silent", veo3, native(func(n *contract.NativeParams) { n.GenerateAudio = &no }), ""},
		{"Veo 3: with sound", veo3, native(func(n *contract.NativeParams) { n.GenerateAudio = &yes }), ""},
		{"Veo 2: 6 s silent", veo2, native(func(n *contract.NativeParams) { n.Duration = 6; n.GenerateAudio = &no }), ""},
		{"Veo 2: with sound", veo2, native(func(n *contract.NativeParams) { n.GenerateAudio = &yes }), "metadata.generate_audio"},
		{"Veo 2: 1080p", veo2, native(func(n *contract.NativeParams) { n.Resolution = "1080p" }), "metadata.resolution"},
		{"a seed", veo3, func() *contract.VideoRequest { r := native(nil); r.Seed = &seed; return r }(), "seed"},
		{"1:1", veo3, native(func(n *contract.NativeParams) { n.Ratio = "1:1" }), "metadata.ratio"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			param, msg := KindVertex.RefuseModel(tt.model, tt.req)
			if param != tt.param || (param != "" && !strings.Contains(msg, "available")) {
				t.Fatalf("refused %q (%s), want %q", param, msg, tt.param)
			}
		})
	}
}

// A production alias on Vertex AI at 1080p needs Veo 3, as on the Gemini API.
func TestVertexProductionAliasAt1080pNeedsVeo3(t *testing.T) {
	t.Parallel()
	var c Catalog
	a := &Alias{Name: "acme-prod", Model: "veo-2.0-generate-001"}
	a.GenerateResolution = "1080p"
	errs := c.checkProductionGeneration(&Tenant{ID: "acme"}, a, UpstreamAccount{Name: "veo", Kind: KindVertex})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "(kind vertex) cannot generate model veo-2.0-generate-001") {
		t.Fatalf("errs %v", errs)
	}
}
