// Package mediakitfake is Volcengine/BytePlus AI MediaKit's video enhancement API for tests,
// carried over field by field from the vendor's published parameters (Volcengine's "提交画质
// 增强(标准版和专业版)任务 API" and "提交画质增强(极速版)任务 API",
// https://www.volcengine.com/docs/6448/2279230, as the vendor CLI github.com/volcengine/
// mediakit-cli lists them in skills/byted-mediakit-video/reference/enhance-video.md and
// enhance-video-fast.md; its internal/cloud/api_info.go for the paths, request.go for the
// Bearer key, docs/error-codes.md for success=false and the task states):
//
//   - POST /api/v1/tools/enhance-video-fast: video_url (required), resolution 240p…4k or
//     resolution_limit 128…2160 (one at most), fps 15…120, bitrate_level low|medium|high,
//     callback_url, callback_args, client_token (≤ 64 printable ASCII), queue_id,
//     media_output_destination;
//   - POST /api/v1/tools/enhance-video: the same plus tool_version standard|professional,
//     resolution up to 8k, resolution_limit up to 4320, scene common|ugc|short_series|aigc|
//     old_film (standard only), bit_depth 8|10|12 (professional only);
//   - both answer {success, task_id, request_id}; a create repeated with a client_token
//     already used answers the task that token made (idempotency);
//   - GET /api/v1/tasks/{task_id}: {success, task_id, task_type, status queued|running|
//     completed|failed, result {video_url, duration, fps, resolution, tool_version}, error
//     {code, message}}; result.video_url is a link valid 24 hours.
//
// The fake fetches the video_url it is given, refuses a source outside the tools' input
// bounds (long side 360…2560, short side 360…1440), and makes the output with ffmpeg from it
// (scaled to the target short side, at the fps asked or the source's): a real MP4 the service
// copies and measures. It checks every request and records what breaks the format as a
// violation, counts the paid jobs per client_token, and injects faults: a create that makes
// its job and loses the answer, 401/403, 429 with Retry-After, 5xx, a body that is not JSON,
// a refusal by vendor error code, a job that never ends.
package mediakitfake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/provider/fakekit"
)

// Ends a job can be given by Config.End.
const (
	EndSucceed = ""       // completes after Config.Polls reads
	EndRefuse  = "refuse" // fails with the vendor code in RefuseCode
	EndNever   = "never"  // stays running
)

// RefuseCode is the error code of a job Config.End refuses.
const RefuseCode = "InvalidParameter.VideoContent"

// InputCode is the error code of a job whose source is outside the input bounds.
const InputCode = "InvalidParameter.InputResolution"

// Config sets up a Server.
type Config struct {
	Key   string       // the Bearer key it accepts
	Tools ffmpeg.Tools // makes the outputs
	Dir   string       // where sources and outputs go
	// Fetch reads the video_url of a job (default: a client with a 30 s timeout; the
	// service's signed links are plain http on loopback in tests).
	Fetch *http.Client
	// Polls is how many reads of a job answer running before it completes (default 1).
	Polls int
	// End decides a new job's end from its client_token and create body (nil: every job
	// succeeds).
	End func(token string, body map[string]any) string
	// FaultPercent is the share of calls (creates, reads, downloads) that fail with one of the
	// faults of their kind, picked at random from Seed.
	FaultPercent int
	Seed         uint64
	// Status, when set, answers every API call with it (401, 403, 500…), before any job.
	Status int
	// RateLimit answers every create 429 before any job is made, with this Retry-After in
	// seconds (-1: none).
	RateLimit int
	// LoseAnswers makes every create make its job (or find it by client_token) and answer 502.
	LoseAnswers bool
	// LoseFirst makes the first n creates make their job and answer 502.
	LoseFirst int
	// Garbage answers every task read with a body that is not JSON.
	Garbage bool
}

// Server is a running fake AI MediaKit.
type Server struct {
	fakekit.Kit
	cfg Config

	jobs    map[string]*job // by task id
	byToken map[string]*job
	creates map[string]int // create calls per client_token
	lost    int
	limited int
	refused int
}

type job struct {
	id, token, path, end string
	body                 map[string]any
	polls                int
	out                  string // the output file once made
	failCode             string
	seconds, fps         float64
	resolution           string
}

// Start starts a fake AI MediaKit on loopback, over TLS like the real one.
func Start(cfg Config) *Server {
	if cfg.Polls <= 0 {
		cfg.Polls = 1
	}
	if cfg.Fetch == nil {
		cfg.Fetch = &http.Client{Timeout: 30 * time.Second}
	}
	s := &Server{cfg: cfg, jobs: map[string]*job{}, byToken: map[string]*job{}, creates: map[string]int{}}
	s.Serve(s, cfg.FaultPercent, cfg.Seed, 42)
	return s
}

// Base is the API root an account's base_url names.
func (s *Server) Base() string { return s.URL() }

// Jobs is how many paid jobs were made in all.
func (s *Server) Jobs() int { return fakekit.Len(&s.Kit, s.jobs) }

// JobsFor is how many paid jobs creates with the client_token made (0 or 1: a repeated token
// answers its first job).
func (s *Server) JobsFor(token string) int {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	if s.byToken[token] != nil {
		return 1
	}
	return 0
}

// CreatesFor is how many create calls carried the client_token.
func (s *Server) CreatesFor(token string) int { return fakekit.Get(&s.Kit, s.creates, token) }

// Body is the create body of the job of a client_token (nil: none), with "path" added: the
// tool's path the create was sent to.
func (s *Server) Body(token string) map[string]any {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	j := s.byToken[token]
	if j == nil {
		return nil
	}
	out := map[string]any{"path": j.path}
	for k, v := range j.body {
		out[k] = v
	}
	return out
}

// LostAnswers is how many creates made (or found) their job and then lost the answer.
func (s *Server) LostAnswers() int { return s.Load(&s.lost) }

// RateLimited is how many creates were refused 429.
func (s *Server) RateLimited() int { return s.Load(&s.limited) }

// Refused is how many calls were refused for their key or by Config.Status.
func (s *Server) Refused() int { return s.Load(&s.refused) }

// answer writes a JSON answer.
func answer(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// apiError writes the vendor's failed call: success false and an error object.
func apiError(w http.ResponseWriter, status int, code, msg string) {
	answer(w, status, map[string]any{"success": false, "request_id": "req-fake", "error": map[string]any{"code": code, "message": msg}})
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/download/") {
		s.download(w, r)
		return
	}
	if s.cfg.Status != 0 || r.Header.Get("Authorization") != "Bearer "+s.cfg.Key {
		s.Inc(&s.refused)
		switch st := s.cfg.Status; {
		case st == 0 || st == http.StatusUnauthorized:
			apiError(w, http.StatusUnauthorized, "Unauthorized", "invalid api key")
		case st == http.StatusForbidden:
			apiError(w, http.StatusForbidden, "Forbidden", "the account may not use this tool")
		default:
			apiError(w, st, "InternalError", "internal error")
		}
		return
	}
	id, isTask := strings.CutPrefix(r.URL.Path, "/api/v1/tasks/")
	switch {
	case r.Method == http.MethodPost && (r.URL.Path == "/api/v1/tools/enhance-video-fast" || r.URL.Path == "/api/v1/tools/enhance-video"):
		s.create(w, r)
	case r.Method == http.MethodGet && isTask:
		s.read(w, id)
	default:
		s.Violate("unexpected %s %s", r.Method, r.URL.Path)
		apiError(w, http.StatusNotFound, "NotFound", "not found")
	}
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		s.Violate("create Content-Type %q", ct)
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.Violate("create body is not JSON: %v", err)
		apiError(w, http.StatusBadRequest, "InvalidParameter", "invalid json")
		return
	}
	fast := strings.HasSuffix(r.URL.Path, "-fast")
	if !s.check(body, fast) {
		apiError(w, http.StatusBadRequest, "InvalidParameter", "input validation failed")
		return
	}
	token, _ := body["client_token"].(string)
	s.Mu.Lock()
	s.creates[token]++
	s.Mu.Unlock()
	if s.cfg.RateLimit != 0 {
		s.Inc(&s.limited)
		if s.cfg.RateLimit > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(s.cfg.RateLimit))
		}
		apiError(w, http.StatusTooManyRequests, "RequestLimitExceeded", "too many requests")
		return
	}
	f := s.Fault(5)
	s.Mu.Lock()
	if s.cfg.LoseAnswers || s.lost < s.cfg.LoseFirst {
		f = 2
	}
	s.Mu.Unlock()
	switch f {
	case 0:
		apiError(w, http.StatusServiceUnavailable, "ServiceUnavailable", "service unavailable")
		return
	case 1:
		s.Inc(&s.limited)
		w.Header().Set("Retry-After", "1")
		apiError(w, http.StatusTooManyRequests, "RequestLimitExceeded", "too many requests")
		return
	}
	end := EndSucceed
	if s.cfg.End != nil {
		end = s.cfg.End(token, body)
	}
	s.Mu.Lock()
	j := s.byToken[token]
	if j == nil || token == "" { // idempotency: a token answers the job it made
		j = &job{id: fmt.Sprintf("amk-task-%06d", len(s.jobs)+1), token: token, path: r.URL.Path, end: end, body: body}
		s.jobs[j.id] = j
		if token != "" {
			s.byToken[token] = j
		}
	}
	if f >= 2 {
		s.lost++
	}
	s.Mu.Unlock()
	switch f {
	case 2: // the job is made, the answer is a 5xx
		apiError(w, http.StatusBadGateway, "InternalError", "bad gateway")
		return
	case 3: // the job is made, the connection drops before the answer
		if fakekit.Drop(w) {
			return
		}
		apiError(w, http.StatusBadGateway, "InternalError", "bad gateway")
		return
	case 4: // the job is made, the answer is cut
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"success":true,"task_id":"`+j.id[:5])
		return
	}
	answer(w, http.StatusOK, map[string]any{"success": true, "task_id": j.id, "request_id": "req-" + j.id})
}

// read answers GET /api/v1/tasks/{task_id}.
func (s *Server) read(w http.ResponseWriter, id string) {
	if s.cfg.Garbage {
		_, _ = io.WriteString(w, "<html>bad gateway</html>")
		return
	}
	switch s.Fault(3) {
	case 0:
		apiError(w, http.StatusInternalServerError, "InternalError", "internal error")
		return
	case 1:
		_, _ = io.WriteString(w, `{"success":true,"status":`)
		return
	case 2:
		w.Header().Set("Retry-After", "1")
		apiError(w, http.StatusTooManyRequests, "RequestLimitExceeded", "too many requests")
		return
	}
	s.Mu.Lock()
	j, ok := s.jobs[id]
	if !ok {
		s.Mu.Unlock()
		apiError(w, http.StatusNotFound, "TaskNotFound", "task not found")
		return
	}
	j.polls++
	polls, end := j.polls, j.end
	s.Mu.Unlock()
	out := map[string]any{"success": true, "task_id": j.id, "task_type": strings.TrimPrefix(j.path, "/api/v1/tools/"), "request_id": "req-read"}
	switch {
	case polls == 1:
		out["status"] = "queued"
	case end == EndNever || polls <= s.cfg.Polls:
		out["status"] = "running"
	case end == EndRefuse:
		out["status"], out["error"] = "failed", map[string]any{"code": RefuseCode, "message": "the video content cannot be processed"}
	default:
		if err := s.render(j); err != nil {
			apiError(w, http.StatusInternalServerError, "InternalError", "render failed: "+err.Error())
			return
		}
		s.Mu.Lock()
		failCode := j.failCode
		s.Mu.Unlock()
		if failCode != "" {
			out["status"], out["error"] = "failed", map[string]any{"code": failCode, "message": "the input video is outside the supported resolution"}
			break
		}
		tv, _ := j.body["tool_version"].(string)
		if tv == "" && !strings.HasSuffix(j.path, "-fast") {
			tv = "standard"
		}
		out["status"] = "completed"
		out["result"] = map[string]any{"video_url": fmt.Sprintf("%s/download/%s.mp4?expires=%d", s.URL(), j.id, time.Now().Add(24*time.Hour).Unix()),
			"duration": j.seconds, "fps": j.fps, "resolution": j.resolution, "tool_version": tv}
	}
	answer(w, http.StatusOK, out)
}

// shortSides are the target short sides of the resolution values.
var shortSides = map[string]int{"240p": 240, "360p": 360, "480p": 480, "540p": 540, "720p": 720, "1080p": 1080, "2k": 1440, "4k": 2160, "8k": 4320}

// render makes a job's output once: the source fetched from its video_url, checked against
// the input bounds, enhanced by ffmpeg as the body asks.
func (s *Server) render(j *job) error {
	s.Mu.Lock()
	done := j.out != "" || j.failCode != ""
	s.Mu.Unlock()
	if done {
		return nil
	}
	src := filepath.Join(s.cfg.Dir, j.id+"-source")
	u, _ := j.body["video_url"].(string)
	res, err := s.cfg.Fetch.Get(u)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		s.Mu.Lock()
		j.failCode = "InvalidParameter.VideoDownloadFailed"
		s.Mu.Unlock()
		return nil
	}
	f, err := os.Create(src)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	ctx := res.Request.Context()
	info, err := s.cfg.Tools.Probe(ctx, src)
	if err != nil {
		s.Mu.Lock()
		j.failCode = "InvalidParameter.VideoFormat"
		s.Mu.Unlock()
		return nil
	}
	long, short := max(info.Width, info.Height), min(info.Width, info.Height)
	if long < 360 || long > 2560 || short < 360 || short > 1440 {
		s.Mu.Lock()
		j.failCode = InputCode
		s.Mu.Unlock()
		return nil
	}
	spec := ffmpeg.EnhanceSpec{}
	if r, _ := j.body["resolution"].(string); r != "" {
		spec.ShortSide = shortSides[r]
	}
	if l, ok := j.body["resolution_limit"].(float64); ok {
		spec.ShortSide = int(l)
	}
	if fps, ok := j.body["fps"].(float64); ok {
		spec.FPS = int(fps)
	}
	spec.BitrateLevel, _ = j.body["bitrate_level"].(string)
	if d, ok := j.body["bit_depth"].(float64); ok {
		spec.BitDepth = int(d)
	}
	out := filepath.Join(s.cfg.Dir, j.id+".mp4")
	if err := s.cfg.Tools.Enhance(ctx, src, out, spec); err != nil {
		return err
	}
	oi, err := s.cfg.Tools.Probe(ctx, out)
	if err != nil {
		return err
	}
	s.Mu.Lock()
	j.out, j.seconds, j.fps, j.resolution = out, oi.Duration, oi.FPS, fmt.Sprintf("%dx%d", oi.Width, oi.Height)
	s.Mu.Unlock()
	return nil
}

// download serves an output link: 403 once it has expired (a signed link), a 404 as a fault.
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
	var out string
	if ok {
		out = j.out
	}
	s.Mu.Unlock()
	if out == "" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "video/mp4")
	http.ServeFile(w, r, out)
}

// Create fields and their types, per tool.
var (
	fastFields = map[string]string{"video_url": "string", "resolution": "string", "resolution_limit": "integer", "fps": "number",
		"bitrate_level": "string", "callback_url": "string", "callback_args": "string", "client_token": "string", "queue_id": "string",
		"media_output_destination": "string"}
	enhanceOnly     = map[string]string{"tool_version": "string", "scene": "string", "bit_depth": "integer"}
	fastResolutions = []string{"240p", "360p", "480p", "540p", "720p", "1080p", "2k", "4k"}
	resolutions     = append(slices.Clone(fastResolutions), "8k")
	scenes          = []string{"common", "ugc", "short_series", "aigc", "old_film"}
)

// check validates a create body; false when the vendor would refuse it.
func (s *Server) check(b map[string]any, fast bool) bool {
	ok := true
	bad := func(format string, args ...any) { s.Violate("create: "+format, args...); ok = false }
	for k, v := range b {
		typ, known := fastFields[k]
		if !known && !fast {
			typ, known = enhanceOnly[k]
		}
		if !known {
			bad("unknown field %q on %s", k, map[bool]string{true: "enhance-video-fast", false: "enhance-video"}[fast])
			continue
		}
		if !fakekit.HasType(v, typ) {
			bad("%s = %v, want a %s", k, v, typ)
		}
	}
	u, _ := b["video_url"].(string)
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		bad("video_url %q", u)
	}
	res, hasRes := b["resolution"].(string)
	lim, hasLim := b["resolution_limit"].(float64)
	if hasRes && hasLim {
		bad("resolution and resolution_limit together")
	}
	maxLim, allowed := 4320.0, resolutions
	if fast {
		maxLim, allowed = 2160, fastResolutions
	}
	if hasRes && !slices.Contains(allowed, res) {
		bad("resolution %q", res)
	}
	if hasLim && (lim < 128 || lim > maxLim) {
		bad("resolution_limit %v outside 128..%v", lim, maxLim)
	}
	if fps, has := b["fps"].(float64); has && (fps < 15 || fps > 120) {
		bad("fps %v outside 15..120", fps)
	}
	if l, has := b["bitrate_level"].(string); has && l != "low" && l != "medium" && l != "high" {
		bad("bitrate_level %q", l)
	}
	tok, hasTok := b["client_token"].(string)
	if !hasTok || tok == "" || len(tok) > 64 || strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
		bad("client_token %q: want 1 to 64 printable ASCII characters (the service always sends one)", tok)
	}
	tv, hasTV := b["tool_version"].(string)
	if hasTV && tv != "standard" && tv != "professional" {
		bad("tool_version %q", tv)
	}
	if tv == "" {
		tv = "standard"
	}
	if sc, has := b["scene"].(string); has && (!slices.Contains(scenes, sc) || tv != "standard") {
		bad("scene %q with tool_version %s", sc, tv)
	}
	if d, has := b["bit_depth"].(float64); has && ((d != 8 && d != 10 && d != 12) || tv != "professional") {
		bad("bit_depth %v with tool_version %s", d, tv)
	}
	return ok
}
