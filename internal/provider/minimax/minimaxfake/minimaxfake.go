// Package minimaxfake is MiniMax's Hailuo video API for tests, written field by field from
// the published reference (docs/upstreams.md#minimax cites the pages): POST
// /v1/video_generation, GET /v1/query/video_generation, GET /v1/files/retrieve and the
// download link a file carries. It checks every request it receives — the Bearer key, the
// JSON fields, their types and values (models, 6 or 10 seconds, 768P/1080P, no 10 s at
// 1080P) — and records what breaks the format as a violation. Every answer carries
// base_resp, and the faults a real account shows come both as HTTP statuses and as
// non-zero codes on HTTP 200 (1002 rate limit, 1004 refused key, 1008 balance, 1026/1027
// sensitive content). MiniMax has no idempotency key, so the fake counts the paid jobs it
// makes per prompt (tests give every task its own prompt).
package minimaxfake

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

// Ends a job can be given by Config.End.
const (
	EndSucceed = ""       // succeeds after Config.Polls polls
	EndRefuse  = "refuse" // fails: the output is sensitive (1027)
	EndNever   = "never"  // stays Processing
)

// Config sets up a Server.
type Config struct {
	Key  string // the Bearer key it accepts
	Clip string // the file every succeeded job's download link serves (an MP4)
	// ClipFor, when set and non-empty for a job's prompt, replaces Clip for that job.
	ClipFor func(prompt string) string
	// Polls is how many queries of a job answer Processing before it succeeds (default 1).
	Polls int
	// FaultPercent is the share of calls (creates, queries, retrievals, downloads) that fail
	// with one of the faults of their kind, picked at random from Seed.
	FaultPercent int
	Seed         uint64
	// End decides a new job's end from its prompt (nil: every job succeeds).
	End func(prompt string) string
	// RateLimit answers every create HTTP 200 with base_resp 1002 before any job is made
	// (MiniMax's rate limit); RateLimitHTTP answers it HTTP 429 with this Retry-After (s).
	RateLimit     bool
	RateLimitHTTP int
	// Balance answers every create with base_resp 1008 (insufficient balance).
	Balance bool
	// LoseAnswers makes every create make its job and then answer 500; LoseFor, the creates
	// of the prompts it is true for.
	LoseAnswers bool
	LoseFor     func(prompt string) bool
	// Garbage answers every query with a body that is not JSON.
	Garbage bool
}

// Server is a running fake MiniMax.
type Server struct {
	fakekit.Kit
	cfg Config

	jobs     map[string]*job
	byPrompt map[string]int
	files    map[int64]string // file id → task id
	lost     int
	limited  int
	refused  int
	bodies   map[string]map[string]any // prompt → the last create body with it
}

type job struct {
	id, model, prompt, end string
	file                   int64
	polls                  int
}

// Start starts a fake MiniMax on loopback, over TLS like the real one.
func Start(cfg Config) *Server {
	if cfg.Polls <= 0 {
		cfg.Polls = 1
	}
	s := &Server{cfg: cfg, jobs: map[string]*job{}, byPrompt: map[string]int{}, files: map[int64]string{}, bodies: map[string]map[string]any{}}
	s.Serve(s, cfg.FaultPercent, cfg.Seed, 11)
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

// RateLimited is how many creates were refused for the rate (1002 or 429).
func (s *Server) RateLimited() int { return s.Load(&s.limited) }

// Refused is how many calls were refused for the account: its key (1004) or its balance
// (1008).
func (s *Server) Refused() int { return s.Load(&s.refused) }

// Body is the last create body with the prompt (nil: none).
func (s *Server) Body(prompt string) map[string]any { return fakekit.Get(&s.Kit, s.bodies, prompt) }

// Status codes and messages of base_resp (the reference's error code page).
var messages = map[int]string{0: "success", 1000: "unknown error", 1002: "rate limit", 1004: "not authorized",
	1008: "insufficient balance", 1026: "input new_sensitive", 1027: "output new_sensitive", 2013: "invalid params"}

// answer writes a JSON answer with its base_resp.
func answer(w http.ResponseWriter, status, code int, fields map[string]any) {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["base_resp"] = map[string]any{"status_code": code, "status_msg": messages[code]}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(fields)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/download/") {
		s.download(w, r)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+s.cfg.Key {
		s.Inc(&s.refused)
		// MiniMax answers a refused key on HTTP 200 with code 1004.
		answer(w, http.StatusOK, 1004, nil)
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/video_generation":
		s.create(w, r)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/query/video_generation":
		s.query(w, r)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/files/retrieve":
		s.retrieve(w, r)
	default:
		s.Violate("unexpected %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
	}
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		s.Violate("create Content-Type %q", ct)
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.Violate("create body is not JSON: %v", err)
		answer(w, http.StatusOK, 2013, nil)
		return
	}
	prompt, ok := s.check(body)
	s.Locked(func() { s.bodies[prompt] = body })
	if !ok {
		answer(w, http.StatusOK, 2013, nil)
		return
	}
	if strings.Contains(prompt, "[sensitive-input]") {
		answer(w, http.StatusOK, 1026, nil) // refused before any job is made
		return
	}
	switch {
	case s.cfg.Balance:
		s.Inc(&s.refused)
		answer(w, http.StatusOK, 1008, nil)
		return
	case s.cfg.RateLimitHTTP > 0:
		s.Inc(&s.limited)
		w.Header().Set("Retry-After", strconv.Itoa(s.cfg.RateLimitHTTP))
		answer(w, http.StatusTooManyRequests, 1002, nil)
		return
	case s.cfg.RateLimit:
		s.Inc(&s.limited)
		answer(w, http.StatusOK, 1002, nil)
		return
	}
	f := s.Fault(5)
	if prompt, _ := body["prompt"].(string); s.cfg.LoseAnswers || (s.cfg.LoseFor != nil && s.cfg.LoseFor(prompt)) {
		f = 2
	}
	switch f {
	case 0:
		answer(w, http.StatusServiceUnavailable, 1000, nil)
		return
	case 1:
		s.Inc(&s.limited)
		answer(w, http.StatusOK, 1002, nil)
		return
	}
	model, _ := body["model"].(string)
	end := EndSucceed
	if s.cfg.End != nil {
		end = s.cfg.End(prompt)
	}
	s.Mu.Lock()
	j := &job{id: strconv.FormatInt(106916112212032+int64(len(s.jobs)), 10), model: model, prompt: prompt, end: end}
	s.jobs[j.id] = j
	s.byPrompt[prompt]++
	if f >= 2 {
		s.lost++
	}
	s.Mu.Unlock()
	switch f {
	case 2: // the job is made, the answer is a 5xx
		answer(w, http.StatusInternalServerError, 1024, nil)
		return
	case 3: // the job is made, the connection drops before the answer
		if fakekit.Drop(w) {
			return
		}
		answer(w, http.StatusBadGateway, 1000, nil)
		return
	case 4: // the job is made, the answer is cut
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"task_id":"`+j.id[:4])
		return
	}
	answer(w, http.StatusOK, 0, map[string]any{"task_id": j.id})
}

func (s *Server) query(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k := range q {
		if k != "task_id" {
			s.Violate("query parameter %q", k)
		}
	}
	if s.cfg.Garbage {
		_, _ = io.WriteString(w, "<html>bad gateway</html>")
		return
	}
	switch s.Fault(4) {
	case 0:
		answer(w, http.StatusInternalServerError, 1024, nil)
		return
	case 1:
		answer(w, http.StatusOK, 1000, nil) // a transient code on HTTP 200
		return
	case 2:
		_, _ = io.WriteString(w, `{"task_id":"1","status":`)
		return
	case 3:
		w.Header().Set("Retry-After", "1")
		answer(w, http.StatusTooManyRequests, 1002, nil)
		return
	}
	id := q.Get("task_id")
	s.Mu.Lock()
	j, ok := s.jobs[id]
	if !ok {
		s.Mu.Unlock()
		answer(w, http.StatusOK, 2013, nil)
		return
	}
	j.polls++
	status := "Processing"
	if j.polls == 1 {
		status = "Queueing"
	}
	code := 0
	if j.end != EndNever && j.polls > s.cfg.Polls {
		status = "Success"
		if j.end == EndRefuse {
			status, code = "Fail", 1027
		} else if j.file == 0 {
			j.file = 205258526306433 + int64(len(s.files))
			s.files[j.file] = j.id
		}
	}
	file := j.file
	s.Mu.Unlock()
	out := map[string]any{"task_id": id, "status": status}
	if status == "Success" {
		out["file_id"] = strconv.FormatInt(file, 10)
		out["video_width"], out["video_height"] = 1366, 768
	}
	answer(w, http.StatusOK, code, out)
}

// retrieve answers GET /v1/files/retrieve: the file object with a temporary download link,
// which a fault hands out already expired (a fresh retrieval gives a fresh one).
func (s *Server) retrieve(w http.ResponseWriter, r *http.Request) {
	raw := r.URL.Query().Get("file_id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		s.Violate("file_id %q is not an integer", raw)
		answer(w, http.StatusOK, 2013, nil)
		return
	}
	if s.Fault(4) == 0 {
		answer(w, http.StatusInternalServerError, 1024, nil)
		return
	}
	s.Mu.Lock()
	task, ok := s.files[id]
	s.Mu.Unlock()
	if !ok {
		answer(w, http.StatusOK, 2013, nil)
		return
	}
	exp := time.Now().Add(time.Hour)
	if s.Fault(2) == 0 {
		exp = time.Now().Add(-time.Second)
	}
	answer(w, http.StatusOK, 0, map[string]any{"file": map[string]any{"file_id": id, "bytes": 0, "created_at": time.Now().Unix(),
		"filename": "output.mp4", "purpose": "video_generation",
		"download_url": fmt.Sprintf("%s/download/%s.mp4?expires=%d", s.URL(), task, exp.Unix())}})
}

// download serves a download link: 403 once it has expired (a signed CDN link), a 404 as a
// fault.
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	exp, err := strconv.ParseInt(r.URL.Query().Get("expires"), 10, 64)
	if err != nil || time.Now().Unix() > exp {
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

// Create fields of POST /v1/video_generation and their types, from the reference.
var (
	createFields = map[string]string{"model": "string", "prompt": "string", "first_frame_image": "string",
		"last_frame_image": "string", "duration": "integer", "resolution": "string", "prompt_optimizer": "bool",
		"fast_pretreatment": "bool", "callback_url": "string", "aigc_watermark": "bool", "subject_reference": "array"}
	models      = []string{"MiniMax-Hailuo-2.3", "MiniMax-Hailuo-2.3-Fast", "MiniMax-Hailuo-02", "T2V-01-Director", "I2V-01-Director", "I2V-01-live", "I2V-01", "T2V-01", "S2V-01"}
	resolutions = []string{"512P", "720P", "768P", "1080P"}
)

// maxPrompt is the reference's bound of prompt (characters).
const maxPrompt = 2000

// check validates a create body and returns its prompt; false when MiniMax would refuse it.
func (s *Server) check(b map[string]any) (string, bool) {
	ok := true
	bad := func(format string, args ...any) { s.Violate("create: "+format, args...); ok = false }
	for k, v := range b {
		typ, known := createFields[k]
		if !known {
			bad("unknown field %q", k)
			continue
		}
		if !fakekit.HasType(v, typ) {
			bad("%s = %v, want a %s", k, v, typ)
		}
	}
	model, _ := b["model"].(string)
	if !slices.Contains(models, model) {
		bad("model %q", model)
	}
	prompt, _ := b["prompt"].(string)
	frame, hasFrame := b["first_frame_image"].(string)
	if prompt == "" && !hasFrame {
		bad("neither prompt nor first_frame_image")
	}
	if len([]rune(prompt)) > maxPrompt {
		bad("prompt of %d characters", len([]rune(prompt)))
	}
	if hasFrame && !strings.HasPrefix(frame, "https://") && !strings.HasPrefix(frame, "http://") && !strings.HasPrefix(frame, "data:image/") {
		bad("first_frame_image %q is neither a URL nor a data URL", frame)
	}
	d, hasD := b["duration"].(float64)
	if hasD && d != 6 && d != 10 {
		bad("duration %v, want 6 or 10", d)
	}
	res, hasRes := b["resolution"].(string)
	if hasRes && !slices.Contains(resolutions, res) {
		bad("resolution %q", res)
	}
	if res == "1080P" && d == 10 {
		bad("duration 10 at 1080P")
	}
	return prompt, ok
}
