// Package elevenlabs is the upstream adapter of ElevenLabs text-to-speech: one synchronous
// POST {base}/v1/text-to-speech/{voice_id}?output_format=mp3_44100_128 with the key in the
// xi-api-key header, answered with the audio's bytes. The wire format is the official Node
// SDK's (@elevenlabs/elevenlabs-js: textToSpeech.convert, BodyTextToSpeechFull, models.list),
// called as typed REST of our own: the SDK retries 408, 429 and 5xx twice by default, and
// ElevenLabs has no idempotency key, so a retried synthesis can be billed twice.
// docs/upstreams.md#elevenlabs describes the mapping.
package elevenlabs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"mediagen/internal/provider"
	"mediagen/internal/provider/rest"
)

// OutputFormat is the audio every synthesis asks for: MP3, 44.1 kHz, 128 kbit/s — the API's
// own default, named so a change of default upstream cannot change what the service stores.
const OutputFormat = "mp3_44100_128"

// maxSpeechBytes bounds the audio of one answer (MP3 at 128 kbit/s: over half an hour, past
// the longest text the API takes in one request).
const maxSpeechBytes = 32 << 20

// Config configures a Client.
type Config struct {
	BaseURL string // the API root, e.g. https://api.elevenlabs.io
	APIKey  string
	// HTTP is the client for API calls (default: 30 s timeout). Its transport must not retry.
	HTTP *http.Client
	// RequestsPerSecond spaces this client's calls (0: no spacing).
	RequestsPerSecond float64
	// Voice is the voice id every synthesis speaks with (required: ElevenLabs has no default).
	Voice string
}

// Client calls one ElevenLabs account.
type Client struct {
	api   *rest.Client
	voice string
}

// New returns a client of the account.
func New(cfg Config) (*Client, error) {
	if strings.TrimSpace(cfg.Voice) == "" {
		return nil, errors.New("elevenlabs: no voice id")
	}
	api, err := rest.New(rest.Config{Name: "elevenlabs", BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, HTTP: cfg.HTTP,
		RequestsPerSecond: cfg.RequestsPerSecond, KeyHeader: "xi-api-key"})
	if err != nil {
		return nil, err
	}
	return &Client{api: api, voice: cfg.Voice}, nil
}

// speechRequest is the body of POST /v1/text-to-speech/{voice_id} (the SDK's
// BodyTextToSpeechFull: text, model_id; the rest is left to the voice's stored settings).
type speechRequest struct {
	Text    string `json:"text"`
	ModelID string `json:"model_id,omitempty"` // absent: the API's default model
}

// errorBody is the API's error envelope: detail is an object {status, message} for the
// API's own refusals, or a list of {loc, msg, type} for a validation error (422).
type errorBody struct {
	Detail json.RawMessage `json:"detail"`
}

// Synthesize speaks the request's whole text (input and instructions joined: the API has no
// separate instructions) with the account's voice. It calls once and never again by itself:
// an answer lost after the request left may have been billed, and ElevenLabs has no
// idempotency key, so such a loss fails the speech for good (provider.ErrOutcomeUnknown,
// permanent) instead of letting a retry pay for a second synthesis. A refusal with a status
// (429, 5xx) made no audio and is retried by the speech service as for openai.
func (c *Client) Synthesize(ctx context.Context, r provider.SpeechRequest) (provider.Speech, error) {
	if len(r.References) > 0 { // the catalog refuses these at submission (RefuseSpeech)
		return provider.Speech{}, &provider.Error{Code: "InvalidParameter", Message: "This model speaks text only.", Kind: provider.ErrPermanent}
	}
	b, err := json.Marshal(speechRequest{Text: r.Text, ModelID: r.Model})
	if err != nil {
		return provider.Speech{}, fmt.Errorf("elevenlabs: %w", err)
	}
	path := "/v1/text-to-speech/" + url.PathEscape(c.voice) + "?output_format=" + OutputFormat
	res, err := c.api.Do(ctx, rest.Request{Method: http.MethodPost, Path: path, Body: bytes.NewReader(b),
		ContentType: "application/json", Accept: "audio/mpeg"})
	if err != nil {
		var se *rest.StatusError
		if !errors.As(err, &se) && !errors.Is(err, provider.ErrNotSent) {
			return provider.Speech{}, lost(err)
		}
		return provider.Speech{}, rest.Classify(err, refusal)
	}
	defer res.Body.Close()
	audio, err := io.ReadAll(provider.Capped(res.Body, maxSpeechBytes))
	if err != nil {
		if errors.Is(err, provider.ErrTooLarge) {
			return provider.Speech{}, &provider.Error{Code: "speech_generation_failed", Message: "The upstream's audio is larger than the service accepts.", Kind: provider.ErrPermanent}
		}
		// The synthesis answered 200 and was billed: reading it again would pay twice.
		return provider.Speech{}, lost(fmt.Errorf("elevenlabs: reading the audio: %w", err))
	}
	if len(audio) == 0 {
		return provider.Speech{}, lost(errors.New("elevenlabs: empty audio"))
	}
	return provider.Speech{ContentType: "audio/mpeg", Source: provider.Source{Open: func(context.Context) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(audio)), nil
	}}}, nil
}

// lost is a synthesis whose answer was lost after the request left: permanent (no second
// call), with the public code of a failed speech; the speech is refunded in full.
func lost(err error) error {
	return fmt.Errorf("%w: %w", &provider.Error{Code: "speech_generation_failed",
		Message: "The upstream's answer was lost; the speech was not retried so as not to pay for it twice.", Kind: provider.ErrPermanent},
		// err's text only: it wraps ErrTransient, which would have the speech retried.
		fmt.Errorf("%s: %w", err.Error(), provider.ErrOutcomeUnknown))
}

// Check makes one cheap authenticated call: the list of models (GET /v1/models, free).
func (c *Client) Check(ctx context.Context) error {
	var out []struct {
		ModelID string `json:"model_id"`
	}
	if err := rest.Classify(c.api.JSON(ctx, rest.Request{Method: http.MethodGet, Path: "/v1/models"}, &out), refusal); err != nil {
		return err
	}
	if len(out) == 0 {
		return fmt.Errorf("elevenlabs: the account lists no models: %w", provider.ErrTransient)
	}
	return nil
}

// status is the detail.status of a refusal (empty for a validation error's list).
func status(se *rest.StatusError) string {
	var e errorBody
	_ = json.Unmarshal(se.Body, &e)
	var d struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(e.Detail, &d)
	return d.Status
}

// refusal is a refused synthesis (400, 404, 409, 422): a content refusal fails the speech
// with speech_generation_failed; anything else (an unknown voice or model, a text too long
// for the model) answers as invalid input. Never the upstream's own text.
func refusal(se *rest.StatusError) error {
	if s := status(se); strings.Contains(s, "moderation") || strings.Contains(s, "policy") || strings.Contains(s, "safety") {
		return &provider.Error{Code: "speech_generation_failed", Message: "The upstream declined to speak this text.", Kind: provider.ErrPermanent}
	}
	return &provider.Error{Code: "InvalidParameter", Message: "The upstream rejected the request.", Kind: provider.ErrPermanent}
}

// BlindSyntheses marks the client a provider.BlindSynthesizer: ElevenLabs has no idempotency
// key and its answer is the audio, so a synthesis whose run died mid-call (its process
// stopped) is not sent again when the run is picked up — it may have been billed already; the
// speech fails refunded with the possible synthesis recorded as lost_create.
func (c *Client) BlindSyntheses() {}
