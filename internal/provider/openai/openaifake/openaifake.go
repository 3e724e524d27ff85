// Package openaifake is an OpenAI-compatible API for tests, written from the official SDK's
// wire format (openai-go/v3: VideoNewParams as multipart/form-data, Video,
// AudioSpeechNewParams): POST /v1/videos, GET /v1/videos/{id}, GET /v1/videos/{id}/content,
// POST /v1/audio/speech and GET /v1/models. It checks every request it receives — the Bearer
// key, the form or JSON fields and their values — and records what breaks the format as a
// violation; it counts the paid jobs it makes per Idempotency-Key, and can inject faults:
// 5xx, 429 with Retry-After, malformed bodies, content downloads that fail, moderation
// refusals and jobs that never finish.
package openaifake

import (
	"encoding/json"
	"fmt"
	"image"
	_ "image/png" // input_reference images
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"mediagen/internal/provider/fakekit"
)

// Ends a video job can be given by Config.End.
const (
	EndSucceed = ""       // completes after Config.Polls polls
	EndRefuse  = "refuse" // fails with moderation_blocked
	EndNever   = "never"  // stays in_progress
)

// Config sets up a Server.
type Config struct {
	Key    string // the Bearer key it accepts
	Clip   string // the MP4 every completed video's content serves
	Speech string // the MP3 every speech answer serves
	// Polls is how many GETs of a video answer in_progress before it completes (default 1).
	Polls int
	// FaultPercent is the share of calls that fail with one of the faults of their kind.
	FaultPercent int
	Seed         uint64
	// End decides a new video's end from its prompt (nil: every video completes).
	End func(prompt string) string
	// HonorIdempotency answers a create that repeats an Idempotency-Key with the first job,
	// as servers that support the header do.
	HonorIdempotency bool
}

// Server is a running fake.
type Server struct {
	fakekit.Kit
	cfg Config

	videos     map[string]*videoJob
	byKey      map[string]int // Idempotency-Key → jobs made
	firstByKey map[string]string
	forms      []map[string]string // create forms that made a job, in order
	creates    int                 // create calls received with a valid form
	lost       int                 // creates that made a job and lost the answer
	speeches   []map[string]any    // speech bodies, in order
}

type videoJob struct {
	id, prompt, end, model, size, seconds string
	polls                                 int
	created                               int64
}

// Start starts a fake on loopback over TLS.
func Start(cfg Config) *Server {
	if cfg.Polls <= 0 {
		cfg.Polls = 1
	}
	s := &Server{cfg: cfg, videos: map[string]*videoJob{},
		byKey: map[string]int{}, firstByKey: map[string]string{}}
	s.Serve(s, cfg.FaultPercent, cfg.Seed, 11)
	return s
}

// Base is the API base URL an account's base_url names.
func (s *Server) Base() string { return s.URL() + "/v1" }

// JobsFor is how many video jobs creates with the Idempotency-Key made.
func (s *Server) JobsFor(key string) int { return fakekit.Get(&s.Kit, s.byKey, key) }

// Creates is how many create calls with a valid form arrived (a refused one included).
func (s *Server) Creates() int { return s.Load(&s.creates) }

// Forms are the forms of the creates that made a job (or found one by its key), in order.
func (s *Server) Forms() []map[string]string { return fakekit.Clone(&s.Kit, &s.forms) }

// Speeches are the speech bodies received, in order.
func (s *Server) Speeches() []map[string]any { return fakekit.Clone(&s.Kit, &s.speeches) }

func writeError(w http.ResponseWriter, status int, typ, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"error":{"message":"raw upstream text for %s","type":%q,"param":null,"code":%q}}`, code, typ, code)
}

// transientFault answers one of the faults every call may get: 500, 429, 503.
func (s *Server) transientFault(w http.ResponseWriter) bool {
	switch s.Fault(3) {
	case 0:
		writeError(w, http.StatusInternalServerError, "server_error", "server_error")
	case 1:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "rate_limit_exceeded", "rate_limit_exceeded")
	case 2:
		writeError(w, http.StatusServiceUnavailable, "server_error", "overloaded")
	default:
		return false
	}
	return true
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+s.cfg.Key {
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key")
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case r.Method == http.MethodGet && path == "/models":
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"sora-2","object":"model","created":1759708800,"owned_by":"system"}]}`)
	case r.Method == http.MethodPost && path == "/videos":
		s.create(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/videos/") && strings.HasSuffix(path, "/content"):
		s.content(w, r, strings.TrimSuffix(strings.TrimPrefix(path, "/videos/"), "/content"))
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/videos/"):
		s.get(w, strings.TrimPrefix(path, "/videos/"))
	case r.Method == http.MethodPost && path == "/audio/speech":
		s.speech(w, r)
	default:
		s.Violate("unexpected %s %s", r.Method, r.URL.Path)
		writeError(w, http.StatusNotFound, "invalid_request_error", "not_found")
	}
}

var (
	sizes   = []string{"720x1280", "1280x720", "1024x1792", "1792x1024"}
	seconds = []string{"4", "8", "12"}
	voices  = []string{"alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova", "sage", "shimmer", "verse", "marin", "cedar"}
)

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		s.Violate("create Content-Type %q, want multipart/form-data", r.Header.Get("Content-Type"))
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value")
		return
	}
	if err := r.ParseMultipartForm(1 << 20); err != nil {
		s.Violate("create form: %v", err)
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value")
		return
	}
	form := map[string]string{}
	ok := true
	bad := func(format string, args ...any) { s.Violate("create: "+format, args...); ok = false }
	for k, vs := range r.MultipartForm.Value {
		if len(vs) != 1 {
			bad("field %q given %d times", k, len(vs))
		}
		form[k] = vs[0]
		switch k {
		case "prompt", "model":
		case "seconds":
			if !slices.Contains(seconds, vs[0]) {
				bad("seconds %q", vs[0])
			}
		case "size":
			if !slices.Contains(sizes, vs[0]) {
				bad("size %q", vs[0])
			}
		case "input_reference[image_url]":
			if !strings.HasPrefix(vs[0], "https://") && !strings.HasPrefix(vs[0], "http://") {
				bad("input_reference[image_url] %q", vs[0])
			}
		default:
			bad("unknown field %q", k)
		}
	}
	for name, fhs := range r.MultipartForm.File {
		if name != "input_reference" || len(fhs) != 1 {
			bad("unexpected file part %q", name)
			continue
		}
		if _, has := form["input_reference[image_url]"]; has {
			bad("input_reference given as a file and as image_url")
		}
		// The API takes a reference image only at the output size.
		f, err := fhs[0].Open()
		if err != nil {
			bad("input_reference: %v", err)
			continue
		}
		cfg, format, err := image.DecodeConfig(f)
		f.Close()
		if err != nil || fhs[0].Header.Get("Content-Type") != "image/"+format {
			bad("input_reference is not an image of its Content-Type %q: %v", fhs[0].Header.Get("Content-Type"), err)
			continue
		}
		if got := fmt.Sprintf("%dx%d", cfg.Width, cfg.Height); got != form["size"] {
			bad("input_reference is %s, the size %q", got, form["size"])
		}
		form["input_reference"] = fmt.Sprintf("%s %dx%d", format, cfg.Width, cfg.Height)
	}
	if form["prompt"] == "" || form["model"] == "" {
		bad("prompt and model are required: %v", form)
	}
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value")
		return
	}
	s.Inc(&s.creates)
	if s.transientFault(w) {
		return // refused: no job was made
	}
	key := r.Header.Get("Idempotency-Key")
	s.Mu.Lock()
	s.forms = append(s.forms, form)
	if id, seen := s.firstByKey[key]; seen && key != "" && s.cfg.HonorIdempotency {
		j := s.videos[id]
		s.Mu.Unlock()
		writeVideo(w, j, "queued", 0)
		return
	}
	end := EndSucceed
	if s.cfg.End != nil {
		end = s.cfg.End(form["prompt"])
	}
	j := &videoJob{id: fmt.Sprintf("video_%06d", len(s.videos)+1), prompt: form["prompt"], end: end, model: form["model"],
		size: form["size"], seconds: form["seconds"], created: time.Now().Unix()}
	s.videos[j.id] = j
	s.byKey[key]++
	if _, seen := s.firstByKey[key]; !seen {
		s.firstByKey[key] = j.id
	}
	s.Mu.Unlock()
	if s.Fault(4) == 0 {
		// The job is made; the answer is lost.
		s.Inc(&s.lost)
		writeError(w, http.StatusBadGateway, "server_error", "bad_gateway")
		return
	}
	writeVideo(w, j, "queued", 0)
}

// LostAnswers is how many creates made a job and then failed their answer.
func (s *Server) LostAnswers() int { return s.Load(&s.lost) }

func writeVideo(w http.ResponseWriter, j *videoJob, status string, progress int) {
	v := map[string]any{"id": j.id, "object": "video", "model": j.model, "status": status, "progress": progress,
		"created_at": j.created, "size": j.size, "seconds": j.seconds, "prompt": j.prompt}
	if status == "failed" {
		v["error"] = map[string]any{"code": "moderation_blocked", "message": "raw upstream text: blocked by moderation"}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) get(w http.ResponseWriter, id string) {
	if s.transientFault(w) {
		return
	}
	if s.Fault(4) == 0 {
		_, _ = io.WriteString(w, `{"id":"`+id+`","status":`)
		return
	}
	s.Mu.Lock()
	j, ok := s.videos[id]
	if !ok {
		s.Mu.Unlock()
		writeError(w, http.StatusNotFound, "invalid_request_error", "video_not_found")
		return
	}
	j.polls++
	status, progress := "in_progress", min(j.polls*30, 90)
	if j.end != EndNever && j.polls > s.cfg.Polls {
		status, progress = "completed", 100
		if j.end == EndRefuse {
			status = "failed"
		}
	}
	s.Mu.Unlock()
	writeVideo(w, j, status, progress)
}

func (s *Server) content(w http.ResponseWriter, r *http.Request, id string) {
	if v := r.URL.Query().Get("variant"); v != "" && v != "video" {
		s.Violate("content variant %q", v)
	}
	s.Mu.Lock()
	j, ok := s.videos[id]
	done := ok && j.end == EndSucceed && j.polls > s.cfg.Polls
	s.Mu.Unlock()
	if !done {
		writeError(w, http.StatusNotFound, "invalid_request_error", "video_not_ready")
		return
	}
	if s.transientFault(w) {
		return
	}
	w.Header().Set("Content-Type", "video/mp4")
	http.ServeFile(w, r, s.cfg.Clip)
}

func (s *Server) speech(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		s.Violate("speech Content-Type %q", ct)
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.Violate("speech body is not JSON: %v", err)
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json")
		return
	}
	ok := true
	bad := func(format string, args ...any) { s.Violate("speech: "+format, args...); ok = false }
	for k, v := range body {
		str, isStr := v.(string)
		switch k {
		case "model", "input", "voice", "instructions", "response_format":
			if !isStr {
				bad("%s = %v, want a string", k, v)
			}
		case "speed":
			if _, isNum := v.(float64); !isNum {
				bad("speed = %v", v)
			}
		default:
			bad("unknown field %q", k)
		}
		switch {
		case k == "voice" && !slices.Contains(voices, str):
			bad("voice %q", str)
		case k == "response_format" && str != "mp3":
			bad("response_format %q (this fake serves mp3)", str)
		case k == "input" && (str == "" || len([]rune(str)) > 4096):
			bad("input of %d characters", len([]rune(str)))
		}
	}
	if body["model"] == nil || body["input"] == nil || body["voice"] == nil {
		bad("model, input and voice are required: %v", body)
	}
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value")
		return
	}
	s.Locked(func() { s.speeches = append(s.speeches, body) })
	if s.transientFault(w) {
		return
	}
	if in, _ := body["input"].(string); strings.Contains(in, "[refuse]") {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "moderation_blocked")
		return
	}
	w.Header().Set("Content-Type", "audio/mpeg")
	http.ServeFile(w, r, s.cfg.Speech)
}
