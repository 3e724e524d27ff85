// Package elevenlabsfake is an ElevenLabs text-to-speech API for tests, written from the
// official Node SDK's wire format (@elevenlabs/elevenlabs-js 2.73.0: textToSpeech.convert —
// POST /v1/text-to-speech/{voice_id} with output_format in the query and BodyTextToSpeechFull
// as JSON, answered with audio bytes; models.list — GET /v1/models; the key in xi-api-key) and
// proved faithful by TestElevenLabsNodeSDK, which drives it with that SDK unchanged. It checks
// every request it receives and records what breaks the format as a violation; it bills
// (counts) the characters of every synthesis it answers, and can inject faults chosen from the
// text: 5xx, 429 with or without Retry-After, an answer lost after billing, a truncated or
// garbage body, a content refusal, and a synthesis that never answers.
package elevenlabsfake

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"mediagen/internal/provider/fakekit"
)

// Faults a synthesis can be given by Config.Fault.
const (
	FaultNone      = ""
	Fault500       = "500"       // 500 system_busy, nothing billed
	Fault429       = "429"       // 429 too_many_concurrent_requests, no Retry-After
	Fault429After  = "429-after" // 429 with Retry-After: 1
	FaultLose      = "lose"      // billed, then the connection is dropped before any byte
	FaultTruncate  = "truncate"  // billed, half the audio sent under the full Content-Length
	FaultGarbage   = "garbage"   // billed, answered 200 with bytes that are no audio
	FaultRefuse    = "refuse"    // 400 content_against_policy, nothing billed
	FaultNeverEnds = "never"     // no answer until the client gives up
	FaultLonger    = "longer"    // billed, answered with Config.Long (audio longer than asked)
)

// Models are the text-to-speech models the fake serves, with the most characters each takes
// in one request (the API's maximum_text_length_per_request of GET /v1/models).
var Models = map[string]int{
	"eleven_multilingual_v2": 10_000,
	"eleven_flash_v2_5":      40_000,
	"eleven_turbo_v2_5":      40_000,
	"eleven_v3":              5_000,
}

// outputFormats are the output_format values the SDK's TextToSpeechConvertRequestOutputFormat
// names for MP3 (the others are PCM, μ-law, a-law and Opus, which the service never asks for).
var outputFormats = []string{"mp3_22050_32", "mp3_24000_48", "mp3_44100_32", "mp3_44100_64", "mp3_44100_96", "mp3_44100_128", "mp3_44100_192"}

// Config sets up a Server.
type Config struct {
	Key string // the xi-api-key it accepts
	// MoreKeys are keys it accepts too (a key rotation).
	MoreKeys []string
	Voices   []string // voice ids it knows (empty: any)
	Speech   string   // the MP3 every synthesis answers with
	Long     string   // the MP3 of FaultLonger
	// Fault picks a synthesis's fault from its text (nil: none).
	Fault func(text string) string
}

// Server is a running fake.
type Server struct {
	fakekit.Kit
	cfg Config

	bodies     []map[string]any // synthesis bodies received, in order
	calls      []Call           // who asked each synthesis, in order
	billed     int              // syntheses billed
	characters int              // characters billed
	byText     map[string]int   // syntheses billed per text
	lost       int              // billed syntheses whose answer was lost or cut
	hung       int              // syntheses that never answered
	never      chan struct{}
}

// Start starts a fake on loopback over TLS.
func Start(cfg Config) *Server {
	s := &Server{cfg: cfg, never: make(chan struct{}), byText: map[string]int{}}
	s.Serve(s, 0, 0, 0) // no drawn faults: this fake injects its own
	return s
}

// Close stops the server, first releasing syntheses that never answer.
func (s *Server) Close() {
	close(s.never)
	s.Kit.Close()
}

// Base is the API root an account's base_url names (the SDK's baseUrl).
func (s *Server) Base() string { return s.URL() }

// Call is who asked a synthesis: the voice of its path and the key it carried.
type Call struct{ Voice, Key string }

// Calls are the syntheses received, in order.
func (s *Server) Calls() []Call { return fakekit.Clone(&s.Kit, &s.calls) }

// Bodies are the synthesis bodies received, in order.
func (s *Server) Bodies() []map[string]any { return fakekit.Clone(&s.Kit, &s.bodies) }

// Billed is how many syntheses and characters ElevenLabs would have billed.
func (s *Server) Billed() (syntheses, characters int) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	return s.billed, s.characters
}

// BilledFor is how many syntheses of text ElevenLabs would have billed: a service that
// never pays twice for one speech keeps it at most 1.
func (s *Server) BilledFor(text string) int { return fakekit.Get(&s.Kit, s.byText, text) }

// Lost is how many billed syntheses lost or cut their answer.
func (s *Server) Lost() int { return s.Load(&s.lost) }

// Hung is how many syntheses never answered (FaultNeverEnds): ElevenLabs may have billed
// them, as nothing tells a client otherwise.
func (s *Server) Hung() int { return s.Load(&s.hung) }

// writeError writes the API's error envelope: {"detail": {"status", "message"}}.
func writeError(w http.ResponseWriter, code int, status, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"detail": map[string]string{"status": status, "message": message}})
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		s.Violate("%s %s: an Authorization header (the key goes in xi-api-key)", r.Method, r.URL.Path)
	}
	if k := r.Header.Get("xi-api-key"); k != s.cfg.Key && !slices.Contains(s.cfg.MoreKeys, k) {
		writeError(w, http.StatusUnauthorized, "invalid_api_key", "Invalid API key")
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		s.models(w)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/text-to-speech/") && strings.Count(r.URL.Path, "/") == 3:
		s.speech(w, r, strings.TrimPrefix(r.URL.Path, "/v1/text-to-speech/"))
	default:
		s.Violate("unknown call %s %s", r.Method, r.URL.Path)
		writeError(w, http.StatusNotFound, "not_found", "Not found")
	}
}

// models answers GET /v1/models: a JSON list of Model objects.
func (s *Server) models(w http.ResponseWriter) {
	var out []map[string]any
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for id := range Models {
			if !yield(id) {
				return
			}
		}
	}) {
		out = append(out, map[string]any{"model_id": id, "name": id, "can_do_text_to_speech": true,
			"maximum_text_length_per_request": Models[id], "token_cost_factor": 1.0})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// speech answers POST /v1/text-to-speech/{voice_id}.
func (s *Server) speech(w http.ResponseWriter, r *http.Request, voice string) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		s.Violate("speech Content-Type %q", r.Header.Get("Content-Type"))
	}
	if f := r.URL.Query().Get("output_format"); f != "" && !slices.Contains(outputFormats, f) {
		s.Violate("speech output_format %q", f)
	}
	var body map[string]any
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil {
		s.Violate("speech body is not JSON: %v", err)
		writeError(w, http.StatusUnprocessableEntity, "invalid_json", "Invalid JSON")
		return
	}
	s.Mu.Lock()
	s.bodies = append(s.bodies, body)
	s.calls = append(s.calls, Call{Voice: voice, Key: r.Header.Get("xi-api-key")})
	s.Mu.Unlock()
	for k := range body {
		if !slices.Contains([]string{"text", "model_id", "language_code", "voice_settings", "seed", "previous_text", "next_text",
			"previous_request_ids", "next_request_ids", "apply_text_normalization", "pronunciation_dictionary_locators"}, k) {
			s.Violate("speech: unknown field %q", k)
		}
	}
	text, _ := body["text"].(string)
	model, _ := body["model_id"].(string)
	if model == "" {
		model = "eleven_multilingual_v2" // the API's default model
	}
	limit, known := Models[model]
	switch {
	case text == "":
		writeError(w, http.StatusUnprocessableEntity, "invalid_text", "text is required")
		return
	case !known:
		writeError(w, http.StatusBadRequest, "model_not_found", "Model not found")
		return
	case len(s.cfg.Voices) > 0 && !slices.Contains(s.cfg.Voices, voice):
		writeError(w, http.StatusNotFound, "voice_not_found", "Voice not found")
		return
	case utf8.RuneCountInString(text) > limit:
		writeError(w, http.StatusBadRequest, "max_character_limit_exceeded", "Text too long for this model")
		return
	}
	fault := FaultNone
	if s.cfg.Fault != nil {
		fault = s.cfg.Fault(text)
	}
	switch fault {
	case Fault500:
		writeError(w, http.StatusInternalServerError, "system_busy", "Busy")
		return
	case Fault429:
		writeError(w, http.StatusTooManyRequests, "too_many_concurrent_requests", "Too many concurrent requests")
		return
	case Fault429After:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "too_many_concurrent_requests", "Too many concurrent requests")
		return
	case FaultRefuse:
		writeError(w, http.StatusBadRequest, "content_against_policy", "Refused")
		return
	case FaultNeverEnds:
		s.Inc(&s.hung)
		select {
		case <-r.Context().Done():
		case <-s.never:
		}
		return
	}
	file := s.cfg.Speech
	if fault == FaultLonger {
		file = s.cfg.Long
	}
	audio, err := os.ReadFile(file)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", "no audio")
		return
	}
	chars := utf8.RuneCountInString(text)
	s.Mu.Lock()
	s.billed++
	s.characters += chars
	s.byText[text]++
	id := fmt.Sprintf("req_%04d", s.billed)
	s.Mu.Unlock()
	switch fault {
	case FaultLose:
		s.lose()
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
		return
	case FaultGarbage:
		audio = []byte("<html>not audio</html>")
	}
	w.Header().Set("Content-Type", "audio/mpeg")
	w.Header().Set("request-id", id)
	w.Header().Set("x-character-count", strconv.Itoa(chars))
	w.Header().Set("Content-Length", strconv.Itoa(len(audio)))
	if fault == FaultTruncate {
		s.lose()
		_, _ = w.Write(audio[:len(audio)/2])
		w.(http.Flusher).Flush()
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
		return
	}
	_, _ = w.Write(audio)
}

func (s *Server) lose() {
	s.Inc(&s.lost)
}
