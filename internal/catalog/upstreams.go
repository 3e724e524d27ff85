package catalog

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"mediagen/internal/contract"
	"mediagen/internal/hostname"
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
	// KindArk is Volcengine/BytePlus ModelArk content generation (the Seedance models),
	// reached over HTTPS with an API key: native generation (and production's first half).
	KindArk UpstreamKind = "ark"
	// KindOpenAI is an OpenAI-compatible API (POST /videos, POST /audio/speech): native
	// generation (and production's first half) and speech.
	KindOpenAI UpstreamKind = "openai"
	// KindKling is Kling (Kuaishou) video generation, reached over HTTPS with a JWT the
	// account signs from its access and secret keys: native generation (and production's
	// first half). upstreams_kling.go.
	KindKling UpstreamKind = "kling"
	// KindMiniMax is MiniMax's Hailuo video API (POST /v1/video_generation, task query, file
	// retrieval): native generation (and production's first half).
	KindMiniMax UpstreamKind = "minimax"
	// KindDashScope is Alibaba Cloud Model Studio (DashScope) video synthesis, the Wan
	// models, over HTTPS with an API key (China or international endpoint by base_url):
	// native generation (and production's first half). dashscope.go has its capabilities.
	KindDashScope UpstreamKind = "dashscope"
	// KindGemini is Google Veo through the Gemini API (models/{model}:predictLongRunning, its
	// operations and the keyed file download) with an x-goog-api-key: native generation (and
	// production's first half). upstreams_gemini.go has its capabilities.
	KindGemini UpstreamKind = "gemini"
	// KindElevenLabs is ElevenLabs text-to-speech (POST /v1/text-to-speech/{voice_id}, the key
	// in xi-api-key): speech only, text only, with the account's voice.
	KindElevenLabs UpstreamKind = "elevenlabs"
	// KindRunway is Runway's developer API (POST /v1/image_to_video, /v1/text_to_video, GET
	// and DELETE /v1/tasks/{id}): native generation (and production's first half).
	// upstreams_runway.go has its capabilities.
	KindRunway UpstreamKind = "runway"
	// KindMediaKit is Volcengine/BytePlus AI MediaKit's video enhancement tools (POST
	// /api/v1/tools/enhance-video-fast and /enhance-video, GET /api/v1/tasks/{id}) with a
	// Bearer API key: enhancement only (standalone, and a production alias's enhancement
	// half). upstreams_mediakit.go has its capabilities.
	KindMediaKit UpstreamKind = "mediakit"
	// KindSeedSpeech is Volcengine/BytePlus Doubao speech (openspeech): the HTTP TTS API
	// (POST /api/v1/tts) with a preset voice, or with a voice cloned from the request's
	// audio references (POST /api/v1/mega_tts/audio/upload into the account's speaker_id,
	// then /api/v1/mega_tts/status): speech only. upstreams_seedspeech.go.
	KindSeedSpeech UpstreamKind = "seedspeech"
	// KindVertex is Google Veo on Vertex AI (publishers/google/models/{model}:
	// predictLongRunning and :fetchPredictOperation in the account's project and location)
	// with OAuth2 access tokens the account's service-account key gets: native generation
	// (and production's first half). upstreams_vertex.go has its capabilities.
	KindVertex UpstreamKind = "vertex"
	// KindArkAssets is ModelArk's asset library (virtual groups and assets, real-person visual
	// validation) through its OpenAPI, signed with an access key and a secret key: no
	// product; a tenant's asset_library. upstreams_arkassets.go.
	KindArkAssets UpstreamKind = "ark_assets"
)

func (k *UpstreamKind) UnmarshalYAML(n *yaml.Node) (err error) {
	*k, err = enum(n, "upstream kind", KindSandbox, KindFFmpeg, KindEspeak, KindArk, KindOpenAI, KindKling, KindMiniMax, KindDashScope, KindGemini, KindElevenLabs, KindRunway, KindMediaKit, KindSeedSpeech, KindVertex, KindArkAssets)
	return err
}

// Serves reports whether an engine of the kind can run the product; for production, whether
// it can run the generation half (the enhancement half runs on the alias's
// enhance_upstream, which must serve enhancement). The catalog check refuses an alias bound
// to an account that cannot serve it, so such a request is never accepted.
func (k UpstreamKind) Serves(p Product) bool {
	switch k {
	case KindSandbox:
		return true
	case KindFFmpeg, KindMediaKit:
		return p == ProductEnhancement
	case KindEspeak, KindElevenLabs, KindSeedSpeech:
		return p == ProductSpeech
	case KindArk, KindDashScope, KindGemini, KindVertex:
		return p == ProductNative || p == ProductProduction
	case KindOpenAI:
		return p == ProductNative || p == ProductProduction || p == ProductSpeech
	case KindKling, KindMiniMax:
		return p == ProductNative || p == ProductProduction
	case KindRunway:
		return p == ProductNative || p == ProductProduction
	}
	return false
}

// Generation capabilities of the remote kinds: what their APIs accept. The contract allows
// more; a request outside these is refused at submission (Refuse).
var (
	arkResolutions    = []string{"480p", "720p", "1080p"}
	arkMaxSeconds     = 15
	openaiResolutions = []string{"720p"}
	openaiRatios      = []string{"16:9", "9:16"}
	openaiSeconds     = []int{4, 8, 12}
)

// GenerateResolutions are the native resolutions a kind generates at (nil: all the contract's).
func (k UpstreamKind) GenerateResolutions() []string {
	switch k {
	case KindArk:
		return arkResolutions
	case KindOpenAI:
		return openaiResolutions
	case KindKling:
		return klingResolutions
	case KindMiniMax:
		return minimaxResolutions
	case KindDashScope:
		return dashscopeResolutions
	case KindGemini, KindVertex:
		return geminiResolutions
	case KindRunway:
		return runwayResolutions
	}
	return nil
}

// Refuse names what of a contract-valid video request an engine of the kind cannot do: the
// field and a sentence for the client, or "" when it can do it all. Such a request is refused
// at submission (400), never accepted and failed later. For production the generation
// half's parameters are checked (its resolution is the alias's, checked at load).
func (k UpstreamKind) Refuse(req *contract.VideoRequest) (param, message string) {
	if k == KindMediaKit {
		return refuseMediaKit(req)
	}
	g, ok := generation(req)
	if !ok {
		return "", ""
	}
	switch k {
	case KindArk:
		if g.outputFormat == "mov" {
			return "metadata.output_format", "metadata.output_format mov is not available for this model; use mp4 (the default)."
		}
		if g.resolution != "" && !slices.Contains(arkResolutions, g.resolution) {
			return "metadata.resolution", "metadata.resolution " + g.resolution + " is not available for this model; use one of " + strings.Join(arkResolutions, ", ") + "."
		}
		if g.duration > arkMaxSeconds {
			return "metadata.duration", fmt.Sprintf("metadata.duration %d is not available for this model; it makes at most %d seconds.", g.duration, arkMaxSeconds)
		}
	case KindOpenAI:
		return refuseOpenAI(req, g)
	case KindKling:
		return refuseKling(req, g)
	case KindMiniMax:
		return refuseMiniMax(req, g)
	case KindDashScope:
		return refuseDashScope(req, g)
	case KindGemini, KindVertex:
		return refuseGemini(req, g)
	case KindRunway:
		return refuseRunway(req, g)
	}
	return "", ""
}

// genParams are the generation parameters of a native or production request.
type genParams struct {
	resolution, ratio, outputFormat, taskType string
	duration                                  int
	audio, watermark                          *bool
}

func generation(req *contract.VideoRequest) (genParams, bool) {
	switch {
	case req.Native != nil:
		n := req.Native
		return genParams{n.Resolution, n.Ratio, n.OutputFormat, n.OmniTaskType, n.Duration, n.GenerateAudio, n.Watermark}, true
	case req.Production != nil:
		p := req.Production
		return genParams{"", p.Ratio, "mp4", p.OmniTaskType, p.Duration, p.GenerateAudio, p.Watermark}, true
	}
	return genParams{}, false
}

// refuseOpenAI: the videos API takes a prompt, seconds (4, 8, 12), a size (1280x720 or
// 720x1280, or the first frame's orientation with ratio adaptive) and one first-frame image;
// its videos always have sound and no visible watermark.
func refuseOpenAI(req *contract.VideoRequest, g genParams) (string, string) {
	switch {
	case g.outputFormat == "mov":
		return "metadata.output_format", "metadata.output_format mov is not available for this model; use mp4 (the default)."
	case g.resolution != "" && !slices.Contains(openaiResolutions, g.resolution):
		return "metadata.resolution", "metadata.resolution " + g.resolution + " is not available for this model; use 720p."
	case !slices.Contains(openaiRatios, g.ratio) && !(g.ratio == "adaptive" && firstFrame(req)):
		return "metadata.ratio", "metadata.ratio " + g.ratio + " is not available for this model; use 16:9 or 9:16."
	case g.duration != -1 && !slices.Contains(openaiSeconds, g.duration):
		return "metadata.duration", fmt.Sprintf("metadata.duration %d is not available for this model; use 4, 8 or 12 seconds.", g.duration)
	case g.audio != nil && !*g.audio:
		return "metadata.generate_audio", "metadata.generate_audio false is not available for this model: its videos always have sound."
	case g.watermark != nil && *g.watermark:
		return "metadata.watermark", "metadata.watermark true is not available for this model."
	case req.Seed != nil:
		return "seed", "seed is not available for this model."
	case g.taskType != "" && g.taskType != "auto":
		return "metadata.omni_reference_task_type", "metadata.omni_reference_task_type " + g.taskType + " is not available for this model."
	}
	for i, it := range req.Content {
		if it.Type != "image_url" || it.Role != "first_frame" || i > 0 {
			return "metadata.content", "This model takes at most one reference: an image_url with role first_frame."
		}
	}
	return "", ""
}

// firstFrame: the request has a first frame, whose shape then decides the output's (ratio
// adaptive).
func firstFrame(req *contract.VideoRequest) bool {
	return slices.ContainsFunc(req.Content, func(it contract.ContentItem) bool { return it.Role == contract.RoleFirstFrame })
}

// RefuseSpeech names what of a contract-valid speech request an engine of the kind cannot
// do, like Refuse.
// espeak speaks with its own voice and uses no reference, so it refuses them rather than
// ignore them; the sandbox uses them (docs/sandbox.md); seedspeech clones a voice from audio
// references and has no image-reference API (upstreams_seedspeech.go).
func (k UpstreamKind) RefuseSpeech(req *contract.SpeechRequest) (param, message string) {
	switch {
	case len(req.References) == 0:
		return "", ""
	case k == KindOpenAI || k == KindElevenLabs || k == KindEspeak:
		return "metadata.references", "This model speaks text only: metadata.references (voice or image references) are not available."
	case k == KindSeedSpeech:
		return refuseSeedSpeech(req)
	}
	return "", ""
}

// Remote reports a kind reached over the network with credentials.
func (k UpstreamKind) Remote() bool {
	return k == KindArk || k == KindOpenAI || k == KindKling || k == KindMiniMax || k == KindDashScope || k == KindGemini || k == KindElevenLabs ||
		k == KindRunway || k == KindMediaKit || k == KindSeedSpeech || k == KindVertex || k == KindArkAssets
}

// UpstreamAccount is a named upstream in the catalog's upstreams section. Aliases bind to it
// by name (alias.upstream). The account "sandbox" of kind sandbox is built in.
type UpstreamAccount struct {
	Name string       `yaml:"name"`
	Kind UpstreamKind `yaml:"kind"`
	// MaxConcurrent bounds the jobs of this account running at once in one process (local
	// engines: renders; speech has its own bound of the same size). 0: the engine's default.
	MaxConcurrent int `yaml:"max_concurrent"`
	// MaxInFlight bounds the upstream jobs of this account in flight across every replica
	// (0: no bound). A task whose turn has not come waits, queued; it never fails for it.
	MaxInFlight int `yaml:"max_in_flight"`

	// Remote kinds: the API's base URL, and where the API key is. The key itself is never in
	// the catalog: it is read from the environment variable or the file named here, at start.
	BaseURL    string `yaml:"base_url"`
	APIKeyEnv  string `yaml:"api_key_env"`
	APIKeyFile string `yaml:"api_key_file"`
	// Kinds kling and ark_assets sign their requests from two keys instead of an API key: the
	// access key and the secret key, each from an environment variable or a file
	// (upstreams_kling.go).
	AccessKeyEnv  string `yaml:"access_key_env"`
	AccessKeyFile string `yaml:"access_key_file"`
	SecretKeyEnv  string `yaml:"secret_key_env"`
	SecretKeyFile string `yaml:"secret_key_file"`
	// Kind vertex: the Google Cloud project and location (region) whose Veo models the
	// account calls, and where its service account's signed JWT is exchanged for access
	// tokens (absent: the key file's token_uri). Its api_key_file (or api_key_env) holds the
	// service account's JSON key (upstreams_vertex.go).
	Project  string `yaml:"project"`
	Location string `yaml:"location"`
	TokenURL string `yaml:"token_url"`
	// Kind vertex: storage_uri (gs://bucket/prefix/) makes Veo write its videos there, read
	// back from Cloud Storage's JSON API at storage_url (absent: https://storage.googleapis.com);
	// absent, the video comes inline in the finished operation.
	StorageURI string `yaml:"storage_uri"`
	StorageURL string `yaml:"storage_url"`
	// TimeoutSeconds bounds one call to the API, answer included (default 30, at most 600).
	TimeoutSeconds int `yaml:"timeout_seconds"`
	// RequestsPerSecond spaces the calls to the API of each process (0: no spacing).
	RequestsPerSecond int `yaml:"requests_per_second"`
	// Voice is the speech voice of an openai account (default alloy), or the voice id of an
	// elevenlabs account (required), or the preset voice_type a seedspeech account speaks
	// text-only requests with (optional: without it, such an account serves only requests
	// with audio references).
	Voice string `yaml:"voice"`
	// AppID and SpeakerID are a seedspeech account's console app id (sent in every body) and
	// the voice-clone slot (S_…) its audio references are trained into (both required).
	AppID     string `yaml:"app_id"`
	SpeakerID string `yaml:"speaker_id"`
	// ResultHosts bound where a remote account's result links are read from: host names, or
	// "*.example.com" for every name under example.com. Absent: any host the fetch policy
	// allows.
	ResultHosts []string `yaml:"result_hosts"`
	// Cost is what the account costs the operator (optional; cost.go): the usage report's
	// cost and margin, and the check's warning for an alias sold below it.
	Cost *Cost `yaml:"cost"`
	// Breaker is the account's circuit breaker (routing.go; absent: 5 failures, 60s).
	Breaker *BreakerSettings `yaml:"breaker"`
	// SpeechBound is the account's speech reservation bound (absent: its kind's measured
	// default, speech.EspeakBound or speech.OpenAIBound).
	SpeechBound *SpeechBound `yaml:"speech_bound"`
	// Region is an ark_assets account's signing region (cn-beijing, ap-southeast-1);
	// ProjectName its ModelArk project (absent: the vendor's default project).
	Region      string `yaml:"region"`
	ProjectName string `yaml:"project_name"`
	// AssetLibrary, on an ark account, names the ark_assets account of the same ModelArk
	// account: its Seedance tasks get that library's assets as asset://<vendor id>
	// (upstreams_arkassets.go).
	AssetLibrary string `yaml:"asset_library"`
}

// SpeechBound is an upper bound of the audio an engine makes for a text, in microseconds per
// code point by class, plus an overhead per text, plus a margin (speech.Bound has the same
// shape and the measured defaults; docs/upstreams.md, "Speech bounds").
type SpeechBound struct {
	SpaceUS       int64 `yaml:"space_us"`       // ' ' and '\t'
	LineBreakUS   int64 `yaml:"line_break_us"`  // every other white space
	LetterUS      int64 `yaml:"letter_us"`      // ASCII letters
	DigitUS       int64 `yaml:"digit_us"`       // ASCII digits
	PunctuationUS int64 `yaml:"punctuation_us"` // other printable ASCII
	OtherUS       int64 `yaml:"other_us"`       // any other code point
	OverheadUS    int64 `yaml:"overhead_us"`    // once per text
	MarginPercent int64 `yaml:"margin_percent"` // on top of the sum
}

// maxSpeechBoundUS bounds each per-character figure of a speech_bound (60 s a character).
const maxSpeechBoundUS = 60_000_000

func (u *UpstreamAccount) checkSpeechBound() []error {
	b := u.SpeechBound
	if b == nil {
		return nil
	}
	var errs []error
	if !u.Kind.Serves(ProductSpeech) {
		errs = append(errs, fmt.Errorf("upstream %q: speech_bound applies to accounts that serve speech (kinds espeak, openai, elevenlabs, seedspeech, sandbox), not kind %s", u.Name, u.Kind))
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"space_us", b.SpaceUS}, {"line_break_us", b.LineBreakUS}, {"letter_us", b.LetterUS}, {"digit_us", b.DigitUS},
		{"punctuation_us", b.PunctuationUS}, {"other_us", b.OtherUS}, {"overhead_us", b.OverheadUS}} {
		if f.v < 0 || f.v > maxSpeechBoundUS {
			errs = append(errs, fmt.Errorf("upstream %q: speech_bound.%s is %d: it must be 0 to %d microseconds", u.Name, f.name, f.v, maxSpeechBoundUS))
		}
	}
	if b.LetterUS <= 0 || b.DigitUS <= 0 || b.PunctuationUS <= 0 || b.OtherUS <= 0 {
		errs = append(errs, fmt.Errorf("upstream %q: speech_bound needs letter_us, digit_us, punctuation_us and other_us above 0: a text of any character makes audio", u.Name))
	}
	if b.MarginPercent < 0 || b.MarginPercent > 1000 {
		errs = append(errs, fmt.Errorf("upstream %q: speech_bound.margin_percent must be 0 to 1000", u.Name))
	}
	return errs
}

// ResultHostAllowed is the check of a result link's host against result_hosts; nil when the
// account sets none.
func (u UpstreamAccount) ResultHostAllowed() func(host string) bool {
	if len(u.ResultHosts) == 0 {
		return nil
	}
	hosts := slices.Clone(u.ResultHosts)
	return func(host string) bool {
		host = strings.ToLower(strings.TrimSuffix(host, "."))
		for _, h := range hosts {
			if suffix, wild := strings.CutPrefix(h, "*."); wild {
				if strings.HasSuffix(host, "."+suffix) {
					return true
				}
			} else if host == h {
				return true
			}
		}
		return false
	}
}

// validResultHost: a lower-case host name of valid labels, optionally after "*.", or an IP
// address as written in URLs.
func validResultHost(h string) bool {
	name := strings.TrimPrefix(h, "*.")
	if _, err := netip.ParseAddr(name); err == nil && name == h {
		return true
	}
	labels := strings.Split(name, ".")
	if len(labels) < 2 && name != "localhost" {
		return false
	}
	for _, l := range labels {
		if !hostname.ValidLabel(l) {
			return false
		}
	}
	return true
}

// DefaultUpstreamTimeout is a remote call's bound when the account sets none.
const DefaultUpstreamTimeout = 30 * time.Second

// Timeout is the bound of one call to the account's API.
func (u UpstreamAccount) Timeout() time.Duration {
	if u.TimeoutSeconds > 0 {
		return time.Duration(u.TimeoutSeconds) * time.Second
	}
	return DefaultUpstreamTimeout
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
			errs = append(errs, fmt.Errorf("upstream %q: kind is required (ffmpeg, espeak, ark, openai, kling, minimax, dashscope, gemini, elevenlabs, runway, vertex, mediakit, seedspeech or ark_assets)", u.Name))
		case u.MaxConcurrent < 0 || u.MaxInFlight < 0:
			errs = append(errs, fmt.Errorf("upstream %q: max_concurrent and max_in_flight must not be negative", u.Name))
		default:
			seen[u.Name] = true
			errs = append(errs, u.checkRemote()...)
			errs = append(errs, u.checkBreaker()...)
			errs = append(errs, u.checkSpeechBound()...)
		}
	}
	return errs
}

// checkRemote: a remote account names an https base URL and exactly one place for its key; a
// local one names neither.
func (u *UpstreamAccount) checkRemote() []error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("upstream %q: "+format, append([]any{u.Name}, args...)...))
	}
	if u.Cost != nil {
		for _, msg := range u.Cost.check() {
			add("%s", msg)
		}
	}
	if u.Voice != "" && u.Kind != KindOpenAI && u.Kind != KindElevenLabs && u.Kind != KindSeedSpeech {
		add("voice applies to kinds openai, elevenlabs and seedspeech only")
	}
	errs = append(errs, u.checkSeedSpeech()...)
	if u.Kind == KindElevenLabs && strings.TrimSpace(u.Voice) == "" {
		add("voice is required for kind elevenlabs: the id of the voice to speak with (ElevenLabs has no default voice)")
	}
	errs = append(errs, u.checkVertex()...)
	if !u.Kind.Remote() {
		if u.BaseURL != "" || u.APIKeyEnv != "" || u.APIKeyFile != "" || u.TimeoutSeconds != 0 || u.RequestsPerSecond != 0 || len(u.ResultHosts) > 0 || u.klingKeysSet() {
			add("base_url, api_key_env, api_key_file, timeout_seconds, requests_per_second and result_hosts do not apply to kind %s", u.Kind)
		}
		return errs
	}
	for _, h := range u.ResultHosts {
		if !validResultHost(h) {
			add("result_hosts entry %q must be a lower-case host name such as cdn.example.com, *.example.com for every name under it, or an IP address", h)
		}
	}
	if u.TimeoutSeconds < 0 || u.TimeoutSeconds > 600 {
		add("timeout_seconds must be 1 to 600 (0 or absent: 30)")
	}
	if u.RequestsPerSecond < 0 {
		add("requests_per_second must not be negative")
	}
	if pu, err := url.Parse(u.BaseURL); err != nil || pu.Scheme != "https" || pu.Host == "" || pu.RawQuery != "" || pu.Fragment != "" {
		add("base_url must be an https URL such as https://ark.cn-beijing.volces.com/api/v3")
	}
	if u.Kind == KindKling || u.Kind == KindArkAssets || u.klingKeysSet() {
		return append(errs, u.checkKlingKeys()...)
	}
	if (u.APIKeyEnv == "") == (u.APIKeyFile == "") {
		add("give exactly one of api_key_env (an environment variable's name) and api_key_file (a file's path) for the API key; the key itself never goes in the catalog")
	}
	return errs
}

// MaxKeyFileBytes bounds an api_key_file: an API key is tens of bytes and a service
// account's JSON a few KB, and a path naming the wrong file (a log, /dev/zero) must fail at
// once, not fill memory at every start and reload.
const MaxKeyFileBytes = 64 << 10

// ReadKeyFile reads an api_key_file, refusing one larger than MaxKeyFileBytes after reading
// at most one byte past the bound. The error never holds the file's content.
func ReadKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxKeyFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxKeyFileBytes {
		return nil, ErrKeyFileTooLarge
	}
	return b, nil
}

// ErrKeyFileTooLarge is ReadKeyFile's refusal of a file past MaxKeyFileBytes.
var ErrKeyFileTooLarge = fmt.Errorf("larger than the limit of %d KiB for an API key file (catalog.MaxKeyFileBytes)", MaxKeyFileBytes>>10)

// APIKey reads the account's API key from where the catalog says it is. The error names the
// account and the variable or file, never a key.
func (u UpstreamAccount) APIKey(getenv func(string) string, readFile func(string) ([]byte, error)) (string, error) {
	if u.Kind == KindKling || u.Kind == KindArkAssets { // both keys must be readable; the access key stands for them
		access, _, err := u.KlingKeys(getenv, readFile)
		return access, err
	}
	var key, from string
	switch {
	case u.APIKeyEnv != "":
		key, from = getenv(u.APIKeyEnv), "environment variable "+u.APIKeyEnv
	case u.APIKeyFile != "":
		from = "file " + u.APIKeyFile
		b, err := readFile(u.APIKeyFile)
		if err != nil {
			var big string
			if errors.Is(err, ErrKeyFileTooLarge) {
				big = ": it is " + ErrKeyFileTooLarge.Error()
			}
			return "", fmt.Errorf("upstream %s: the API key %s cannot be read%s", u.Name, from, big)
		}
		key = string(b)
	default:
		return "", fmt.Errorf("upstream %s: no API key is configured", u.Name)
	}
	key = strings.TrimSpace(key)
	if key == "" {
		return "", fmt.Errorf("upstream %s: the API key %s is missing or empty", u.Name, from)
	}
	return key, nil
}
