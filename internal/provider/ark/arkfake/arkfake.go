// Package arkfake is an Ark content-generation API for tests, written from the documented
// wire format (the official SDK's model package): POST, GET and list of
// {base}/contents/generations/tasks. It checks every request it receives — the Bearer key,
// the JSON fields and their types, the content items and their roles — and records what breaks
// the format as a violation. It counts the paid jobs it makes per task tag
// (safety_identifier), and can inject the faults a real upstream shows: refused creates,
// creates whose answer is lost after the job was made, 5xx, 429 with Retry-After, malformed
// bodies, result links that 404 or have expired, content refusals and jobs that never finish.
package arkfake

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
	EndSucceed = ""        // succeeds after Config.Polls polls
	EndRefuse  = "refuse"  // fails with a content refusal (OutputVideoSensitiveContentDetected)
	EndNever   = "never"   // stays running
	EndExpire  = "expired" // Ark's own timeout: status expired
)

// Config sets up a Server.
type Config struct {
	Key    string // the Bearer key it accepts
	Clip   string // the file every succeeded job's result link serves (an MP4)
	Tokens int64  // usage.completion_tokens of a succeeded job
	// TokensFor, when set and non-zero for a job's prompt, replaces Tokens for that job.
	TokensFor func(prompt string) int64
	// Polls is how many GETs of a job answer running before it succeeds (default 1).
	Polls int
	// FaultPercent is the share of calls (creates, polls, lists, result downloads) that fail
	// with one of the faults of their kind, picked at random from Seed.
	FaultPercent int
	Seed         uint64
	// Stall, when set, adds a fault of polls: the answer starts, then stalls this long before
	// it ends (a slow body, for the client's timeout to cut).
	Stall time.Duration
	// End decides a new job's end from its prompt (nil: every job succeeds).
	End func(prompt string) string
	// RateLimit, when set, answers every create 429 with Retry-After of this many seconds,
	// before any job is made: a rate-limited account.
	RateLimit int
	// LoseAnswers makes every create make its job and then answer 500: an account whose
	// create answers are all lost.
	LoseAnswers bool
	// KnownAsset, when set, is the account's asset library: a content item's
	// asset://<id> (how Seedance 2.0 takes a library asset) must name an id it knows, or it
	// is a violation. Without it, asset:// references are violations.
	KnownAsset func(id string) bool
}

// Server is a running fake Ark.
type Server struct {
	fakekit.Kit
	cfg Config

	jobs    map[string]*job
	order   []string       // job ids, oldest first
	byTag   map[string]int // safety_identifier → jobs made
	running int
	peak    int
	lost    int      // creates that made a job and lost the answer
	limited int      // creates answered 429 (RateLimit)
	refused int      // calls refused for their key (401)
	stalls  int      // poll answers that stalled
	urls    []string // every content item's URL, in the order received
}

type job struct {
	id, model, tag, prompt, end string
	created                     int64
	polls                       int
	done                        bool
}

// Start starts a fake Ark on loopback, over TLS like the real one.
func Start(cfg Config) *Server {
	if cfg.Polls <= 0 {
		cfg.Polls = 1
	}
	s := &Server{cfg: cfg, jobs: map[string]*job{}, byTag: map[string]int{}}
	s.Serve(s, cfg.FaultPercent, cfg.Seed, 7)
	return s
}

// Base is the API base URL an account's base_url names.
func (s *Server) Base() string { return s.URL() + "/api/v3" }

// JobsFor is how many jobs creates with the tag made (ark.Tag of a task's idempotency key).
func (s *Server) JobsFor(tag string) int { return fakekit.Get(&s.Kit, s.byTag, tag) }

// Jobs is how many jobs were made in all.
func (s *Server) Jobs() int { return fakekit.Len(&s.Kit, s.jobs) }

// Peak is the most jobs running at once (made and not yet reported ended).
func (s *Server) Peak() int { return s.Load(&s.peak) }

// LostAnswers is how many creates made a job and then failed their answer.
func (s *Server) LostAnswers() int { return s.Load(&s.lost) }

// RateLimited is how many creates were answered 429 (Config.RateLimit).
func (s *Server) RateLimited() int { return s.Load(&s.limited) }

// Refused is how many calls were refused for their key (401).
func (s *Server) Refused() int { return s.Load(&s.refused) }

// Stalls is how many poll answers stalled (Config.Stall).
func (s *Server) Stalls() int { return s.Load(&s.stalls) }

// URLs are the content items' URLs of every create received, in order.
func (s *Server) URLs() []string { return fakekit.Clone(&s.Kit, &s.urls) }

const apiPrefix = "/api/v3/contents/generations/tasks"

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/files/") {
		s.download(w, r)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+s.cfg.Key {
		s.Inc(&s.refused)
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"code":"AuthenticationError","message":"The API key in the request is missing or invalid."}}`)
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == apiPrefix:
		s.create(w, r)
	case r.Method == http.MethodGet && r.URL.Path == apiPrefix:
		s.list(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, apiPrefix+"/"):
		s.get(w, strings.TrimPrefix(r.URL.Path, apiPrefix+"/"))
	default:
		s.Violate("unexpected %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
	}
}

func writeError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"error":{"code":%q,"message":"raw upstream text for %s"}}`, code, code)
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		s.Violate("create Content-Type %q", ct)
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.Violate("create body is not JSON: %v", err)
		writeError(w, http.StatusBadRequest, "InvalidParameter")
		return
	}
	prompt, ok := s.check(body)
	if !ok {
		writeError(w, http.StatusBadRequest, "InvalidParameter")
		return
	}
	f := s.Fault(4)
	switch {
	case s.cfg.RateLimit > 0:
		s.Inc(&s.limited)
		w.Header().Set("Retry-After", strconv.Itoa(s.cfg.RateLimit))
		writeError(w, http.StatusTooManyRequests, "RateLimitExceeded")
		return
	case s.cfg.LoseAnswers:
		f = 2
	}
	switch f {
	case 0:
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailable")
		return
	case 1:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "RateLimitExceeded")
		return
	}
	model, _ := body["model"].(string)
	tag, _ := body["safety_identifier"].(string)
	end := EndSucceed
	if s.cfg.End != nil {
		end = s.cfg.End(prompt)
	}
	s.Mu.Lock()
	j := &job{id: fmt.Sprintf("cgt-%06d", len(s.order)+1), model: model, tag: tag, prompt: prompt, end: end, created: time.Now().Unix()}
	s.jobs[j.id] = j
	s.order = append(s.order, j.id)
	s.byTag[tag]++
	s.running++
	s.peak = max(s.peak, s.running)
	if f >= 2 {
		s.lost++
	}
	s.Mu.Unlock()
	switch f {
	case 2: // the job is made, the answer is a 5xx
		writeError(w, http.StatusInternalServerError, "InternalServiceError")
		return
	case 3: // the job is made, the connection drops before the answer
		if fakekit.Drop(w) {
			return
		}
		writeError(w, http.StatusBadGateway, "BadGateway")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"id":%q}`, j.id)
}

func (s *Server) get(w http.ResponseWriter, id string) {
	classes := 3
	if s.cfg.Stall > 0 {
		classes = 4
	}
	switch s.Fault(classes) {
	case 3:
		s.Inc(&s.stalls)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"`+id+`",`)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		time.Sleep(s.cfg.Stall)
		_, _ = io.WriteString(w, `"status":"running"}`)
		return
	case 0:
		writeError(w, http.StatusInternalServerError, "InternalServiceError")
		return
	case 1:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "RateLimitExceeded")
		return
	case 2:
		_, _ = io.WriteString(w, `{"id":"`+id+`","status":`)
		return
	}
	s.Mu.Lock()
	j, ok := s.jobs[id]
	if !ok {
		s.Mu.Unlock()
		writeError(w, http.StatusNotFound, "ResourceNotFound")
		return
	}
	j.polls++
	status := "running"
	if j.end != EndNever && j.polls > s.cfg.Polls {
		status = "succeeded"
		switch j.end {
		case EndRefuse:
			status = "failed"
		case EndExpire:
			status = "expired"
		}
		if !j.done {
			j.done = true
			s.running--
		}
	}
	s.Mu.Unlock()
	out := map[string]any{"id": id, "model": j.model, "status": status, "created_at": j.created, "updated_at": time.Now().Unix()}
	switch status {
	case "succeeded":
		// The result link is temporary, as Ark's are: it carries its expiry, and a fault
		// hands one out already expired (a re-poll gives a fresh one).
		exp := time.Now().Add(time.Hour)
		if s.Fault(2) == 0 {
			exp = time.Now().Add(-time.Second)
		}
		out["content"] = map[string]any{"video_url": fmt.Sprintf("%s/files/%s.mp4?expires=%d", s.URL(), id, exp.Unix())}
		tokens := s.cfg.Tokens
		if s.cfg.TokensFor != nil && s.cfg.TokensFor(j.prompt) != 0 {
			tokens = s.cfg.TokensFor(j.prompt)
		}
		out["usage"] = map[string]any{"completion_tokens": tokens}
	case "failed":
		out["error"] = map[string]any{"code": "OutputVideoSensitiveContentDetected", "message": "raw upstream text: the output may contain sensitive content"}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// list answers GET …/tasks with the documented query: page_num, page_size, filter.model,
// filter.status, filter.task_ids; newest first, as ListContentGenerationTasksResponse.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k := range q {
		switch k {
		case "page_num", "page_size", "filter.model", "filter.status", "filter.task_ids", "filter.service_tier":
		default:
			s.Violate("list query parameter %q", k)
		}
	}
	num, err1 := strconv.Atoi(q.Get("page_num"))
	size, err2 := strconv.Atoi(q.Get("page_size"))
	if err1 != nil || err2 != nil || num < 1 || size < 1 || size > 500 {
		s.Violate("list page_num %q page_size %q", q.Get("page_num"), q.Get("page_size"))
		writeError(w, http.StatusBadRequest, "InvalidParameter")
		return
	}
	if s.Fault(4) == 0 {
		writeError(w, http.StatusInternalServerError, "InternalServiceError")
		return
	}
	s.Mu.Lock()
	var items []map[string]any
	for i := len(s.order) - 1; i >= 0; i-- {
		j := s.jobs[s.order[i]]
		if m := q.Get("filter.model"); m != "" && m != j.model {
			continue
		}
		items = append(items, map[string]any{"id": j.id, "model": j.model, "status": "running", "safety_identifier": j.tag, "created_at": j.created})
	}
	s.Mu.Unlock()
	total := len(items)
	lo := min((num-1)*size, total)
	hi := min(lo+size, total)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"total": total, "items": items[lo:hi]})
}

// download serves a result link: 403 once it has expired (as a signed CDN link does), and
// a 404 as a fault.
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
	http.ServeFile(w, r, s.cfg.Clip)
}

// Known create fields and content roles, from the SDK's CreateContentGenerationTaskRequest.
var (
	createFields = map[string]string{"model": "string", "content": "array", "ratio": "string", "resolution": "string",
		"duration": "integer", "seed": "integer", "watermark": "bool", "generate_audio": "bool", "safety_identifier": "string",
		"return_last_frame": "bool", "callback_url": "string", "omni_reference_task_type": "string", "output_format": "string",
		"camera_fixed": "bool", "service_tier": "string", "execution_expires_after": "integer", "frames": "integer", "draft": "bool"}
	roles = map[string][]string{
		"image_url": {"first_frame", "last_frame", "reference_image"},
		"video_url": {"reference_video"},
		"audio_url": {"reference_audio"},
	}
	ratios      = []string{"16:9", "4:3", "1:1", "3:4", "9:16", "21:9", "adaptive"}
	resolutions = []string{"480p", "720p", "1080p"}
)

// check validates a create body and returns its prompt; false when Ark would answer 400.
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
	if m, _ := b["model"].(string); m == "" {
		bad("model is missing")
	}
	if r, has := b["ratio"].(string); has && !slices.Contains(ratios, r) {
		bad("ratio %q", r)
	}
	if r, has := b["resolution"].(string); has && !slices.Contains(resolutions, r) {
		bad("resolution %q", r)
	}
	if d, has := b["duration"].(float64); has && (d < 2 || d > 15) {
		bad("duration %v outside 2..15", d)
	}
	if tt, has := b["omni_reference_task_type"].(string); has && !slices.Contains([]string{"reference", "edit", "extend"}, tt) {
		bad("omni_reference_task_type %q", tt)
	}
	if t, has := b["safety_identifier"].(string); has && len(t) > 64 {
		bad("safety_identifier of %d characters", len(t))
	}
	items, _ := b["content"].([]any)
	if len(items) == 0 {
		bad("content is empty")
	}
	prompt, texts := "", 0
	for _, it := range items {
		m, isObj := it.(map[string]any)
		if !isObj {
			bad("content item %v", it)
			continue
		}
		typ, _ := m["type"].(string)
		switch typ {
		case "text":
			texts++
			t, isStr := m["text"].(string)
			if !isStr || len(m) != 2 {
				bad("text item %v", m)
			}
			prompt = t
		case "image_url", "video_url", "audio_url":
			ref, isObj := m[typ].(map[string]any)
			u, _ := ref["url"].(string)
			role, _ := m["role"].(string)
			s.Locked(func() { s.urls = append(s.urls, u) })
			if id, isAsset := strings.CutPrefix(u, "asset://"); isAsset {
				if s.cfg.KnownAsset == nil || !s.cfg.KnownAsset(id) {
					bad("%s item names asset %q, which is not an Active asset of the account's library", typ, id)
				}
			} else if !strings.HasPrefix(u, "http") {
				bad("%s item %v", typ, m)
			}
			if !isObj || !slices.Contains(roles[typ], role) || len(m) != 3 {
				bad("%s item %v", typ, m)
			}
		default:
			bad("content item type %q", typ)
		}
	}
	if texts > 1 {
		bad("%d text items", texts)
	}
	return prompt, ok
}
