// Package seedspeech is the upstream adapter of Volcengine/BytePlus Doubao speech
// (openspeech.bytedance.com; BytePlus: voice.ap-southeast-1.bytepluses.com), with the account's
// access token as "Authorization: Bearer;{token}" and its app id in every body:
//
//   - text only: POST {base}/api/v1/tts (HTTP non-streaming TTS,
//     https://www.volcengine.com/docs/6561/79820) with cluster volcano_tts and the account's
//     preset voice_type, answered with JSON whose data is the base64 MP3;
//   - audio references (voice cloning, 声音复刻, https://www.volcengine.com/docs/6561/1305191):
//     the references' bytes, base64, as the "audios" list of POST
//     {base}/api/v1/mega_tts/audio/upload (Resource-Id volc.megatts.voiceclone, source 2,
//     model_type 1) into the account's speaker_id slot; POST {base}/api/v1/mega_tts/status
//     until the slot's status is 2 (Success) or 4 (Active); then /api/v1/tts with cluster
//     volcano_icl and voice_type = the slot.
//
// No Volcengine/BytePlus speech API takes an image: image references are refused at
// submission (catalog.RefuseSpeech) and here. The TTS API has no idempotency key (reqid only
// names the request in logs), so a synthesis whose answer is lost after the request left
// fails for good (provider.ErrOutcomeUnknown), as elevenlabs does: the speech is refunded and
// the operator's possible loss is counted, never paid a second time by a retry. A lost
// upload answer is retried: training the same audio again pays no synthesis (it uses one of
// the slot's training times). docs/upstreams.md "## Seed Speech".
package seedspeech

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"mediagen/internal/provider"
	"mediagen/internal/provider/rest"
)

// Clusters of the TTS API: preset voices, and voices cloned with model_type 1 (ICL).
const (
	ClusterPreset = "volcano_tts"
	ClusterClone  = "volcano_icl"
	// ResourceClone is the Resource-Id header of the voice-clone API.
	ResourceClone = "volc.megatts.voiceclone"
	// MaxReferenceBytes is the voice-clone API's limit of one audio (10 MB).
	MaxReferenceBytes = 10 << 20
	// maxAnswerBytes bounds a TTS answer: base64 of MP3 (4/3 of the audio) and its JSON.
	maxAnswerBytes = 48 << 20
	// DefaultPoll is how often the slot's training status is read.
	DefaultPoll = time.Second
)

// Status codes of the voice-clone status API (status field).
const (
	statusNotFound = 0
	statusTraining = 1
	statusSuccess  = 2
	statusFailed   = 3
	statusActive   = 4
)

// Config configures a Client.
type Config struct {
	BaseURL   string // https://openspeech.bytedance.com
	Token     string // the console's access token
	AppID     string
	SpeakerID string // the voice-clone slot, S_…
	Voice     string // the preset voice_type of text-only requests ("" : none)
	// HTTP is the client for API calls (default: 30 s timeout). Its transport must not retry.
	HTTP              *http.Client
	RequestsPerSecond float64
	// ReadReference reads a reference's bytes, at most max (the SSRF-safe fetch policy);
	// required for audio references.
	ReadReference func(ctx context.Context, src provider.Source, max int64) ([]byte, error)
	Poll          time.Duration // training status reads (0: DefaultPoll)
}

// Client calls one Doubao speech app with one clone slot.
type Client struct {
	api  *rest.Client
	cfg  Config
	poll time.Duration

	// The slot holds one cloned voice at a time: a clone request holds it from its upload to
	// the end of its synthesis, so two requests of this process never speak with each
	// other's voice. trained is the digest of the references the slot last trained on here:
	// a retry with the same references does not train again.
	slot    chan struct{} // a token: held while the slot is trained and spoken with
	trained [32]byte
}

// New returns a client of the account.
func New(cfg Config) (*Client, error) {
	if cfg.AppID == "" || cfg.SpeakerID == "" {
		return nil, errors.New("seedspeech: app id and speaker id are required")
	}
	api, err := rest.New(rest.Config{Name: "seedspeech", BaseURL: cfg.BaseURL, APIKey: "Bearer;" + cfg.Token, HTTP: cfg.HTTP,
		RequestsPerSecond: cfg.RequestsPerSecond, KeyHeader: "Authorization"})
	if err != nil {
		return nil, err
	}
	poll := cfg.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	return &Client{api: api, cfg: cfg, poll: poll, slot: make(chan struct{}, 1)}, nil
}

// ttsRequest is the body of POST /api/v1/tts (docs 6561/79820: app, user, audio, request).
type ttsRequest struct {
	App struct {
		AppID   string `json:"appid"`
		Token   string `json:"token"`
		Cluster string `json:"cluster"`
	} `json:"app"`
	User struct {
		UID string `json:"uid"`
	} `json:"user"`
	Audio struct {
		VoiceType string `json:"voice_type"`
		Encoding  string `json:"encoding"`
	} `json:"audio"`
	Request struct {
		ReqID     string `json:"reqid"`
		Text      string `json:"text"`
		Operation string `json:"operation"`
	} `json:"request"`
}

// ttsAnswer is its answer: code 3000 with the base64 audio, or another code and message.
type ttsAnswer struct {
	ReqID    string `json:"reqid"`
	Code     int    `json:"code"`
	Message  string `json:"message"`
	Data     string `json:"data"`
	Addition struct {
		Duration string `json:"duration"`
	} `json:"addition"`
}

// uploadRequest is the body of POST /api/v1/mega_tts/audio/upload.
type uploadRequest struct {
	AppID     string        `json:"appid"`
	SpeakerID string        `json:"speaker_id"`
	Audios    []uploadAudio `json:"audios"`
	Source    int           `json:"source"`     // 2: voice cloning
	ModelType int           `json:"model_type"` // 1: ICL, synthesized on cluster volcano_icl
}

type uploadAudio struct {
	AudioBytes  string `json:"audio_bytes"`
	AudioFormat string `json:"audio_format"` // wav, mp3, ogg, m4a, aac, pcm
}

// baseResp is the clone API's result envelope (StatusCode 0: success).
type baseResp struct {
	BaseResp struct {
		StatusCode    int    `json:"StatusCode"`
		StatusMessage string `json:"StatusMessage"`
	} `json:"BaseResp"`
	SpeakerID string `json:"speaker_id"`
	Status    int    `json:"status"` // of /status
}

// Synthesize speaks the request's text (input and instructions joined: the API has one
// text): with the account's preset voice, or with a voice cloned from its audio references.
func (c *Client) Synthesize(ctx context.Context, r provider.SpeechRequest) (provider.Speech, error) {
	var audio []provider.Input
	for _, in := range r.References {
		if in.Type != "audio_url" { // the catalog refuses these at submission (RefuseSpeech)
			return provider.Speech{}, &provider.Error{Code: "InvalidParameter", Message: "This model clones a voice from audio references only.", Kind: provider.ErrPermanent}
		}
		audio = append(audio, in)
	}
	if len(audio) == 0 {
		if c.cfg.Voice == "" {
			return provider.Speech{}, &provider.Error{Code: "InvalidParameter", Message: "This model needs audio references.", Kind: provider.ErrPermanent}
		}
		return c.tts(ctx, r, ClusterPreset, c.cfg.Voice)
	}
	audios, sum, err := c.readReferences(ctx, audio)
	if err != nil {
		return provider.Speech{}, err
	}
	select {
	case c.slot <- struct{}{}:
	case <-ctx.Done():
		return provider.Speech{}, fmt.Errorf("seedspeech: waiting for the clone slot: %w: %w", ctx.Err(), provider.ErrTransient)
	}
	defer func() { <-c.slot }()
	if c.trained != sum {
		c.trained = [32]byte{}
		if err := c.train(ctx, audios); err != nil {
			return provider.Speech{}, err
		}
		c.trained = sum
	}
	return c.tts(ctx, r, ClusterClone, c.cfg.SpeakerID)
}

// readReferences reads every audio reference (at most the API's 10 MB each) and names its
// format from its first bytes; the digest names the set.
func (c *Client) readReferences(ctx context.Context, refs []provider.Input) ([]uploadAudio, [32]byte, error) {
	if c.cfg.ReadReference == nil {
		return nil, [32]byte{}, &provider.Error{Code: "speech_generation_failed", Message: "References cannot be read on this server.", Kind: provider.ErrPermanent}
	}
	h := sha256.New()
	var out []uploadAudio
	for i, ref := range refs {
		b, err := c.cfg.ReadReference(ctx, ref.Source, MaxReferenceBytes)
		if errors.Is(err, provider.ErrTooLarge) {
			return nil, [32]byte{}, &provider.Error{Code: "InvalidParameter", Kind: provider.ErrPermanent,
				Message: fmt.Sprintf("Reference audio %d is larger than the upstream's 10 MB.", i+1)}
		}
		if err != nil {
			return nil, [32]byte{}, fmt.Errorf("seedspeech: reading reference %d: %w", i+1, err)
		}
		format := AudioFormat(b)
		if format == "" {
			return nil, [32]byte{}, &provider.Error{Code: "InvalidParameter", Kind: provider.ErrPermanent,
				Message: fmt.Sprintf("Reference audio %d is not WAV, MP3, Ogg, M4A or AAC audio, which the upstream clones from.", i+1)}
		}
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
		out = append(out, uploadAudio{AudioBytes: base64.StdEncoding.EncodeToString(b), AudioFormat: format})
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return out, sum, nil
}

// AudioFormat is the clone API's audio_format of an audio's first bytes ("" : none it takes).
func AudioFormat(b []byte) string {
	switch {
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WAVE":
		return "wav"
	case len(b) >= 4 && string(b[:4]) == "OggS":
		return "ogg"
	case len(b) >= 8 && string(b[4:8]) == "ftyp":
		return "m4a"
	case len(b) >= 3 && string(b[:3]) == "ID3":
		return "mp3"
	case len(b) >= 2 && b[0] == 0xFF && b[1]&0xF6 == 0xF0: // ADTS: layer bits 00
		return "aac"
	case len(b) >= 2 && b[0] == 0xFF && b[1]&0xE0 == 0xE0:
		return "mp3"
	}
	return ""
}

// train uploads the references into the slot and waits for its training to end.
func (c *Client) train(ctx context.Context, audios []uploadAudio) error {
	body, err := json.Marshal(uploadRequest{AppID: c.cfg.AppID, SpeakerID: c.cfg.SpeakerID, Audios: audios, Source: 2, ModelType: 1})
	if err != nil {
		return fmt.Errorf("seedspeech: %w", err)
	}
	var up baseResp
	err = c.api.JSON(ctx, rest.Request{Method: http.MethodPost, Path: "/api/v1/mega_tts/audio/upload", Body: bytes.NewReader(body),
		ContentType: "application/json", Header: map[string]string{"Resource-Id": ResourceClone}}, &up)
	if err != nil {
		// A lost answer is transient: training the same audio again pays no synthesis.
		return rest.Classify(err, refusal)
	}
	if err := cloneRefusal(up); err != nil {
		return err
	}
	for {
		st, err := c.status(ctx)
		if err != nil {
			return err
		}
		switch st.Status {
		case statusSuccess, statusActive:
			return nil
		case statusFailed:
			return &provider.Error{Code: "InvalidParameter", Message: "The upstream could not clone a voice from the reference audio.", Kind: provider.ErrPermanent}
		case statusNotFound:
			return fmt.Errorf("seedspeech: the clone slot is not found: %w", provider.ErrAccount)
		}
		t := time.NewTimer(c.poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("seedspeech: training: %w: %w", ctx.Err(), provider.ErrTransient)
		case <-t.C:
		}
	}
}

// status reads the slot's training status (free).
func (c *Client) status(ctx context.Context) (baseResp, error) {
	body, _ := json.Marshal(map[string]string{"appid": c.cfg.AppID, "speaker_id": c.cfg.SpeakerID})
	var st baseResp
	err := c.api.JSON(ctx, rest.Request{Method: http.MethodPost, Path: "/api/v1/mega_tts/status", Body: bytes.NewReader(body),
		ContentType: "application/json", Header: map[string]string{"Resource-Id": ResourceClone}}, &st)
	if err != nil {
		return baseResp{}, rest.Classify(err, refusal)
	}
	if st.BaseResp.StatusCode != 0 {
		return baseResp{}, cloneRefusal(st)
	}
	return st, nil
}

// cloneRefusal maps a clone API's StatusCode: 0 none; 1123 (the slot's training times used
// up) the account's; any other a refusal of the reference audio (no voice in it, too noisy,
// too short — codes 1101-1122).
func cloneRefusal(r baseResp) error {
	switch r.BaseResp.StatusCode {
	case 0:
		return nil
	case 1123:
		return fmt.Errorf("seedspeech: the clone slot has no training left (1123): %w", provider.ErrAccount)
	}
	return &provider.Error{Code: "InvalidParameter", Message: "The upstream could not clone a voice from the reference audio.", Kind: provider.ErrPermanent}
}

// tts makes the synthesis: one call, never repeated by this client.
func (c *Client) tts(ctx context.Context, r provider.SpeechRequest, cluster, voice string) (provider.Speech, error) {
	var req ttsRequest
	req.App.AppID, req.App.Token, req.App.Cluster = c.cfg.AppID, c.cfg.Token, cluster
	req.User.UID = "mediagen"
	req.Audio.VoiceType, req.Audio.Encoding = voice, "mp3"
	req.Request.ReqID, req.Request.Text, req.Request.Operation = r.IdempotencyKey, r.Text, "query"
	body, err := json.Marshal(req)
	if err != nil {
		return provider.Speech{}, fmt.Errorf("seedspeech: %w", err)
	}
	res, err := c.api.Do(ctx, rest.Request{Method: http.MethodPost, Path: "/api/v1/tts", Body: bytes.NewReader(body), ContentType: "application/json"})
	if err != nil {
		var se *rest.StatusError
		if !errors.As(err, &se) && !errors.Is(err, provider.ErrNotSent) {
			return provider.Speech{}, lost(err)
		}
		return provider.Speech{}, rest.Classify(err, refusal)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(provider.Capped(res.Body, maxAnswerBytes))
	if err != nil {
		if errors.Is(err, provider.ErrTooLarge) {
			return provider.Speech{}, &provider.Error{Code: "speech_generation_failed", Message: "The upstream's audio is larger than the service accepts.", Kind: provider.ErrPermanent}
		}
		return provider.Speech{}, lost(fmt.Errorf("seedspeech: reading the answer: %w", err))
	}
	var ans ttsAnswer
	if err := json.Unmarshal(data, &ans); err != nil {
		return provider.Speech{}, lost(errors.New("seedspeech: malformed answer"))
	}
	if ans.Code != 3000 {
		return provider.Speech{}, codeError(ans.Code)
	}
	audio, err := base64.StdEncoding.DecodeString(ans.Data)
	if err != nil || len(audio) == 0 {
		return provider.Speech{}, lost(errors.New("seedspeech: the answer holds no audio"))
	}
	return provider.Speech{ContentType: "audio/mpeg", Source: provider.Source{Open: func(context.Context) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(audio)), nil
	}}}, nil
}

// codeError maps a TTS answer's code (docs 6561/79820, error codes) that made no audio: 3003
// (concurrency over the app's quota) as a 429; 3005, 3006, 3030-3032 and 3040 (busy,
// interrupted, timed out) transient; 3050 (no such voice) the account's; the rest (3001
// invalid request, 3010 text too long, 3011 invalid text) a refusal of the request.
func codeError(code int) error {
	switch {
	case code == 3003:
		return fmt.Errorf("seedspeech: code 3003: %w: %w", &rest.StatusError{Call: "seedspeech POST /api/v1/tts", Status: http.StatusTooManyRequests}, provider.ErrTransient)
	case code == 3005 || code == 3006 || (code >= 3030 && code <= 3032) || code == 3040:
		return fmt.Errorf("seedspeech: code %d: %w", code, provider.ErrTransient)
	case code == 3050:
		return fmt.Errorf("seedspeech: code 3050 (voice not found): %w", provider.ErrAccount)
	}
	return &provider.Error{Code: "InvalidParameter", Message: "The upstream rejected the request.", Kind: provider.ErrPermanent}
}

// refusal is a refused call (400, 404, 409, 422) from the code of its body.
func refusal(se *rest.StatusError) error {
	var ans ttsAnswer
	if json.Unmarshal(se.Body, &ans) == nil && ans.Code != 0 && ans.Code != 3001 && ans.Code != 3010 && ans.Code != 3011 {
		return codeError(ans.Code)
	}
	var br baseResp
	if json.Unmarshal(se.Body, &br) == nil && br.BaseResp.StatusCode != 0 {
		return cloneRefusal(br)
	}
	return &provider.Error{Code: "InvalidParameter", Message: "The upstream rejected the request.", Kind: provider.ErrPermanent}
}

// lost is a synthesis whose answer was lost after the request left: permanent (no second
// call), refunded (elevenlabs.lost).
func lost(err error) error {
	return fmt.Errorf("%w: %w", &provider.Error{Code: "speech_generation_failed",
		Message: "The upstream's answer was lost; the speech was not retried so as not to pay for it twice.", Kind: provider.ErrPermanent},
		fmt.Errorf("%s: %w", strings.TrimSpace(err.Error()), provider.ErrOutcomeUnknown))
}

// BlindSyntheses marks the client a provider.BlindSynthesizer: a synthesis run again after a
// crash is not sent again.
func (c *Client) BlindSyntheses() {}

// Check reads the clone slot's status: free, authenticated, and it proves the app and slot.
func (c *Client) Check(ctx context.Context) error {
	_, err := c.status(ctx)
	return err
}
