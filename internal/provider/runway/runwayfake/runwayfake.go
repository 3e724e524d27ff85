// Package runwayfake is Runway's developer API for tests, carried over field by field from
// the official Node SDK @runwayml/sdk that test/runway-sdk pins (its resources/*.d.ts: the
// create bodies, the task object; client.js: the headers) and driven unchanged by that SDK
// in cmd/mediagen's TestRunwayNodeSDK: POST /v1/image_to_video, POST /v1/text_to_video, GET
// and DELETE /v1/tasks/{id}, and the signed output link a succeeded task carries. It checks
// every request — the Bearer key, X-Runway-Version, the JSON fields, their types and values
// per model — and records what breaks the format as a violation. Runway has no idempotency
// key and no task list, so the fake counts the paid jobs it makes per prompt (tests give
// every task its own prompt).
package runwayfake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"mediagen/internal/provider/fakekit"
)

// Version is the X-Runway-Version the fake accepts.
const Version = "2024-11-06"

// Ends a job can be given by Config.End.
const (
	EndSucceed = ""       // succeeds after Config.Polls polls
	EndRefuse  = "refuse" // fails: SAFETY.OUTPUT.VIDEO (moderation)
	EndNever   = "never"  // stays RUNNING
)

// Config sets up a Server.
type Config struct {
	Key  string // the Bearer key it accepts
	Clip string // the file every succeeded job's output link serves (an MP4)
	// ClipFor, when set and non-empty for a job's prompt, replaces Clip for that job.
	ClipFor func(prompt string) string
	// Polls is how many reads of a job answer before it succeeds (default 1).
	Polls int
	// End decides a new job's end from its prompt (nil: every job succeeds).
	End func(prompt string) string
	// ExtraSeconds, when set, bills a job this many seconds beyond its duration (cost.credits).
	ExtraSeconds func(prompt string) int
	// FaultPercent is the share of calls (creates, reads, downloads) that fail with one of
	// the faults of their kind, picked at random from Seed.
	FaultPercent int
	Seed         uint64
	// RateLimit answers every create 429 before any job is made, with this Retry-After in
	// seconds (-1: none).
	RateLimit int
	// LoseAnswers makes every create make its job and then answer 502.
	LoseAnswers bool
	// Garbage answers every read with a body that is not JSON; Truncated with a cut one.
	Garbage, Truncated bool
	// ExpiredLinks hands out output links that have already expired; ExpireFirst only the
	// first n of them.
	ExpiredLinks bool
	ExpireFirst  int
}

// Server is a running fake Runway.
type Server struct {
	fakekit.Kit
	cfg Config

	jobs       map[string]*job
	byPrompt   map[string]int
	lost       int
	limited    int
	refused    int
	cancelled  int
	expiredOut int                       // expired links handed out
	expiredGet int                       // downloads refused for an expired link
	bodies     map[string]map[string]any // prompt → the last create body with it
}

type job struct {
	id, model, prompt, end string
	duration, polls        int
	created                time.Time
	cancelled              bool
}

// Start starts a fake Runway on loopback, over TLS like the real one.
func Start(cfg Config) *Server {
	if cfg.Polls <= 0 {
		cfg.Polls = 1
	}
	s := &Server{cfg: cfg, jobs: map[string]*job{}, byPrompt: map[string]int{}, bodies: map[string]map[string]any{}}
	s.Serve(s, cfg.FaultPercent, cfg.Seed, 13)
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

// RateLimited is how many creates were refused 429.
func (s *Server) RateLimited() int { return s.Load(&s.limited) }

// Refused is how many calls were refused for their key (401).
func (s *Server) Refused() int { return s.Load(&s.refused) }

// Cancelled is how many running tasks DELETE cancelled.
func (s *Server) Cancelled() int { return s.Load(&s.cancelled) }

// ExpiredDownloads is how many downloads were refused for an expired link.
func (s *Server) ExpiredDownloads() int { return s.Load(&s.expiredGet) }

// Body is the last create body with the prompt (nil: none).
func (s *Server) Body(prompt string) map[string]any { return fakekit.Get(&s.Kit, s.bodies, prompt) }

// answer writes a JSON answer.
func answer(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// apiError writes Runway's error body, {"error": "…"}.
func apiError(w http.ResponseWriter, status int, msg string) {
	answer(w, status, map[string]any{"error": msg})
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/download/") {
		s.download(w, r)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+s.cfg.Key {
		s.Inc(&s.refused)
		apiError(w, http.StatusUnauthorized, "Invalid API key")
		return
	}
	if v := r.Header.Get("X-Runway-Version"); v != Version {
		s.Violate("%s %s: X-Runway-Version %q", r.Method, r.URL.Path, v)
		apiError(w, http.StatusBadRequest, "Invalid or missing X-Runway-Version header")
		return
	}
	id, isTask := strings.CutPrefix(r.URL.Path, "/v1/tasks/")
	switch {
	case r.Method == http.MethodPost && (r.URL.Path == "/v1/image_to_video" || r.URL.Path == "/v1/text_to_video"):
		s.create(w, r, r.URL.Path == "/v1/image_to_video")
	case r.Method == http.MethodGet && isTask:
		s.read(w, id)
	case r.Method == http.MethodDelete && isTask:
		s.delete(w, id)
	default:
		s.Violate("unexpected %s %s", r.Method, r.URL.Path)
		apiError(w, http.StatusNotFound, "Not found")
	}
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, image bool) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		s.Violate("create Content-Type %q", ct)
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.Violate("create body is not JSON: %v", err)
		apiError(w, http.StatusBadRequest, "Invalid JSON")
		return
	}
	prompt, ok := s.check(body, image)
	s.Locked(func() { s.bodies[prompt] = body })
	if !ok {
		apiError(w, http.StatusBadRequest, "Input validation failed")
		return
	}
	if s.cfg.RateLimit != 0 {
		s.Inc(&s.limited)
		if s.cfg.RateLimit > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(s.cfg.RateLimit))
		}
		apiError(w, http.StatusTooManyRequests, "You have exceeded the rate limit")
		return
	}
	f := s.Fault(5)
	if s.cfg.LoseAnswers {
		f = 2
	}
	switch f {
	case 0:
		apiError(w, http.StatusServiceUnavailable, "Service unavailable")
		return
	case 1:
		s.Inc(&s.limited)
		apiError(w, http.StatusTooManyRequests, "You have exceeded the rate limit")
		return
	}
	model, _ := body["model"].(string)
	d, _ := body["duration"].(float64)
	end := EndSucceed
	if s.cfg.End != nil {
		end = s.cfg.End(prompt)
	}
	s.Mu.Lock()
	j := &job{id: fmt.Sprintf("17f20503-6c24-4c16-946b-%012d", len(s.jobs)+1), model: model, prompt: prompt, end: end, duration: int(d), created: time.Now()}
	s.jobs[j.id] = j
	s.byPrompt[prompt]++
	if f >= 2 {
		s.lost++
	}
	s.Mu.Unlock()
	switch f {
	case 2: // the job is made, the answer is a 5xx
		apiError(w, http.StatusBadGateway, "Bad gateway")
		return
	case 3: // the job is made, the connection drops before the answer
		if fakekit.Drop(w) {
			return
		}
		apiError(w, http.StatusBadGateway, "Bad gateway")
		return
	case 4: // the job is made, the answer is cut
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"`+j.id[:8])
		return
	}
	answer(w, http.StatusOK, map[string]any{"id": j.id, "estimatedCost": map[string]any{"credits": j.duration * creditsPerSecond[model]}})
}

// read answers GET /v1/tasks/{id}: the task object of the SDK's TaskRetrieveResponse.
func (s *Server) read(w http.ResponseWriter, id string) {
	switch {
	case s.cfg.Garbage:
		_, _ = io.WriteString(w, "<html>bad gateway</html>")
		return
	case s.cfg.Truncated:
		_, _ = io.WriteString(w, `{"id":"`+id+`","status":"SUCC`)
		return
	}
	switch s.Fault(3) {
	case 0:
		apiError(w, http.StatusInternalServerError, "Internal error")
		return
	case 1:
		_, _ = io.WriteString(w, `{"id":"1","status":`)
		return
	case 2:
		w.Header().Set("Retry-After", "1")
		apiError(w, http.StatusTooManyRequests, "You have exceeded the rate limit")
		return
	}
	expire := s.cfg.ExpiredLinks || s.Fault(2) == 0 // decided before the lock fault takes
	s.Mu.Lock()
	if s.expiredOut < s.cfg.ExpireFirst {
		expire = true
	}
	j, ok := s.jobs[id]
	if !ok {
		s.Mu.Unlock()
		apiError(w, http.StatusNotFound, "Task not found")
		return
	}
	j.polls++
	est := j.duration * creditsPerSecond[j.model]
	out := map[string]any{"id": j.id, "createdAt": j.created.UTC().Format(time.RFC3339Nano)}
	switch {
	case j.cancelled:
		out["status"], out["cost"] = "CANCELLED", map[string]any{"credits": 0}
	case j.polls == 1:
		out["status"], out["estimatedCost"] = "PENDING", map[string]any{"credits": est}
	case j.end == EndNever || j.polls <= s.cfg.Polls:
		out["status"], out["estimatedCost"], out["progress"] = "RUNNING", map[string]any{"credits": est}, 0.5
	case j.end == EndRefuse:
		out["status"], out["cost"] = "FAILED", map[string]any{"credits": 0}
		out["failure"], out["failureCode"] = "The output was flagged by our content moderation.", "SAFETY.OUTPUT.VIDEO"
	default:
		seconds := j.duration
		if s.cfg.ExtraSeconds != nil {
			seconds += s.cfg.ExtraSeconds(j.prompt)
		}
		exp := time.Now().Add(24 * time.Hour)
		if expire {
			exp = time.Now().Add(-time.Second)
			s.expiredOut++
		}
		out["status"], out["cost"] = "SUCCEEDED", map[string]any{"credits": seconds * creditsPerSecond[j.model]}
		out["output"] = []string{fmt.Sprintf("%s/download/%s.mp4?expires=%d", s.URL(), j.id, exp.Unix())}
	}
	s.Mu.Unlock()
	answer(w, http.StatusOK, out)
}

// delete answers DELETE /v1/tasks/{id}: a pending or running task is cancelled, a finished
// one deleted; 204 either way.
func (s *Server) delete(w http.ResponseWriter, id string) {
	s.Mu.Lock()
	j, ok := s.jobs[id]
	if ok && !j.cancelled {
		j.cancelled = true
		s.cancelled++
	}
	s.Mu.Unlock()
	if !ok {
		apiError(w, http.StatusNotFound, "Task not found")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// download serves an output link: 403 once it has expired (a signed CDN link), a 404 as a
// fault.
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	exp, err := strconv.ParseInt(r.URL.Query().Get("expires"), 10, 64)
	if err != nil || time.Now().Unix() > exp {
		s.Inc(&s.expiredGet)
		http.Error(w, "Request has expired", http.StatusForbidden)
		return
	}
	if s.Fault(2) == 0 {
		http.NotFound(w, r)
		return
	}
	id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/download/"), ".mp4")
	s.Mu.Lock()
	j, ok := s.jobs[id]
	s.Mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	clip := s.cfg.Clip
	if s.cfg.ClipFor != nil {
		if c := s.cfg.ClipFor(j.prompt); c != "" {
			clip = c
		}
	}
	http.ServeFile(w, r, clip)
}

// Models and their rules, from the SDK's ImageToVideoCreateParams and TextToVideoCreateParams.
var (
	creditsPerSecond = map[string]int{"gen4_turbo": 5, "gen4.5": 12, "gen3a_turbo": 5}
	// textModels take POST /v1/text_to_video (gen4_turbo has no text-only variant).
	textModels = []string{"gen4.5"}
	// imageRatios and textRatios are the ratio values of each create.
	imageRatios = map[string][]string{
		"gen4.5":      {"1280:720", "720:1280", "1104:832", "960:960", "832:1104", "1584:672"},
		"gen4_turbo":  {"1280:720", "720:1280", "1104:832", "832:1104", "960:960", "1584:672"},
		"gen3a_turbo": {"768:1280", "1280:768"},
	}
	textRatios = map[string][]string{"gen4.5": {"1280:720", "720:1280"}}
)

// Create fields and their types.
var createFields = map[string]string{"model": "string", "promptText": "string", "promptImage": "image", "ratio": "string",
	"duration": "integer", "seed": "integer", "contentModeration": "object", "outputFormat": "string", "proresProfile": "string"}

// maxPrompt is the SDK's bound of promptText: 1000 UTF-16 code units.
const maxPrompt = 1000

// maxSeed is the seed's upper bound (an unsigned 32-bit integer).
const maxSeed = 4294967295

// check validates a create body and returns its prompt; false when Runway would refuse it.
func (s *Server) check(b map[string]any, image bool) (string, bool) {
	ok := true
	bad := func(format string, args ...any) { s.Violate("create: "+format, args...); ok = false }
	for k, v := range b {
		typ, known := createFields[k]
		if !known {
			bad("unknown field %q", k)
			continue
		}
		if !hasType(v, typ) {
			bad("%s = %v, want a %s", k, v, typ)
		}
	}
	model, _ := b["model"].(string)
	ratios := imageRatios[model]
	if !image {
		ratios = textRatios[model]
		if !slices.Contains(textModels, model) {
			bad("model %q takes no text-only create", model)
		}
	} else if ratios == nil {
		bad("model %q", model)
	}
	prompt, _ := b["promptText"].(string)
	if !image && prompt == "" {
		bad("text_to_video without promptText")
	}
	if n := len(utf16Units(prompt)); n > maxPrompt {
		bad("promptText of %d UTF-16 units", n)
	}
	if _, has := b["promptImage"]; image != has {
		bad("promptImage present=%v on %s", has, map[bool]string{true: "image_to_video", false: "text_to_video"}[image])
	}
	if ratio, _ := b["ratio"].(string); !slices.Contains(ratios, ratio) {
		bad("ratio %q for %s", ratio, model)
	}
	d, hasD := b["duration"].(float64)
	if model == "gen4.5" && !hasD {
		bad("gen4.5 without duration")
	}
	if hasD && (d < 2 || d > 10) {
		bad("duration %v, want 2 to 10", d)
	}
	if seed, has := b["seed"].(float64); has && (seed < 0 || seed > maxSeed) {
		bad("seed %v out of 0..%d", seed, maxSeed)
	}
	return prompt, ok
}

func utf16Units(s string) []rune {
	var out []rune
	for _, r := range s {
		out = append(out, r)
		if r > 0xFFFF {
			out = append(out, r)
		}
	}
	return out
}

func hasType(v any, typ string) bool {
	switch typ {
	case "string":
		_, ok := v.(string)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	case "image":
		if u, ok := v.(string); ok {
			return imageURI(u)
		}
		arr, ok := v.([]any)
		if !ok || len(arr) == 0 {
			return false
		}
		for _, e := range arr {
			m, ok := e.(map[string]any)
			if !ok {
				return false
			}
			u, _ := m["uri"].(string)
			pos, _ := m["position"].(string)
			if !imageURI(u) || (pos != "first" && pos != "last") || len(m) != 2 {
				return false
			}
		}
		return true
	}
	return false
}

// imageURI: an HTTPS URL, a Runway upload URI or a base64 data URI (the SDK's promptImage).
func imageURI(u string) bool {
	return strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "runway://") || strings.HasPrefix(u, "data:image/")
}
