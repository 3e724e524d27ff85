// Package seedspeechfake is a Volcengine/BytePlus Doubao speech API for tests, written from the
// vendor's pages:
//
//   - HTTP TTS, https://www.volcengine.com/docs/6561/79820: POST /api/v1/tts, header
//     "Authorization: Bearer;{token}", body {app: {appid, token, cluster}, user: {uid},
//     audio: {voice_type, encoding, ...}, request: {reqid, text, operation: "query"}},
//     answered {reqid, code: 3000, message: "Success", sequence: -1, data: base64 audio,
//     addition: {duration: ms}}; error codes 3001 (invalid request), 3003 (concurrency over
//     quota), 3005 (busy), 3010 (text too long), 3011 (invalid text), 3030-3032 (timeouts),
//     3040, 3050 (voice_type not found);
//   - voice cloning (声音复刻), https://www.volcengine.com/docs/6561/1305191: POST
//     /api/v1/mega_tts/audio/upload with header Resource-Id volc.megatts.voiceclone and body
//     {appid, speaker_id, audios: [{audio_bytes (base64), audio_format}], source: 2,
//     model_type}, each audio at most 10 MB, answered {BaseResp: {StatusCode, StatusMessage},
//     speaker_id}; POST /api/v1/mega_tts/status {appid, speaker_id} answered with status 0
//     NotFound, 1 Training, 2 Success, 3 Failed, 4 Active. A cloned voice (model_type 1) is
//     spoken with cluster volcano_icl and voice_type = the speaker_id.
//
// It checks every request and records what breaks the format as a violation; it bills
// (counts) every synthesis it answers and every training it starts, and remembers which
// audios each slot was trained on and which trained voice each synthesis spoke with. Faults
// are chosen from the text: 5xx, 429 (code 3003), 401, 403, an answer lost after billing,
// garbage after billing, a refusal (3011), and a synthesis that never answers; training
// faults from Config.TrainFault.
package seedspeechfake

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"mediagen/internal/provider/fakekit"
)

// Faults of a synthesis (Config.Fault).
const (
	FaultNone      = ""
	Fault500       = "500"     // HTTP 500, code 3005 (busy), nothing billed
	Fault429       = "429"     // HTTP 429, code 3003 (concurrency over quota), nothing billed
	Fault401       = "401"     // HTTP 401: the token refused
	Fault403       = "403"     // HTTP 403: the app is not granted the service
	FaultLose      = "lose"    // billed, then the connection is dropped before any byte
	FaultGarbage   = "garbage" // billed, answered 200 with a body that is no JSON
	FaultRefuse    = "refuse"  // code 3011 (invalid text), nothing billed
	FaultNeverEnds = "never"   // no answer until the client gives up
)

// Training faults (Config.TrainFault).
const (
	TrainFail   = "fail"   // the upload is taken, the training ends with status 3 (Failed)
	TrainRefuse = "refuse" // the upload is refused: StatusCode 1122 (no human voice detected)
)

// MaxAudioBytes is the clone API's limit of one audio.
const MaxAudioBytes = 10 << 20

// Config sets up a Server.
type Config struct {
	Token      string   // the access token it accepts
	AppID      string   // the app id it accepts
	Speakers   []string // the clone slots of the app
	Voices     []string // preset voice_types it knows
	Speech     string   // the MP3 every synthesis answers with
	Fault      func(text string) string
	TrainFault string
}

// Upload is one training started: the slot and its audios (format and SHA-256 of the bytes).
type Upload struct {
	SpeakerID string
	Formats   []string
	Digests   []string
	ModelType float64
}

// Synthesis is one synthesis answered or refused: cluster, voice_type, text, and for a
// cloned voice the digests of the audios its slot was trained on when it spoke.
type Synthesis struct {
	Cluster, Voice, Text, ReqID string
	TrainedOn                   []string
}

// Server is a running fake.
type Server struct {
	fakekit.Kit
	cfg Config

	uploads    []Upload
	syntheses  []Synthesis
	trained    map[string][]string // slot → digests of its current voice
	training   map[string]int      // slot → status reads left before its training ends
	failed     map[string]bool
	billed     int
	characters int
	byText     map[string]int
	lost, hung int
	never      chan struct{}
}

// Start starts a fake on loopback over TLS.
func Start(cfg Config) *Server {
	s := &Server{cfg: cfg, never: make(chan struct{}), trained: map[string][]string{}, training: map[string]int{},
		failed: map[string]bool{}, byText: map[string]int{}}
	s.Serve(s, 0, 0, 0) // no drawn faults: this fake injects its own
	return s
}

// Close stops the server, first releasing syntheses that never answer.
func (s *Server) Close() {
	close(s.never)
	s.Kit.Close()
}

// Base is the API root an account's base_url names.
func (s *Server) Base() string { return s.URL() }

// Uploads are the trainings started, in order.
func (s *Server) Uploads() []Upload { return fakekit.Clone(&s.Kit, &s.uploads) }

// Syntheses are the synthesis calls received (billed or not), in order.
func (s *Server) Syntheses() []Synthesis { return fakekit.Clone(&s.Kit, &s.syntheses) }

// Billed is how many syntheses and characters the vendor would have billed.
func (s *Server) Billed() (syntheses, characters int) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	return s.billed, s.characters
}

// BilledFor is how many syntheses of text were billed.
func (s *Server) BilledFor(text string) int { return fakekit.Get(&s.Kit, s.byText, text) }

// Lost is how many billed syntheses lost their answer (dropped or garbage); Hung how many
// never answered.
func (s *Server) Lost() int { return s.Load(&s.lost) }

func (s *Server) Hung() int { return s.Load(&s.hung) }

// Digest is the fake's name of an audio: the hex SHA-256 of its bytes.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func ttsError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"code": code, "message": msg, "sequence": -1})
}

func cloneAnswer(w http.ResponseWriter, status, code int, msg string, extra map[string]any) {
	out := map[string]any{"BaseResp": map[string]any{"StatusCode": code, "StatusMessage": msg}}
	for k, v := range extra {
		out[k] = v
	}
	writeJSON(w, status, out)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "Bearer;") {
		s.Violate("%s %s: Authorization %q is not \"Bearer;{token}\"", r.Method, r.URL.Path, auth)
	}
	if strings.TrimSpace(strings.TrimPrefix(auth, "Bearer;")) != s.cfg.Token {
		ttsError(w, http.StatusUnauthorized, 3001, "authenticate request: load grant: requested grant not found")
		return
	}
	if r.Method != http.MethodPost {
		s.Violate("unknown call %s %s", r.Method, r.URL.Path)
		ttsError(w, http.StatusNotFound, 3001, "not found")
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		s.Violate("%s Content-Type %q", r.URL.Path, ct)
	}
	var body map[string]any
	if err := json.NewDecoder(io.LimitReader(r.Body, 4*MaxAudioBytes)).Decode(&body); err != nil {
		s.Violate("%s body is not JSON: %v", r.URL.Path, err)
		ttsError(w, http.StatusBadRequest, 3001, "invalid json")
		return
	}
	switch r.URL.Path {
	case "/api/v1/tts":
		s.tts(w, r, body)
	case "/api/v1/mega_tts/audio/upload":
		s.upload(w, r, body)
	case "/api/v1/mega_tts/status":
		s.status(w, r, body)
	default:
		s.Violate("unknown call %s %s", r.Method, r.URL.Path)
		ttsError(w, http.StatusNotFound, 3001, "not found")
	}
}

func (s *Server) cloneCall(w http.ResponseWriter, r *http.Request, body map[string]any) (string, bool) {
	if rid := r.Header.Get("Resource-Id"); rid != "volc.megatts.voiceclone" {
		s.Violate("%s: Resource-Id %q", r.URL.Path, rid)
	}
	if body["appid"] != s.cfg.AppID {
		cloneAnswer(w, http.StatusForbidden, 1001, "appid not granted", nil)
		return "", false
	}
	spk, _ := body["speaker_id"].(string)
	if !slices.Contains(s.cfg.Speakers, spk) {
		cloneAnswer(w, http.StatusOK, 1107, "speaker id not found", nil)
		return "", false
	}
	return spk, true
}

// upload answers POST /api/v1/mega_tts/audio/upload.
func (s *Server) upload(w http.ResponseWriter, r *http.Request, body map[string]any) {
	for k := range body {
		if !slices.Contains([]string{"appid", "speaker_id", "audios", "source", "language", "model_type", "extra_params"}, k) {
			s.Violate("upload: unknown field %q", k)
		}
	}
	spk, ok := s.cloneCall(w, r, body)
	if !ok {
		return
	}
	if body["source"] != float64(2) {
		s.Violate("upload: source %v, want 2", body["source"])
	}
	mt, _ := body["model_type"].(float64)
	audios, _ := body["audios"].([]any)
	if len(audios) == 0 {
		s.Violate("upload: no audios")
		cloneAnswer(w, http.StatusOK, 1001, "param error", nil)
		return
	}
	up := Upload{SpeakerID: spk, ModelType: mt}
	for i, a := range audios {
		m, _ := a.(map[string]any)
		b64, _ := m["audio_bytes"].(string)
		format, _ := m["audio_format"].(string)
		b, err := base64.StdEncoding.DecodeString(b64)
		switch {
		case err != nil || len(b) == 0:
			s.Violate("upload: audios[%d].audio_bytes is not base64 audio", i)
		case len(b) > MaxAudioBytes:
			s.Violate("upload: audios[%d] is %d bytes, over 10 MB", i, len(b))
		case !slices.Contains([]string{"wav", "mp3", "ogg", "m4a", "aac", "pcm"}, format):
			s.Violate("upload: audios[%d].audio_format %q", i, format)
		}
		up.Formats = append(up.Formats, format)
		up.Digests = append(up.Digests, Digest(b))
	}
	if s.cfg.TrainFault == TrainRefuse {
		cloneAnswer(w, http.StatusOK, 1122, "no human voice detected", nil)
		return
	}
	s.Mu.Lock()
	s.uploads = append(s.uploads, up)
	s.training[spk] = 1 // one status read says Training, the next Success
	s.failed[spk] = s.cfg.TrainFault == TrainFail
	if !s.failed[spk] {
		s.trained[spk] = up.Digests
	} else {
		delete(s.trained, spk)
	}
	s.Mu.Unlock()
	cloneAnswer(w, http.StatusOK, 0, "", map[string]any{"speaker_id": spk})
}

// status answers POST /api/v1/mega_tts/status.
func (s *Server) status(w http.ResponseWriter, r *http.Request, body map[string]any) {
	spk, ok := s.cloneCall(w, r, body)
	if !ok {
		return
	}
	s.Mu.Lock()
	st := 2
	switch {
	case s.training[spk] > 0:
		s.training[spk]--
		st = 1
	case s.failed[spk]:
		st = 3
	case s.trained[spk] == nil:
		st = 0
	}
	s.Mu.Unlock()
	cloneAnswer(w, http.StatusOK, 0, "", map[string]any{"speaker_id": spk, "status": st})
}

// tts answers POST /api/v1/tts.
func (s *Server) tts(w http.ResponseWriter, r *http.Request, body map[string]any) {
	app, _ := body["app"].(map[string]any)
	audio, _ := body["audio"].(map[string]any)
	req, _ := body["request"].(map[string]any)
	if app == nil || audio == nil || req == nil {
		s.Violate("tts: app, audio and request are required")
		ttsError(w, http.StatusBadRequest, 3001, "invalid request")
		return
	}
	if app["token"] != s.cfg.Token {
		s.Violate("tts: app.token is not the header's token")
	}
	if app["appid"] != s.cfg.AppID {
		ttsError(w, http.StatusForbidden, 3001, "appid not granted")
		return
	}
	cluster, _ := app["cluster"].(string)
	voice, _ := audio["voice_type"].(string)
	text, _ := req["text"].(string)
	reqid, _ := req["reqid"].(string)
	if req["operation"] != "query" {
		s.Violate("tts: request.operation %v, want query", req["operation"])
	}
	if reqid == "" {
		s.Violate("tts: request.reqid is required")
	}
	if enc := audio["encoding"]; enc != "mp3" {
		s.Violate("tts: audio.encoding %v (the service asks for mp3)", enc)
	}
	call := Synthesis{Cluster: cluster, Voice: voice, Text: text, ReqID: reqid}
	s.Mu.Lock()
	if cluster == "volcano_icl" {
		call.TrainedOn = slices.Clone(s.trained[voice])
	}
	s.syntheses = append(s.syntheses, call)
	s.Mu.Unlock()
	switch {
	case cluster != "volcano_tts" && cluster != "volcano_icl":
		s.Violate("tts: cluster %q", cluster)
		ttsError(w, http.StatusBadRequest, 3001, "invalid cluster")
		return
	case cluster == "volcano_tts" && !slices.Contains(s.cfg.Voices, voice),
		cluster == "volcano_icl" && call.TrainedOn == nil:
		ttsError(w, http.StatusOK, 3050, "voice_type not found")
		return
	case text == "":
		ttsError(w, http.StatusOK, 3011, "invalid text")
		return
	case len(text) > 1024: // the API's limit: 1024 bytes of UTF-8
		ttsError(w, http.StatusOK, 3010, "text too long")
		return
	}
	fault := FaultNone
	if s.cfg.Fault != nil {
		fault = s.cfg.Fault(text)
	}
	switch fault {
	case Fault500:
		ttsError(w, http.StatusInternalServerError, 3005, "server busy")
		return
	case Fault429:
		ttsError(w, http.StatusTooManyRequests, 3003, "concurrency exceeded")
		return
	case Fault401:
		ttsError(w, http.StatusUnauthorized, 3001, "authenticate request: invalid token")
		return
	case Fault403:
		ttsError(w, http.StatusForbidden, 3001, "resource not granted")
		return
	case FaultRefuse:
		ttsError(w, http.StatusOK, 3011, "invalid text")
		return
	case FaultNeverEnds:
		s.Inc(&s.hung)
		select {
		case <-r.Context().Done():
		case <-s.never:
		}
		return
	}
	mp3, err := os.ReadFile(s.cfg.Speech)
	if err != nil {
		ttsError(w, http.StatusInternalServerError, 3031, "no audio")
		return
	}
	s.Mu.Lock()
	s.billed++
	s.characters += utf8.RuneCountInString(text)
	s.byText[text]++
	s.Mu.Unlock()
	switch fault {
	case FaultLose:
		s.Inc(&s.lost)
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
		return
	case FaultGarbage:
		s.Mu.Lock()
		s.lost++ // billed, and nothing a client can read: lost as well
		s.Mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("<html>gateway</html>"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"reqid": reqid, "code": 3000, "message": "Success", "sequence": -1,
		"data": base64.StdEncoding.EncodeToString(mp3), "addition": map[string]string{"duration": "1960"}})
}
