// Package vertexfake is Google Veo on Vertex AI for tests, carried over from Vertex AI's Veo
// reference (https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/veo-video-generation:
// POST …/publishers/google/models/{model}:predictLongRunning and
// …:fetchPredictOperation {operationName}) and from the official Go SDK
// google.golang.org/genai v1.77.0 in Vertex AI mode (models.go generateVideosParametersToVertex,
// generateVideosConfigToVertex, generateVideosOperationFromVertex, videoFromVertex;
// operations.go GetVideosOperation), with the OAuth2 token endpoint a service account's key
// names (token_uri: the JWT bearer grant of RFC 7523, as cloud.google.com/go/auth's 2-legged
// flow posts it). It signs nothing itself: it makes an RSA key, hands out a service-account
// key file of it (KeyJSON), checks every JWT's signature, issuer, audience and scope, and
// answers only calls with a Bearer token it issued and has not expired. It checks every
// create's body and records what breaks the format as a violation; fake_sdk_test.go drives it
// with the SDK itself. Vertex AI has no idempotency key, so the fake counts the paid jobs it
// makes per prompt (tests give every task its own prompt).
package vertexfake

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"

	"mediagen/internal/provider/fakekit"
)

// Ends a job can be given by Config.End.
const (
	EndSucceed = ""       // succeeds after Config.Polls polls
	EndRefuse  = "refuse" // done with no video: the safety filter (raiMediaFilteredCount 1)
	EndFail    = "fail"   // done with an error (google.rpc.Status)
	EndNever   = "never"  // never done
)

// Identity of the fake's project, location and service account.
const (
	Project  = "mediagen-test"
	Location = "us-central1"
	Email    = "veo@mediagen-test.iam.gserviceaccount.com"
	Scope    = "https://www.googleapis.com/auth/cloud-platform"
)

// Config sets up a Server.
type Config struct {
	Clip string // the file every succeeded job's video is (an MP4); "" a short fake body
	// ClipFor, when set and non-empty for a job's prompt, replaces Clip for that job.
	ClipFor func(prompt string) string
	// Polls is how many reads of an operation answer not done before it is (default 1).
	Polls int
	// End decides a new job's end from its prompt (nil: every job succeeds).
	End func(prompt string) string
	// TokenSeconds is the lifetime of an issued token, its expires_in (default 3600).
	TokenSeconds int
	// RateLimit answers every create 429 RESOURCE_EXHAUSTED before any job is made, with this
	// Retry-After in seconds (0: none).
	RateLimit      bool
	RetryAfterSecs int
	// LoseAnswers makes every create make its job and then answer 500; LoseFor, the creates
	// of the prompts it is true for.
	LoseAnswers bool
	LoseFor     func(prompt string) bool
	// Garbage answers every operation read with a body that is not JSON.
	Garbage bool
	// Forbid answers every API call 403 PERMISSION_DENIED (the service account lacks the
	// role), after the token was accepted.
	Forbid bool
	// FaultPercent is the share of calls (creates, operation reads) that fail with one of the
	// faults of their kind, picked at random from Seed: a create answered 429 or 503 before
	// any job, or 500 or a cut body after its job was made (a lost answer); a read answered
	// 503, garbage or cut.
	FaultPercent int
	Seed         uint64
}

// Server is a running fake Vertex AI with its token endpoint.
type Server struct {
	fakekit.Kit
	cfg Config
	key *rsa.PrivateKey

	seq      int
	tokens   map[string]bool // issued → still valid
	issued   int
	jobs     map[string]*job // operation name → job
	byPrompt map[string]int
	lost     int
	limited  int
	refused  int
	bodies   map[string]map[string]any
	objects  map[string]*job // "bucket/object" → the job whose video it is
	reads    int             // object reads served
}

type job struct {
	name, model, prompt, end string
	storage                  string // the create's storageUri ("": the video inline)
	seq, polls               int
}

// Start starts a fake Vertex AI on loopback, over TLS like the real one.
func Start(cfg Config) *Server {
	if cfg.Polls <= 0 {
		cfg.Polls = 1
	}
	if cfg.TokenSeconds <= 0 {
		cfg.TokenSeconds = 3600
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	s := &Server{cfg: cfg, key: key, tokens: map[string]bool{}, jobs: map[string]*job{}, byPrompt: map[string]int{}, bodies: map[string]map[string]any{}, objects: map[string]*job{}}
	s.Serve(s, cfg.FaultPercent, cfg.Seed, cfg.Seed)
	return s
}

// Base is the API root an account's base_url names.
func (s *Server) Base() string { return s.URL() }

// TokenURL is the fake's token endpoint.
func (s *Server) TokenURL() string { return s.URL() + "/token" }

// JobsFor is how many jobs creates with the prompt made.
func (s *Server) JobsFor(prompt string) int { return fakekit.Get(&s.Kit, s.byPrompt, prompt) }

// Jobs is how many jobs were made in all.
func (s *Server) Jobs() int { return fakekit.Len(&s.Kit, s.jobs) }

// LostAnswers is how many creates made a job and then lost their answer.
func (s *Server) LostAnswers() int { return s.Load(&s.lost) }

// RateLimited is how many creates were refused for the rate (429).
func (s *Server) RateLimited() int { return s.Load(&s.limited) }

// Refused is how many calls were refused for their token or key (401, 403, or a refused
// token exchange).
func (s *Server) Refused() int { return s.Load(&s.refused) }

// Body is the last create body with the prompt (nil: none).
func (s *Server) Body(prompt string) map[string]any { return fakekit.Get(&s.Kit, s.bodies, prompt) }

func (s *Server) refuse() {
	s.Inc(&s.refused)
}

// apiError writes Google's error body: {"error":{code,message,status}} (the SDK's APIError).
func apiError(w http.ResponseWriter, code int, status, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg, "status": status}})
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/token" {
		s.token(w, r)
		return
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.Mu.Lock()
	valid := ok && s.tokens[tok]
	s.Mu.Unlock()
	if !valid {
		s.refuse()
		apiError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
		return
	}
	if r.Header.Get("x-goog-api-key") != "" {
		s.Violate("%s %s: an x-goog-api-key beside the Bearer token", r.Method, r.URL.Path)
	}
	if s.cfg.Forbid {
		s.refuse()
		apiError(w, http.StatusForbidden, "PERMISSION_DENIED", "Permission 'aiplatform.endpoints.predict' denied.")
		return
	}
	if obj, ok := strings.CutPrefix(r.URL.EscapedPath(), "/storage/v1/b/"); ok {
		s.object(w, r, obj)
		return
	}
	p := r.URL.Path
	// The SDK's default version is v1beta1; the reference's v1. Both serve Veo alike.
	rest, ok := strings.CutPrefix(p, "/v1/")
	if !ok {
		rest, ok = strings.CutPrefix(p, "/v1beta1/")
	}
	prefix := "projects/" + Project + "/locations/" + Location + "/publishers/google/models/"
	model, verb, _ := strings.Cut(strings.TrimPrefix(rest, prefix), ":")
	switch {
	case !ok || r.Method != http.MethodPost || !strings.HasPrefix(rest, prefix):
		apiError(w, http.StatusNotFound, "NOT_FOUND", "not found")
	case verb == "predictLongRunning":
		s.create(w, r, model)
	case verb == "fetchPredictOperation":
		s.operation(w, r, prefix+model)
	default:
		apiError(w, http.StatusNotFound, "NOT_FOUND", "not found")
	}
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, model string) {
	var b struct {
		Instances  []map[string]any `json:"instances"`
		Parameters map[string]any   `json:"parameters"`
	}
	data, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(data, &b); err != nil || len(b.Instances) != 1 {
		s.Violate("create: body is not {instances:[one], parameters}")
		apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "bad body")
		return
	}
	f := s.Fault(4)
	if f == 1 {
		apiError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "overloaded")
		return
	}
	if s.cfg.RateLimit || f == 0 {
		s.Inc(&s.limited)
		if s.cfg.RetryAfterSecs > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(s.cfg.RetryAfterSecs))
		}
		apiError(w, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model.")
		return
	}
	prompt, ok := s.check(model, b.Instances[0], b.Parameters)
	if !ok {
		apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "invalid request")
		return
	}
	s.Mu.Lock()
	s.seq++
	storage, _ := b.Parameters["storageUri"].(string)
	j := &job{model: model, prompt: prompt, storage: storage, seq: s.seq, name: fmt.Sprintf("projects/%s/locations/%s/publishers/google/models/%s/operations/%08d-fake-op", Project, Location, model, s.seq)}
	if s.cfg.End != nil {
		j.end = s.cfg.End(prompt)
	}
	s.jobs[j.name] = j
	s.byPrompt[prompt]++
	var raw map[string]any
	_ = json.Unmarshal(data, &raw)
	s.bodies[prompt] = raw
	lose := s.cfg.LoseAnswers || f >= 2 || (s.cfg.LoseFor != nil && s.cfg.LoseFor(prompt))
	if lose {
		s.lost++
	}
	s.Mu.Unlock()
	if lose {
		if f == 3 {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"name": "projects/`)
			return
		}
		apiError(w, http.StatusInternalServerError, "INTERNAL", "internal error")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"name": j.name})
}

// Models the fake serves and what each takes (the reference's parameters): Veo 3 makes 8 s,
// 720p or 1080p (1080p at 16:9 only) and needs generateAudio; Veo 2 makes 5–8 s at 720p
// and has no sound.
var models = map[string]struct {
	seconds     []int
	resolutions []string
	veo3        bool
}{
	"veo-3.0-generate-001":      {[]int{8}, []string{"720p", "1080p"}, true},
	"veo-3.0-fast-generate-001": {[]int{8}, []string{"720p", "1080p"}, true},
	"veo-2.0-generate-001":      {[]int{5, 6, 7, 8}, []string{"720p"}, false},
}

// Fields of the body in Vertex AI mode, with their JSON types.
var (
	instanceFields  = map[string]string{"prompt": "string", "image": "object", "lastFrame": "object", "referenceImages": "array", "video": "object", "mask": "object"}
	parameterFields = map[string]string{"sampleCount": "number", "durationSeconds": "number", "aspectRatio": "string", "resolution": "string",
		"personGeneration": "string", "negativePrompt": "string", "enhancePrompt": "bool", "generateAudio": "bool", "seed": "number",
		"storageUri": "string", "fps": "number", "compressionQuality": "string", "resizeMode": "string", "pubsubTopic": "string"}
)

// check validates a create against the model's capabilities and the reference's types.
func (s *Server) check(model string, in, params map[string]any) (string, bool) {
	m, ok := models[model]
	if !ok {
		s.Violate("create: model %q", model)
		return "", false
	}
	for k, v := range in {
		if typ, ok := instanceFields[k]; !ok || !fakekit.HasType(v, typ) {
			s.Violate("create: instance field %q", k)
			return "", false
		}
	}
	for k, v := range params {
		if typ, ok := parameterFields[k]; !ok || !fakekit.HasType(v, typ) {
			s.Violate("create: unknown parameter %q", k)
			return "", false
		}
	}
	prompt, _ := in["prompt"].(string)
	if img, ok := in["image"].(map[string]any); ok {
		b64, _ := img["bytesBase64Encoded"].(string)
		mime, _ := img["mimeType"].(string)
		if _, err := base64.StdEncoding.DecodeString(b64); err != nil || b64 == "" || !strings.HasPrefix(mime, "image/") {
			s.Violate("create: image is not {bytesBase64Encoded, mimeType image/*}")
			return "", false
		}
	}
	if prompt == "" && in["image"] == nil {
		s.Violate("create: neither prompt nor image")
		return "", false
	}
	if n, ok := params["sampleCount"].(float64); ok && (n < 1 || n > 4) {
		s.Violate("create: sampleCount %v", n)
		return "", false
	}
	if d, ok := params["durationSeconds"].(float64); ok && !slices.Contains(m.seconds, int(d)) {
		s.Violate("create: durationSeconds %v for %s", d, model)
		return "", false
	}
	ratio, _ := params["aspectRatio"].(string)
	if ratio != "" && ratio != "16:9" && ratio != "9:16" {
		s.Violate("create: aspectRatio %q", ratio)
		return "", false
	}
	if res, ok := params["resolution"].(string); ok {
		if !slices.Contains(m.resolutions, res) {
			s.Violate("create: resolution %q for %s", res, model)
			return "", false
		}
		if res == "1080p" && ratio == "9:16" {
			s.Violate("create: 1080p at 9:16")
			return "", false
		}
	}
	if su, ok := params["storageUri"].(string); ok && (!strings.HasPrefix(su, "gs://") || len(su) < len("gs://abc")) {
		s.Violate("create: storageUri %q is not a gs:// URI", su)
		return "", false
	}
	audio, hasAudio := params["generateAudio"].(bool)
	switch {
	case m.veo3 && !hasAudio:
		s.Violate("create: no generateAudio for %s (required for Veo 3)", model)
		return "", false
	case !m.veo3 && audio:
		s.Violate("create: generateAudio true for %s", model)
		return "", false
	}
	return prompt, true
}

// operation answers POST {model}:fetchPredictOperation {"operationName"}: not done for Polls
// reads, then done with the video inline (base64), an error or, for a refusal, no video and
// raiMediaFilteredCount.
func (s *Server) operation(w http.ResponseWriter, r *http.Request, resource string) {
	var b struct {
		OperationName string `json:"operationName"`
	}
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil || b.OperationName == "" {
		s.Violate("fetchPredictOperation: body is not {operationName}")
		apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "bad body")
		return
	}
	if !strings.HasPrefix(b.OperationName, resource+"/operations/") {
		s.Violate("fetchPredictOperation: operation %q read at %s", b.OperationName, resource)
	}
	switch s.Fault(3) {
	case 0:
		apiError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "overloaded")
		return
	case 1:
		_, _ = io.WriteString(w, "<html>bad gateway</html>")
		return
	case 2:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"name": "projects/`)
		return
	}
	if s.cfg.Garbage {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"name": "projects/`)
		return
	}
	s.Mu.Lock()
	j, ok := s.jobs[b.OperationName]
	if ok {
		j.polls++
	}
	s.Mu.Unlock()
	if !ok {
		apiError(w, http.StatusNotFound, "NOT_FOUND", "Operation not found.")
		return
	}
	const typ = "type.googleapis.com/cloud.ai.large_models.vision.GenerateVideoResponse"
	op := map[string]any{"name": j.name}
	switch {
	case j.end == EndNever || j.polls <= s.cfg.Polls:
		op["done"] = false
	case j.end == EndFail:
		op["done"] = true
		op["error"] = map[string]any{"code": 3, "message": "generation failed", "status": "INVALID_ARGUMENT"}
	case j.end == EndRefuse:
		op["done"] = true
		op["response"] = map[string]any{"@type": typ, "raiMediaFilteredCount": 1, "raiMediaFilteredReasons": []string{"The video was filtered."}}
	case j.storage != "":
		uri := strings.TrimSuffix(j.storage, "/") + fmt.Sprintf("/%d/sample_0.mp4", j.seq)
		s.Locked(func() { s.objects[strings.TrimPrefix(uri, "gs://")] = j })
		op["done"] = true
		op["response"] = map[string]any{"@type": typ, "raiMediaFilteredCount": 0,
			"videos": []any{map[string]any{"gcsUri": uri, "mimeType": "video/mp4"}}}
	default:
		video, err := s.clip(j)
		if err != nil {
			apiError(w, http.StatusInternalServerError, "INTERNAL", "internal error")
			return
		}
		op["done"] = true
		op["response"] = map[string]any{"@type": typ, "raiMediaFilteredCount": 0,
			"videos": []any{map[string]any{"bytesBase64Encoded": base64.StdEncoding.EncodeToString(video), "mimeType": "video/mp4"}}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(op)
}

// clip is a succeeded job's video.
func (s *Server) clip(j *job) ([]byte, error) {
	clip := s.cfg.Clip
	if s.cfg.ClipFor != nil {
		if c := s.cfg.ClipFor(j.prompt); c != "" {
			clip = c
		}
	}
	if clip == "" {
		return []byte("fake mp4 " + j.name), nil
	}
	return os.ReadFile(clip)
}
