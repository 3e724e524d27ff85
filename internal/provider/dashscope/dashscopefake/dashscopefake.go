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
	fakekit.Kit
	cfg Config

	jobs       map[string]*job
	order      []string
	byPrompt   map[string]int
	lost       int
	limited    int
	refused    int
	lists      int
	expiredOut int // expired links handed out (ExpireFirst)
	expiredHit int // downloads refused for an expired link
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
	s := &Server{cfg: cfg, jobs: map[string]*job{}, byPrompt: map[string]int{}}
	s.Serve(s, cfg.FaultPercent, cfg.Seed, 11)
	return s
}

// Base is the API root an account's base_url names (https://dashscope.aliyuncs.com).
func (s *Server) Base() string { return s.URL() }

// JobsFor is how many jobs creates with the prompt made.
func (s *Server) JobsFor(prompt string) int { return fakekit.Get(&s.Kit, s.byPrompt, prompt) }

// Jobs is how many jobs were made in all.
func (s *Server) Jobs() int { return fakekit.Len(&s.Kit, s.jobs) }

// LostAnswers is how many creates made a job and then failed their answer.
func (s *Server) LostAnswers() int { return s.Load(&s.lost) }

// RateLimited is how many creates were answered 429.
func (s *Server) RateLimited() int { return s.Load(&s.limited) }

// Refused is how many calls were refused for their key (401 InvalidApiKey).
func (s *Server) Refused() int { return s.Load(&s.refused) }

// ExpiredDownloads is how many result downloads were refused for an expired link.
func (s *Server) ExpiredDownloads() int { return s.Load(&s.expiredHit) }

// Lists is how many task lists were read.
func (s *Server) Lists() int { return s.Load(&s.lists) }

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
		s.Inc(&s.refused)
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
		s.Violate("unexpected %s %s", r.Method, r.URL.Path)
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
		s.Violate("create Content-Type %q", ct)
	}
	if a := r.Header.Get("X-DashScope-Async"); a != "enable" {
		// The service refuses a synchronous call of video synthesis.
		s.Violate("create X-DashScope-Async %q", a)
		writeError(w, http.StatusForbidden, "AccessDenied")
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.Violate("create body is not JSON: %v", err)
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
	f := s.Fault(5)
	switch {
	case s.cfg.Arrears:
		writeError(w, http.StatusBadRequest, "Arrearage")
		return
	case s.cfg.RateLimit:
		s.Inc(&s.limited)
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
	s.Mu.Lock()
	j := &job{id: fmt.Sprintf("ds-%08d", len(s.order)+1), model: model, prompt: prompt, end: end, seconds: seconds, submitted: time.Now().Add(-s.cfg.Age)}
	s.jobs[j.id] = j
	s.order = append(s.order, j.id)
	s.byPrompt[prompt]++
	if f >= 2 {
		s.lost++
	}
	s.Mu.Unlock()
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
	if fakekit.Drop(w) {
		return
	}
	writeError(w, http.StatusBadGateway, "BadGateway")
}

// stamp is the service's time format of submit_time (China Standard Time).
const stamp = "2006-01-02 15:04:05.000"

var zone = time.FixedZone("UTC+8", 8*3600)

func (s *Server) get(w http.ResponseWriter, id string) {
	switch s.Fault(4) {
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
	s.Mu.Lock()
	j, ok := s.jobs[id]
	if !ok {
		s.Mu.Unlock()
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
	s.Mu.Unlock()
	out := map[string]any{"task_id": id, "task_status": status, "submit_time": j.submitted.In(zone).Format(stamp)}
	res := map[string]any{"request_id": "req-" + id, "output": out}
	switch status {
	case "SUCCEEDED":
		// The link is valid 24 hours; a fault hands one out already expired (a fresh poll
		// gives a fresh one).
		exp := time.Now().Add(24 * time.Hour)
		s.Mu.Lock()
		stale := s.expiredOut < s.cfg.ExpireFirst
		if stale {
			s.expiredOut++
		}
		s.Mu.Unlock()
		if stale || s.Fault(2) == 0 {
			exp = time.Now().Add(-time.Second)
		}
		out["video_url"] = fmt.Sprintf("%s/files/%s.mp4?Expires=%d", s.URL(), id, exp.Unix())
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
			s.Violate("list query parameter %q", k)
		}
	}
	parse := func(name string, def time.Time) time.Time {
		if q.Get(name) == "" {
			return def
		}
		t, err := time.ParseInLocation("20060102150405", q.Get(name), zone)
		if err != nil {
			s.Violate("list %s %q", name, q.Get(name))
		}
		return t
	}
	from, to := parse("start_time", time.Time{}), parse("end_time", time.Now().Add(time.Hour))
	no, err1 := strconv.Atoi(q.Get("page_no"))
	size, err2 := strconv.Atoi(q.Get("page_size"))
	if err1 != nil || err2 != nil || no < 1 || size < 1 || size > 100 {
		s.Violate("list page_no %q page_size %q", q.Get("page_no"), q.Get("page_size"))
		writeError(w, http.StatusBadRequest, "InvalidParameter")
		return
	}
	if s.Fault(4) == 0 {
		writeError(w, http.StatusInternalServerError, "InternalError")
		return
	}
	s.Mu.Lock()
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
	s.Mu.Unlock()
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
		s.Inc(&s.expiredHit)
		http.Error(w, "Request has expired", http.StatusForbidden)
		return
	}
	clip := s.cfg.Clip
	s.Mu.Lock()
	j := s.jobs[strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/files/"), ".mp4")]
	s.Mu.Unlock()
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
	bad := func(format string, args ...any) { s.Violate("create: "+format, args...); ok = false }
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
			} else if !fakekit.HasType(v, typ) {
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
