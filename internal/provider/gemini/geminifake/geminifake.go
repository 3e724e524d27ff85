// Package geminifake is Google Veo through the Gemini API for tests, carried over from the
// official Go SDK google.golang.org/genai v1.77.0 (its Gemini API mode: models.go
// generateVideos and generateVideosParametersToMldev/ConfigToMldev, operations.go
// GetVideosOperation and generateVideosOperationFromMldev, files.go Download): POST
// /v1beta/models/{model}:predictLongRunning, GET /v1beta/models/{model}/operations/{id} and
// GET /v1beta/files/{id}:download?alt=media. It checks every request — the x-goog-api-key
// header, the body's fields and their types, the model's durations, ratios and resolutions
// — and records what breaks the format as a violation. fake_sdk_test.go drives it with the
// SDK itself. The Gemini API has no idempotency key, so the fake counts the paid jobs it
// makes per prompt (tests give every task its own prompt).
package geminifake

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"mediagen/internal/provider/fakekit"
)

// Ends a job can be given by Config.End.
const (
	EndSucceed = ""       // succeeds after Config.Polls polls
	EndRefuse  = "refuse" // done with no sample: the safety filter (raiMediaFilteredCount 1)
	EndFail    = "fail"   // done with an error (google.rpc.Status)
	EndNever   = "never"  // never done
)

// Config sets up a Server.
type Config struct {
	Key  string // the x-goog-api-key it accepts
	Clip string // the file every succeeded job's video serves (an MP4)
	// ClipFor, when set and non-empty for a job's prompt, replaces Clip for that job.
	ClipFor func(prompt string) string
	// Polls is how many reads of an operation answer not done before it is (default 1).
	Polls int
	// End decides a new job's end from its prompt (nil: every job succeeds).
	End func(prompt string) string
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
	// ExpireFirst answers the first download of each video 404 NOT_FOUND, as a file past its
	// retention does; later downloads serve it.
	ExpireFirst bool
	// FaultPercent is the share of calls (creates, operation reads, downloads) that fail with
	// one of the faults of their kind, picked at random from Seed: a create answered 429 or
	// 503 before any job, or 500 or a cut body after its job was made (a lost answer); a read
	// answered 503, garbage or cut; a download answered 500.
	FaultPercent int
	Seed         uint64
}

// Server is a running fake Gemini API.
type Server struct {
	fakekit.Kit
	cfg Config

	seq      int
	jobs     map[string]*job // operation name → job
	files    map[string]*job // file id → job
	byPrompt map[string]int
	lost     int
	limited  int
	refused  int
	bodies   map[string]map[string]any
}

type job struct {
	name, model, prompt, end, file string
	polls, downloads               int
}

// Start starts a fake Gemini API on loopback, over TLS like the real one.
func Start(cfg Config) *Server {
	if cfg.Polls <= 0 {
		cfg.Polls = 1
	}
	s := &Server{cfg: cfg, jobs: map[string]*job{}, files: map[string]*job{}, byPrompt: map[string]int{}, bodies: map[string]map[string]any{}}
	s.Serve(s, cfg.FaultPercent, cfg.Seed, cfg.Seed)
	return s
}

// Base is the API root an account's base_url names.
func (s *Server) Base() string { return s.URL() }

// JobsFor is how many jobs creates with the prompt made.
func (s *Server) JobsFor(prompt string) int { return fakekit.Get(&s.Kit, s.byPrompt, prompt) }

// Jobs is how many jobs were made in all.
func (s *Server) Jobs() int { return fakekit.Len(&s.Kit, s.jobs) }

// LostAnswers is how many creates made a job and then lost their answer.
func (s *Server) LostAnswers() int { return s.Load(&s.lost) }

// RateLimited is how many creates were refused for the rate (429).
func (s *Server) RateLimited() int { return s.Load(&s.limited) }

// Refused is how many calls were refused for their key.
func (s *Server) Refused() int { return s.Load(&s.refused) }

// Body is the last create body with the prompt (nil: none).
func (s *Server) Body(prompt string) map[string]any { return fakekit.Get(&s.Kit, s.bodies, prompt) }

// apiError writes the Gemini API's error body: {"error":{code,message,status}} (the SDK's
// APIError).
func apiError(w http.ResponseWriter, code int, status, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg, "status": status}})
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("x-goog-api-key") != s.cfg.Key {
		s.Inc(&s.refused)
		apiError(w, http.StatusForbidden, "PERMISSION_DENIED", "API key not valid.")
		return
	}
	if r.Header.Get("Authorization") != "" {
		s.Violate("%s %s: an Authorization header beside x-goog-api-key", r.Method, r.URL.Path)
	}
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/v1beta/models/") && strings.HasSuffix(p, ":predictLongRunning"):
		s.create(w, r, strings.TrimSuffix(strings.TrimPrefix(p, "/v1beta/models/"), ":predictLongRunning"))
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/v1beta/models/") && strings.Contains(p, "/operations/"):
		s.operation(w, strings.TrimPrefix(p, "/v1beta/"))
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/v1beta/files/") && strings.HasSuffix(p, ":download"):
		s.download(w, r, strings.TrimSuffix(strings.TrimPrefix(p, "/v1beta/files/"), ":download"))
	default:
		apiError(w, http.StatusNotFound, "NOT_FOUND", "not found")
	}
}

// Models the fake serves and what each takes (ai.google.dev/gemini-api/docs/video): Veo 3
// makes 8 s, 720p or 1080p (1080p at 16:9 only); Veo 2 makes 5–8 s at 720p.
var models = map[string]struct {
	seconds     []int
	resolutions []string
}{
	"veo-3.0-generate-001":      {[]int{8}, []string{"720p", "1080p"}},
	"veo-3.0-fast-generate-001": {[]int{8}, []string{"720p", "1080p"}},
	"veo-2.0-generate-001":      {[]int{5, 6, 7, 8}, []string{"720p"}},
}

// Fields of the body the SDK sends in Gemini API mode, with their JSON types.
var (
	instanceFields  = map[string]string{"prompt": "string", "image": "object", "lastFrame": "object", "referenceImages": "array", "video": "object"}
	parameterFields = map[string]string{"sampleCount": "number", "durationSeconds": "number", "aspectRatio": "string", "resolution": "string",
		"personGeneration": "string", "negativePrompt": "string", "enhancePrompt": "bool"}
)

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
		apiError(w, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "quota")
		return
	}
	prompt, ok := s.check(model, b.Instances[0], b.Parameters)
	if !ok {
		apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "invalid request")
		return
	}
	s.Mu.Lock()
	s.seq++
	j := &job{model: model, prompt: prompt, name: fmt.Sprintf("models/%s/operations/op%d", model, s.seq), file: fmt.Sprintf("file%d", s.seq)}
	if s.cfg.End != nil {
		j.end = s.cfg.End(prompt)
	}
	s.jobs[j.name] = j
	s.files[j.file] = j
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
			_, _ = io.WriteString(w, `{"name": "models/`)
			return
		}
		apiError(w, http.StatusInternalServerError, "INTERNAL", "internal error")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"name": j.name})
}

// check validates a create against the model's capabilities and the SDK's field types.
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
	return prompt, true
}

// operation answers GET /v1beta/{name}: not done for Polls reads, then done with the
// response, an error or, for a refusal, no sample and raiMediaFilteredCount.
func (s *Server) operation(w http.ResponseWriter, name string) {
	switch s.Fault(3) {
	case 0:
		apiError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "overloaded")
		return
	case 1:
		_, _ = io.WriteString(w, "<html>bad gateway</html>")
		return
	case 2:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"name": "models/`)
		return
	}
	if s.cfg.Garbage {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"name": "models/`)
		return
	}
	s.Mu.Lock()
	j, ok := s.jobs[name]
	if ok {
		j.polls++
	}
	s.Mu.Unlock()
	if !ok {
		apiError(w, http.StatusNotFound, "NOT_FOUND", "operation not found")
		return
	}
	op := map[string]any{"name": name}
	switch {
	case j.end == EndNever || j.polls <= s.cfg.Polls:
		op["done"] = false
		op["metadata"] = map[string]any{}
	case j.end == EndFail:
		op["done"] = true
		op["error"] = map[string]any{"code": 3, "message": "generation failed", "status": "INVALID_ARGUMENT"}
	case j.end == EndRefuse:
		op["done"] = true
		op["response"] = map[string]any{"@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse",
			"generateVideoResponse": map[string]any{"raiMediaFilteredCount": 1, "raiMediaFilteredReasons": []string{"The video was filtered."}}}
	default:
		op["done"] = true
		op["response"] = map[string]any{"@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse",
			"generateVideoResponse": map[string]any{"generatedSamples": []any{map[string]any{"video": map[string]any{
				"uri": s.URL() + "/v1beta/files/" + j.file + ":download?alt=media"}}}}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(op)
}

// download serves a done job's video (files.go Download: alt=media).
func (s *Server) download(w http.ResponseWriter, r *http.Request, id string) {
	if r.URL.Query().Get("alt") != "media" {
		s.Violate("download without alt=media")
	}
	if s.Fault(1) == 0 {
		apiError(w, http.StatusInternalServerError, "INTERNAL", "internal error")
		return
	}
	s.Mu.Lock()
	j, ok := s.files[id]
	expired := false
	if ok {
		j.downloads++
		expired = s.cfg.ExpireFirst && j.downloads == 1
	}
	s.Mu.Unlock()
	if !ok || expired {
		apiError(w, http.StatusNotFound, "NOT_FOUND", "file not found")
		return
	}
	clip := s.cfg.Clip
	if s.cfg.ClipFor != nil {
		if c := s.cfg.ClipFor(j.prompt); c != "" {
			clip = c
		}
	}
	if clip == "" {
		w.Header().Set("Content-Type", "video/mp4")
		_, _ = io.WriteString(w, "fake mp4 "+j.name)
		return
	}
	w.Header().Set("Content-Type", "video/mp4")
	http.ServeFile(w, r, clip)
}
