// Package klingfake is a Kling video API for tests, written field by field from Kling's
// published API reference (docs/upstreams.md#kling cites the pages): POST
// {base}/v1/videos/text2video and /image2video, and GET of a task by its task_id or its
// external_task_id. It checks every request it receives — the JWT (HS256 with the account's
// secret key, iss the access key, exp and nbf), the JSON fields, their types and values —
// and records what breaks the format as a violation. It refuses a second create with an
// external_task_id already used, as Kling does, counts the paid jobs it makes per
// external_task_id, and can inject the faults a real upstream shows: creates whose answer is
// lost after the task was made, 5xx, 429 with and without Retry-After, malformed and cut
// bodies, result links that expire, content refusals, and tasks that never end.
package klingfake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"mediagen/internal/provider/fakekit"
)

// Ends a task can be given by Config.End.
const (
	EndSucceed = ""       // succeeds after Config.Polls polls
	EndRefuse  = "refuse" // fails with a content-risk task_status_msg
	EndNever   = "never"  // stays processing
)

// Config sets up a Server.
type Config struct {
	AccessKey, SecretKey string // the account whose tokens it accepts
	Clip                 string // the file every succeeded task's result link serves (an MP4)
	// ClipFor, when set and not "" for a task's prompt, replaces Clip for that task; with
	// DurationFor, the task's task_result duration.
	ClipFor     func(prompt string) string
	DurationFor func(prompt string) string
	// Duration is task_result.videos[].duration of a succeeded task (default "5").
	Duration string
	// Polls is how many reads of a task answer processing before it succeeds (default 1).
	Polls int
	// FaultPercent is the share of calls (creates, reads, downloads) that fail with one of
	// the faults of their kind, picked at random from Seed.
	FaultPercent int
	Seed         uint64
	// End decides a new task's end from its prompt (nil: every task succeeds).
	End func(prompt string) string
	// RateLimit, when set, answers every create 429 (code 1302) with Retry-After of this
	// many seconds, before any task is made: a rate-limited account.
	RateLimit int
	// LoseAnswers makes every create make its task and then answer 500.
	LoseAnswers bool
	// MaxTokenLife is the longest exp−nbf a token may span (default 30 min + 10 s).
	MaxTokenLife time.Duration
}

// Server is a running fake Kling.
type Server struct {
	fakekit.Kit
	cfg Config

	tasks      map[string]*task // by task_id
	byExternal map[string]*task
	jobsFor    map[string]int // external_task_id → tasks made
	tokens     map[string]bool
	running    int
	peak       int
	lost       int
	limited    int
	refused    int
}

type task struct {
	id, endpoint, external, prompt, end string
	created                             int64
	polls                               int
	done                                bool
}

// Start starts a fake Kling on loopback, over TLS like the real one.
func Start(cfg Config) *Server {
	if cfg.Polls <= 0 {
		cfg.Polls = 1
	}
	if cfg.Duration == "" {
		cfg.Duration = "5"
	}
	if cfg.MaxTokenLife == 0 {
		cfg.MaxTokenLife = 30*time.Minute + 10*time.Second
	}
	s := &Server{cfg: cfg, tasks: map[string]*task{},
		byExternal: map[string]*task{}, jobsFor: map[string]int{}, tokens: map[string]bool{}}
	s.Serve(s, cfg.FaultPercent, cfg.Seed, 11)
	return s
}

// Base is the API root an account's base_url names.
func (s *Server) Base() string { return s.URL() }

// JobsFor is how many tasks creates with the external_task_id made.
func (s *Server) JobsFor(external string) int { return fakekit.Get(&s.Kit, s.jobsFor, external) }

// Jobs is how many tasks were made in all.
func (s *Server) Jobs() int { return fakekit.Len(&s.Kit, s.tasks) }

// Peak is the most tasks running at once (made and not yet reported ended).
func (s *Server) Peak() int { return s.Load(&s.peak) }

// LostAnswers is how many creates made a task and then failed their answer.
func (s *Server) LostAnswers() int { return s.Load(&s.lost) }

// RateLimited is how many creates were answered 429 (Config.RateLimit).
func (s *Server) RateLimited() int { return s.Load(&s.limited) }

// Refused is how many calls were refused for their token (401).
func (s *Server) Refused() int { return s.Load(&s.refused) }

// Tokens is how many different tokens were accepted.
func (s *Server) Tokens() int { return fakekit.Len(&s.Kit, s.tokens) }

// writeError answers Kling's error envelope: an HTTP status, a numeric code and a message.
func writeError(w http.ResponseWriter, status, code int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"code":%d,"message":"raw upstream text for %d","request_id":"req-%d"}`, code, code, code)
}

func writeData(w http.ResponseWriter, data any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"code": 0, "message": "SUCCEED", "request_id": "req-ok", "data": data})
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/files/") {
		s.download(w, r)
		return
	}
	if code := s.authorize(r.Header.Get("Authorization")); code != 0 {
		s.Inc(&s.refused)
		writeError(w, http.StatusUnauthorized, code)
		return
	}
	ep, id, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/videos/"), "/")
	if !strings.HasPrefix(r.URL.Path, "/v1/videos/") || (ep != "text2video" && ep != "image2video") {
		s.Violate("unexpected %s %s", r.Method, r.URL.Path)
		writeError(w, http.StatusNotFound, 1202)
		return
	}
	switch {
	case r.Method == http.MethodPost && id == "":
		s.create(w, r, ep)
	case r.Method == http.MethodGet && id != "":
		s.get(w, ep, id)
	default:
		s.Violate("unexpected %s %s", r.Method, r.URL.Path)
		writeError(w, http.StatusNotFound, 1202)
	}
}

// authorize checks the Bearer JWT as Kling's reference describes it: HS256 signed with the
// secret key, iss the access key, exp and nbf set, valid now. 0, or the error code (1001
// empty, 1002 invalid, 1003 not yet valid, 1004 expired).
func (s *Server) authorize(h string) int {
	raw, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || raw == "" {
		return 1001
	}
	var claims jwt.RegisteredClaims
	tok, err := jwt.ParseWithClaims(raw, &claims, func(*jwt.Token) (any, error) { return []byte(s.cfg.SecretKey), nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithIssuer(s.cfg.AccessKey), jwt.WithExpirationRequired())
	switch {
	case err != nil && strings.Contains(err.Error(), "not valid yet"):
		return 1003
	case err != nil && strings.Contains(err.Error(), "expired"):
		return 1004
	case err != nil || !tok.Valid:
		return 1002
	case claims.NotBefore == nil:
		s.Violate("token without nbf")
		return 1002
	case claims.ExpiresAt.Sub(claims.NotBefore.Time) > s.cfg.MaxTokenLife:
		s.Violate("token valid for %v", claims.ExpiresAt.Sub(claims.NotBefore.Time))
	}
	if typ, _ := tok.Header["typ"].(string); typ != "JWT" {
		s.Violate("token header typ %q", typ)
	}
	s.Locked(func() { s.tokens[raw] = true })
	return 0
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, ep string) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		s.Violate("create Content-Type %q", ct)
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.Violate("create body is not JSON: %v", err)
		writeError(w, http.StatusBadRequest, 1200)
		return
	}
	if !s.check(ep, body) {
		writeError(w, http.StatusBadRequest, 1201)
		return
	}
	if s.cfg.RateLimit > 0 {
		s.Inc(&s.limited)
		w.Header().Set("Retry-After", strconv.Itoa(s.cfg.RateLimit))
		writeError(w, http.StatusTooManyRequests, 1302)
		return
	}
	f := s.Fault(5)
	if s.cfg.LoseAnswers {
		f = 3
	}
	switch f {
	case 0:
		writeError(w, http.StatusServiceUnavailable, 5001)
		return
	case 1:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, 1303)
		return
	case 2: // 429 without Retry-After
		writeError(w, http.StatusTooManyRequests, 1302)
		return
	}
	prompt, _ := body["prompt"].(string)
	external, _ := body["external_task_id"].(string)
	end := EndSucceed
	if s.cfg.End != nil {
		end = s.cfg.End(prompt)
	}
	var t *task
	dup := false
	s.Locked(func() {
		if external != "" && s.byExternal[external] != nil {
			dup = true
			return
		}
		t = &task{id: strconv.Itoa(831922345719271433 + len(s.tasks)), endpoint: ep, external: external, prompt: prompt, end: end, created: time.Now().UnixMilli()}
		s.tasks[t.id] = t
		if external != "" {
			s.byExternal[external] = t
		}
		s.jobsFor[external]++
		s.running++
		s.peak = max(s.peak, s.running)
		if f >= 3 {
			s.lost++
		}
	})
	if dup { // Kling keeps external_task_id unique per account
		writeError(w, http.StatusBadRequest, 1201)
		return
	}
	switch f {
	case 3: // the task is made, the answer is a 5xx
		writeError(w, http.StatusInternalServerError, 5000)
		return
	case 4: // the task is made, the connection drops before the answer
		if fakekit.Drop(w) {
			return
		}
		writeError(w, http.StatusBadGateway, 5000)
		return
	}
	writeData(w, s.view(t, "submitted"))
}

func (s *Server) view(t *task, status string) map[string]any {
	out := map[string]any{"task_id": t.id, "task_status": status, "created_at": t.created, "updated_at": time.Now().UnixMilli(),
		"task_info": map[string]any{}}
	if t.external != "" {
		out["task_info"] = map[string]any{"external_task_id": t.external}
	}
	return out
}

func (s *Server) get(w http.ResponseWriter, ep, id string) {
	switch s.Fault(4) {
	case 0:
		writeError(w, http.StatusInternalServerError, 5000)
		return
	case 1:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, 1302)
		return
	case 2: // a cut body
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"code":0,"data":{"task_id":"`+id+`","task_status":`)
		return
	case 3: // garbage
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, `<html>502 Bad Gateway</html>`)
		return
	}
	var t *task
	status := "processing"
	s.Locked(func() {
		t = s.tasks[id]
		if t == nil {
			t = s.byExternal[id]
		}
		if t == nil || t.endpoint != ep {
			t = nil
			return
		}
		t.polls++
		if t.end != EndNever && t.polls > s.cfg.Polls {
			status = "succeed"
			if t.end == EndRefuse {
				status = "failed"
			}
			if !t.done {
				t.done = true
				s.running--
			}
		}
	})
	if t == nil {
		writeError(w, http.StatusNotFound, 1203)
		return
	}
	out := s.view(t, status)
	switch status {
	case "succeed":
		// Kling's result links are temporary (its reference: cleared after 30 days); a
		// fault hands one out already expired, and a new read gives a fresh one.
		exp := time.Now().Add(time.Hour)
		if s.Fault(2) == 0 {
			exp = time.Now().Add(-time.Second)
		}
		d := s.cfg.Duration
		if s.cfg.DurationFor != nil && s.cfg.DurationFor(t.prompt) != "" {
			d = s.cfg.DurationFor(t.prompt)
		}
		out["task_result"] = map[string]any{"videos": []any{map[string]any{"id": "v-" + t.id,
			"url": fmt.Sprintf("%s/files/%s.mp4?expires=%d", s.URL(), t.id, exp.Unix()), "duration": d}}}
	case "failed":
		out["task_status_msg"] = "Failure to pass the risk control system"
	}
	writeData(w, out)
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
	clip := s.cfg.Clip
	if s.cfg.ClipFor != nil {
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/files/"), ".mp4")
		var prompt string
		s.Locked(func() {
			if t := s.tasks[id]; t != nil {
				prompt = t.prompt
			}
		})
		if c := s.cfg.ClipFor(prompt); c != "" {
			clip = c
		}
	}
	http.ServeFile(w, r, clip)
}

// Create fields by endpoint, from the reference's request body tables.
var (
	common = map[string]string{"model_name": "string", "prompt": "string", "negative_prompt": "string", "cfg_scale": "number",
		"mode": "string", "duration": "string", "callback_url": "string", "external_task_id": "string", "camera_control": "object",
		"sound": "string", "watermark_info": "object"}
	only = map[string]map[string]string{
		"text2video":  {"aspect_ratio": "string"},
		"image2video": {"image": "string", "image_tail": "string", "static_mask": "string", "dynamic_masks": "array"},
	}
	models  = []string{"kling-v1", "kling-v1-5", "kling-v1-6", "kling-v2-master", "kling-v2-1", "kling-v2-1-master", "kling-v2-5-turbo", "kling-v2-6"}
	ratios  = []string{"16:9", "9:16", "1:1"}
	modes   = []string{"std", "pro"}
	lengths = []string{"5", "10"}
)

// check validates a create body; false when Kling would answer 400.
func (s *Server) check(ep string, b map[string]any) bool {
	ok := true
	bad := func(format string, args ...any) { s.Violate(ep+" create: "+format, args...); ok = false }
	for k, v := range b {
		typ, known := common[k]
		if !known {
			typ, known = only[ep][k]
		}
		if !known {
			bad("unknown field %q", k)
			continue
		}
		if !fakekit.HasType(v, typ) {
			bad("%s = %v, want a %s", k, v, typ)
		}
	}
	if m, _ := b["model_name"].(string); !slices.Contains(models, m) {
		bad("model_name %q", m)
	}
	if v, has := b["mode"].(string); has && !slices.Contains(modes, v) {
		bad("mode %q", v)
	}
	if v, has := b["duration"].(string); has && !slices.Contains(lengths, v) {
		bad("duration %q", v)
	}
	if v, has := b["aspect_ratio"].(string); has && !slices.Contains(ratios, v) {
		bad("aspect_ratio %q", v)
	}
	if p, _ := b["prompt"].(string); len([]rune(p)) > 2500 {
		bad("prompt of %d characters", len([]rune(p)))
	}
	if e, has := b["external_task_id"].(string); has && (e == "" || len(e) > 64) {
		bad("external_task_id %q", e)
	}
	switch ep {
	case "text2video":
		if p, _ := b["prompt"].(string); p == "" {
			bad("prompt is required")
		}
	case "image2video":
		img, _ := b["image"].(string)
		tail, _ := b["image_tail"].(string)
		if img == "" && tail == "" {
			bad("one of image and image_tail is required")
		}
		for _, u := range []string{img, tail} {
			if u != "" && !strings.HasPrefix(u, "http") {
				bad("image %q is neither a URL nor Base64 we send", u)
			}
		}
	}
	return ok
}
