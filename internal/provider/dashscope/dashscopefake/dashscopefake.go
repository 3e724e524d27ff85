// Package dashscopefake is a DashScope (Alibaba Cloud Model Studio) video-synthesis API for
// tests, written field by field from the published reference (docs/upstreams.md#dashscope
// cites the pages): POST /api/v1/services/aigc/video-generation/video-synthesis with
// X-DashScope-Async: enable, GET /api/v1/tasks/{task_id} and the task list GET /api/v1/tasks.
// It checks every request it receives — the Bearer key, the async header, the JSON fields,
// their types and values, text-to-video's size and image-to-video's resolution — and records
// what breaks the format as a violation. It counts the paid jobs it makes per prompt, and
// injects the faults a real service shows: refused creates, creates whose answer is lost
// after the job was made, 5xx, 429 (Throttling) with and without Retry-After, malformed and
// cut bodies, result links that have expired, content refusals (DataInspectionFailed), jobs
// that never finish, and results longer than asked.
package dashscopefake

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Ends a job can be given by Config.End.
const (
	EndSucceed = ""         // SUCCEEDED after Config.Polls polls
	EndRefuse  = "refuse"   // FAILED with DataInspectionFailed (a moderation refusal)
	EndNever   = "never"    // stays RUNNING
	EndCancel  = "canceled" // CANCELED
)

// Config sets up a Server.
type Config struct {
	Key  string // the Bearer key it accepts
	Clip string // the file every succeeded job's result link serves (an MP4)
	// ClipFor, when set and not "" for a job's prompt, is the file that job's link serves
	// instead: an upstream that delivers something else than asked (longer, faster).
	ClipFor func(prompt string) string
	// Seconds is usage.video_duration of a succeeded job (default: the request's duration, or 5).
	Seconds float64
	// Polls is how many GETs of a job answer RUNNING before it ends (default 1).
	Polls int
	// FaultPercent is the share of calls (creates, polls, lists, downloads) that fail with one
	// of the faults of their kind, picked at random from Seed.
	FaultPercent int
	Seed         uint64
	// End decides a new job's end from its prompt (nil: every job succeeds).
	End func(prompt string) string
	// RateLimit, when set, answers every create 429 Throttling before any job is made; with
	// RetryAfter > 0 the answer carries that Retry-After.
	RateLimit  bool
	RetryAfter int
	// LoseAnswers makes every create make its job and then answer 500.
	LoseAnswers bool
	// DropBeforeJob makes every create drop its connection before any job is made.
	DropBeforeJob bool
	// Arrears answers every create 400 Arrearage: the account's payments are overdue.
	Arrears bool
	// Age makes every job as if submitted this long ago (its submit_time and gmt_create).
	Age time.Duration
	// ExpireFirst hands out the first this many result links already expired (a task read
	// long after its end, or a clock far apart); later reads give fresh ones.
	ExpireFirst int
}

// Server is a running fake DashScope.
type Server struct {
	cfg Config
	srv *httptest.Server

	mu         sync.Mutex
	rng        *rand.Rand
	jobs       map[string]*job
	order      []string
	byPrompt   map[string]int
	lost       int
	limited    int
	refused    int
	lists      int
	expiredOut int // expired links handed out (ExpireFirst)
	expiredHit int // downloads refused for an expired link
	violations []string
}

type job struct {
	id, model, prompt, end string
	seconds                float64
	submitted              time.Time
	polls                  int
}

// Start starts a fake DashScope on loopback, over TLS like the real one.
func Start(cfg Config) *Server {
	if cfg.Polls <= 0 {
		cfg.Polls = 1
	}
	s := &Server{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 11)), jobs: map[string]*job{}, byPrompt: map[string]int{}}
	s.srv = httptest.NewTLSServer(s)
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Base is the API root an account's base_url names (https://dashscope.aliyuncs.com).
func (s *Server) Base() string { return s.srv.URL }

// TLS is a client configuration that trusts the server's certificate.
func (s *Server) TLS() *tls.Config {
	return &tls.Config{RootCAs: s.srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
}

// Client is an HTTP client that trusts the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// JobsFor is how many jobs creates with the prompt made.
func (s *Server) JobsFor(prompt string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byPrompt[prompt]
}

// Jobs is how many jobs were made in all.
func (s *Server) Jobs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.jobs)
}

// LostAnswers is how many creates made a job and then failed their answer.
func (s *Server) LostAnswers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost
}

// RateLimited is how many creates were answered 429.
func (s *Server) RateLimited() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limited
}

// Refused is how many calls were refused for their key (401 InvalidApiKey).
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// ExpiredDownloads is how many result downloads were refused for an expired link.
func (s *Server) ExpiredDownloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.expiredHit
}

// Lists is how many task lists were read.
func (s *Server) Lists() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists
}

// Violations are the requests that broke the wire format, described.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.violations)
}

func (s *Server) violate(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, fmt.Sprintf(format, args...))
}

func (s *Server) fault(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.FaultPercent <= 0 || s.rng.IntN(100) >= s.cfg.FaultPercent {
		return -1
	}
	return s.rng.IntN(n)
}

const (
	createPath = "/api/v1/services/aigc/video-generation/video-synthesis"
	tasksPath  = "/api/v1/tasks"
)

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/files/") {
		s.download(w, r)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+s.cfg.Key {
		s.mu.Lock()
		s.refused++
		s.mu.Unlock()
		writeError(w, http.StatusUnauthorized, "InvalidApiKey")
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == createPath:
		s.create(w, r)
	case r.Method == http.MethodGet && r.URL.Path == tasksPath:
		s.list(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, tasksPath+"/"):
		s.get(w, strings.TrimPrefix(r.URL.Path, tasksPath+"/"))
	default:
		s.violate("unexpected %s %s", r.Method, r.URL.Path)
		writeError(w, http.StatusNotFound, "NotFound")
	}
}

// writeError answers DashScope's error body: {request_id, code, message}.
func writeError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"request_id":"req-err","code":%q,"message":"raw upstream text for %s"}`, code, code)
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		s.violate("create Content-Type %q", ct)
	}
	if a := r.Header.Get("X-DashScope-Async"); a != "enable" {
		// The service refuses a synchronous call of video synthesis.
		s.violate("create X-DashScope-Async %q", a)
		writeError(w, http.StatusForbidden, "AccessDenied")
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.violate("create body is not JSON: %v", err)
		writeError(w, http.StatusBadRequest, "InvalidParameter")
		return
	}
	prompt, seconds, ok := s.check(body)
	if !ok {
		writeError(w, http.StatusBadRequest, "InvalidParameter")
		return
	}
	if strings.Contains(prompt, "[refuse-input]") {
		// The prompt itself fails moderation: refused at the create, no job.
		writeError(w, http.StatusBadRequest, "DataInspectionFailed")
		return
	}
	f := s.fault(5)
	switch {
	case s.cfg.Arrears:
		writeError(w, http.StatusBadRequest, "Arrearage")
		return
	case s.cfg.RateLimit:
		s.mu.Lock()
		s.limited++
		s.mu.Unlock()
		if s.cfg.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(s.cfg.RetryAfter))
		}
		writeError(w, http.StatusTooManyRequests, "Throttling")
		return
	case s.cfg.DropBeforeJob:
		f = 4
	case s.cfg.LoseAnswers:
		f = 2
	}
	switch f {
	case 0:
		writeError(w, http.StatusInternalServerError, "InternalError")
		return
	case 1:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "Throttling")
		return
	case 4: // the connection drops before any job is made
		hijackClose(w)
		return
	}
	model, _ := body["model"].(string)
	end := EndSucceed
	if s.cfg.End != nil {
		end = s.cfg.End(prompt)
	}
	if s.cfg.Seconds > 0 {
		seconds = s.cfg.Seconds
	}
	s.mu.Lock()
	j := &job{id: fmt.Sprintf("ds-%08d", len(s.order)+1), model: model, prompt: prompt, end: end, seconds: seconds, submitted: time.Now().Add(-s.cfg.Age)}
	s.jobs[j.id] = j
	s.order = append(s.order, j.id)
	s.byPrompt[prompt]++
	if f >= 2 {
		s.lost++
	}
	s.mu.Unlock()
	switch f {
	case 2:
		writeError(w, http.StatusInternalServerError, "InternalError")
		return
	case 3:
		hijackClose(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"request_id":"req-%s","output":{"task_id":%q,"task_status":"PENDING"}}`, j.id, j.id)
}

func hijackClose(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	writeError(w, http.StatusBadGateway, "BadGateway")
}

// stamp is the service's time format of submit_time (China Standard Time).
const stamp = "2006-01-02 15:04:05.000"

var zone = time.FixedZone("UTC+8", 8*3600)

func (s *Server) get(w http.ResponseWriter, id string) {
	switch s.fault(4) {
	case 0:
		writeError(w, http.StatusInternalServerError, "InternalError")
		return
	case 1:
		writeError(w, http.StatusTooManyRequests, "Throttling") // without Retry-After
		return
	case 2:
		_, _ = io.WriteString(w, `{"request_id":"r","output":{"task_id":"`+id+`","task_status":`)
		return
	case 3:
		_, _ = io.WriteString(w, `<html>502 Bad Gateway</html>`)
		return
	}
	s.mu.Lock()
	j, ok := s.jobs[id]
	if !ok {
		s.mu.Unlock()
		// The service answers an id it does not know (or no longer keeps) as UNKNOWN.
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"request_id":"r","output":{"task_id":%q,"task_status":"UNKNOWN"}}`, id)
		return
	}
	j.polls++
	status := "RUNNING"
	if j.polls == 1 {
		status = "PENDING"
	}
	if j.end != EndNever && j.polls > s.cfg.Polls {
		status = map[string]string{EndSucceed: "SUCCEEDED", EndRefuse: "FAILED", EndCancel: "CANCELED"}[j.end]
	}
	s.mu.Unlock()
	out := map[string]any{"task_id": id, "task_status": status, "submit_time": j.submitted.In(zone).Format(stamp)}
	res := map[string]any{"request_id": "req-" + id, "output": out}
	switch status {
	case "SUCCEEDED":
		// The link is valid 24 hours; a fault hands one out already expired (a fresh poll
		// gives a fresh one).
		exp := time.Now().Add(24 * time.Hour)
		s.mu.Lock()
		stale := s.expiredOut < s.cfg.ExpireFirst
		if stale {
			s.expiredOut++
		}
		s.mu.Unlock()
		if stale || s.fault(2) == 0 {
			exp = time.Now().Add(-time.Second)
		}
		out["video_url"] = fmt.Sprintf("%s/files/%s.mp4?Expires=%d", s.srv.URL, id, exp.Unix())
		out["orig_prompt"] = j.prompt
		res["usage"] = map[string]any{"video_duration": j.seconds, "video_count": 1, "SR": 1080}
	case "FAILED":
		out["code"], out["message"] = "DataInspectionFailed", "raw upstream text: output data may contain inappropriate content"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(res)
}

// list answers GET /api/v1/tasks with the SDKs' filters: model_name, start_time and end_time
// (YYYYMMDDhhmmss; read here in the service's UTC+8), status, page_no, page_size; each task as
// the SDKs' AsyncTaskInfo (task_id, status, model_name, request_id, gmt_create in ms).
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k := range q {
		switch k {
		case "model_name", "start_time", "end_time", "status", "page_no", "page_size", "api_key_id", "region":
		default:
			s.violate("list query parameter %q", k)
		}
	}
	parse := func(name string, def time.Time) time.Time {
		if q.Get(name) == "" {
			return def
		}
		t, err := time.ParseInLocation("20060102150405", q.Get(name), zone)
		if err != nil {
			s.violate("list %s %q", name, q.Get(name))
		}
		return t
	}
	from, to := parse("start_time", time.Time{}), parse("end_time", time.Now().Add(time.Hour))
	no, err1 := strconv.Atoi(q.Get("page_no"))
	size, err2 := strconv.Atoi(q.Get("page_size"))
	if err1 != nil || err2 != nil || no < 1 || size < 1 || size > 100 {
		s.violate("list page_no %q page_size %q", q.Get("page_no"), q.Get("page_size"))
		writeError(w, http.StatusBadRequest, "InvalidParameter")
		return
	}
	if s.fault(4) == 0 {
		writeError(w, http.StatusInternalServerError, "InternalError")
		return
	}
	s.mu.Lock()
	s.lists++
	var data []map[string]any
	for i := len(s.order) - 1; i >= 0; i-- {
		j := s.jobs[s.order[i]]
		if m := q.Get("model_name"); m != "" && m != j.model {
			continue
		}
		sub := j.submitted.Truncate(time.Second)
		if sub.Before(from) || sub.After(to) {
			continue
		}
		data = append(data, map[string]any{"task_id": j.id, "status": "RUNNING", "model_name": j.model,
			"request_id": "req-" + j.id, "gmt_create": j.submitted.UnixMilli()})
	}
	s.mu.Unlock()
	total := len(data)
	lo := min((no-1)*size, total)
	hi := min(lo+size, total)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"request_id": "req-list", "total": total, "total_page": (total + size - 1) / size,
		"page_no": no, "page_size": size, "data": data[lo:hi]})
}

// download serves a result link: 403 once it has expired (as an OSS signed link does).
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	exp, err := strconv.ParseInt(r.URL.Query().Get("Expires"), 10, 64)
	if err != nil || time.Now().Unix() > exp {
		s.mu.Lock()
		s.expiredHit++
		s.mu.Unlock()
		http.Error(w, "Request has expired", http.StatusForbidden)
		return
	}
	clip := s.cfg.Clip
	s.mu.Lock()
	j := s.jobs[strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/files/"), ".mp4")]
	s.mu.Unlock()
	if j != nil && s.cfg.ClipFor != nil && s.cfg.ClipFor(j.prompt) != "" {
		clip = s.cfg.ClipFor(j.prompt)
	}
	http.ServeFile(w, r, clip)
}

// The create's fields, from the Wan text-to-video and image-to-video references.
var (
	inputFields = map[string]string{"prompt": "string", "negative_prompt": "string", "img_url": "string", "audio_url": "string",
		"extend_prompt": "bool", "template": "string"}
	paramFields = map[string]string{"size": "string", "resolution": "string", "duration": "integer", "prompt_extend": "bool",
		"seed": "integer", "watermark": "bool", "audio": "bool"}
	sizes = []string{"832*480", "480*832", "624*624",
		"1280*720", "720*1280", "960*960", "1088*832", "832*1088",
		"1920*1080", "1080*1920", "1440*1440", "1632*1248", "1248*1632"}
	resolutions = []string{"480P", "720P", "1080P"}
	durations   = []float64{5, 10, 15}
)

// check validates a create body and returns its prompt and the seconds it asks for (default
// 5); false when DashScope would answer 400.
func (s *Server) check(b map[string]any) (string, float64, bool) {
	ok := true
	bad := func(format string, args ...any) { s.violate("create: "+format, args...); ok = false }
	for k := range b {
		if k != "model" && k != "input" && k != "parameters" {
			bad("unknown field %q", k)
		}
	}
	model, _ := b["model"].(string)
	if model == "" {
		bad("model is missing")
	}
	in, _ := b["input"].(map[string]any)
	if in == nil {
		bad("input is missing")
	}
	params, _ := b["parameters"].(map[string]any)
	typed := func(where string, m map[string]any, fields map[string]string) {
		for k, v := range m {
			typ, known := fields[k]
			if !known {
				bad("unknown field %s.%s", where, k)
			} else if !hasType(v, typ) {
				bad("%s.%s = %v, want a %s", where, k, v, typ)
			}
		}
	}
	typed("input", in, inputFields)
	typed("parameters", params, paramFields)
	prompt, _ := in["prompt"].(string)
	img, hasImg := in["img_url"].(string)
	i2v := strings.Contains(model, "i2v")
	switch {
	case i2v && (!hasImg || !strings.HasPrefix(img, "http")):
		bad("model %s needs input.img_url, got %q", model, img)
	case !i2v && hasImg:
		bad("model %s takes no input.img_url", model)
	case !i2v && prompt == "":
		bad("text-to-video needs input.prompt")
	}
	size, hasSize := params["size"].(string)
	res, hasRes := params["resolution"].(string)
	switch {
	case i2v && hasSize:
		bad("image-to-video takes parameters.resolution, not size %q", size)
	case !i2v && hasRes:
		bad("text-to-video takes parameters.size, not resolution %q", res)
	}
	if hasSize && !slices.Contains(sizes, size) {
		bad("parameters.size %q", size)
	}
	if hasRes && !slices.Contains(resolutions, res) {
		bad("parameters.resolution %q", res)
	}
	seconds := 5.0
	if d, has := params["duration"].(float64); has {
		if !slices.Contains(durations, d) {
			bad("parameters.duration %v", d)
		}
		seconds = d
	}
	if sd, has := params["seed"].(float64); has && (sd < 0 || sd > 2147483647) {
		bad("parameters.seed %v outside 0..2147483647", sd)
	}
	return prompt, seconds, ok
}

func hasType(v any, typ string) bool {
	switch typ {
	case "string":
		_, ok := v.(string)
		return ok
	case "bool":
		_, ok := v.(bool)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	}
	return false
}

// Certificate is the server's TLS certificate, for a client that trusts several fakes.
func (s *Server) Certificate() *x509.Certificate { return s.srv.Certificate() }
