package speech

import (
	"fmt"

	"github.com/go-json-experiment/json"

	"mediagen/internal/store"
)

// Response is the contract's speech response.
type Response struct {
	ID               string    `json:"id"`
	Object           string    `json:"object"`
	Created          int64     `json:"created"`
	Model            string    `json:"model"`
	URL              string    `json:"url"`
	URLExpiresAt     int64     `json:"url_expires_at"`
	Duration         float64   `json:"duration"`
	OriginalDuration float64   `json:"original_duration"`
	Usage            Usage     `json:"usage"`
	Metadata         *Metadata `json:"metadata,omitempty"`
}

// Usage is the billed quantity: seconds of generated audio.
type Usage struct {
	Type             string  `json:"type"`
	Duration         float64 `json:"duration"`
	OriginalDuration float64 `json:"original_duration"`
}

// Metadata echoes the client's request id; it is omitted when there is none.
type Metadata struct {
	ClientRequestID string `json:"client_request_id"`
}

// render is the answer for a completed record, with a freshly minted link to the same stored
// audio on every call.
func (s *Service) render(rec store.Speech) (*Response, error) {
	var res Result
	if err := json.Unmarshal(rec.Result, &res); err != nil || res.AudioKey == "" {
		return nil, fmt.Errorf("speech %s: stored result: %v", rec.ID, err)
	}
	url, exp := s.Blobs.SignedURL(res.AudioKey, s.linkTTL())
	d, od := seconds(res.DurationMicros), seconds(res.OriginalDurationMicros)
	r := &Response{ID: rec.ID, Object: "audio.speech", Created: rec.CreatedAt.Unix(), Model: rec.Model,
		URL: url, URLExpiresAt: exp.Unix(), Duration: d, OriginalDuration: od,
		Usage: Usage{Type: "seconds", Duration: d, OriginalDuration: od}}
	if rec.ClientRequestID != "" {
		r.Metadata = &Metadata{ClientRequestID: rec.ClientRequestID}
	}
	return r, nil
}

// seconds turns integer microseconds into seconds; the float prints as the exact decimal of
// at most six places (for example 2.345678).
func seconds(us int64) float64 { return float64(us) / 1e6 }
