package client

import (
	"context"
	"errors"
	"net/http"
)

// SpeechRequest is the body of POST /v1/audio/speech. Voice selectors, speed and similar
// knobs are not fields of the contract: put delivery guidance in Instructions.
type SpeechRequest struct {
	Model        string         `json:"model"`
	Input        string         `json:"input,omitempty"`
	Instructions string         `json:"instructions,omitempty"`
	Metadata     SpeechMetadata `json:"metadata"`
}

// SpeechMetadata carries the idempotency key and the optional references.
type SpeechMetadata struct {
	ClientRequestID string            `json:"client_request_id,omitempty"`
	References      []SpeechReference `json:"references,omitempty"`
}

// SpeechReference is an https audio or image reference: up to 3 audio_url, or exactly one
// image_url, never both.
type SpeechReference struct {
	Type string `json:"type"` // audio_url or image_url
	URL  string `json:"url"`
}

// Speech is the answer of a speech request.
type Speech struct {
	ID               string      `json:"id"`
	Object           string      `json:"object"`
	Created          int64       `json:"created"`
	Model            string      `json:"model"`
	URL              string      `json:"url"` // temporary: copy the audio promptly
	URLExpiresAt     int64       `json:"url_expires_at"`
	Duration         float64     `json:"duration"`
	OriginalDuration float64     `json:"original_duration"`
	Usage            SpeechUsage `json:"usage"`
	Metadata         *struct {
		ClientRequestID string `json:"client_request_id,omitempty"`
	} `json:"metadata,omitempty"`
}

// SpeechUsage is the billed quantity.
type SpeechUsage struct {
	Type             string  `json:"type"` // seconds
	Duration         float64 `json:"duration"`
	OriginalDuration float64 `json:"original_duration"`
}

// CreateSpeech generates speech and returns a temporary link to it. As with videos, a missing
// client_request_id is generated and written into req first, and retries send the same id, so
// a retried request returns the original audio without generating or charging again. While
// the original is still generating, the service answers 409 request_in_progress with
// Retry-After, which the client waits out.
func (c *Client) CreateSpeech(ctx context.Context, req *SpeechRequest) (*Speech, error) {
	if req == nil {
		return nil, errors.New("mediagen: CreateSpeech: nil request")
	}
	if req.Metadata.ClientRequestID == "" {
		req.Metadata.ClientRequestID = NewRequestID()
	}
	var s Speech
	if err := c.do(ctx, http.MethodPost, "/v1/audio/speech", req, &s, replayable); err != nil {
		return nil, err
	}
	return &s, nil
}

// Balance is the balance of the client's API key.
type Balance struct {
	Object   string `json:"object"`
	Currency string `json:"currency"`
	Balance  struct {
		// Amounts are exact decimals with at most 6 fractional digits on the wire; a float64
		// holds them exactly enough for display, not for accounting sums.
		Available float64 `json:"available"`
		Used      float64 `json:"used"`
		Unlimited bool    `json:"unlimited"`
	} `json:"balance"`
	UpdatedAt int64 `json:"updated_at"`
}

// Balance reads the balance of the API key.
func (c *Client) Balance(ctx context.Context) (*Balance, error) {
	var b Balance
	if err := c.do(ctx, http.MethodGet, "/v1/billing/balance", nil, &b, replayable); err != nil {
		return nil, err
	}
	return &b, nil
}
