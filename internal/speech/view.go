package speech

import (
	"context"
	"fmt"

	"github.com/go-json-experiment/json"

	"mediagen/internal/blob"
	"mediagen/internal/contract"
	"mediagen/internal/store"
)

// Response is the contract's speech response, the answer of every way a request ends here.
// The type is the contract's; the name stays for the service's many signatures.
type Response = contract.SpeechResponse

// render is the answer for a completed record, with a freshly minted link to the same stored
// audio on every call, on the tenant's address when ctx names one (blob.WithLinkBase).
func (s *Service) render(ctx context.Context, rec store.Speech) (*Response, error) {
	var res Result
	if err := json.Unmarshal(rec.Result, &res); err != nil || res.AudioKey == "" {
		return nil, fmt.Errorf("speech %s: stored result: %v", rec.ID, err)
	}
	url, exp := blob.SignedURLIn(ctx, s.Blobs, res.AudioKey, s.linkTTL())
	d, od := seconds(res.DurationMicros), seconds(res.OriginalDurationMicros)
	r := &Response{ID: rec.ID, Object: "audio.speech", Created: rec.CreatedAt.Unix(), Model: rec.Model,
		URL: url, URLExpiresAt: exp.Unix(), Duration: d, OriginalDuration: od,
		Usage: contract.SpeechUsage{Type: "seconds", Duration: d, OriginalDuration: od}}
	if rec.ClientRequestID != "" {
		r.Metadata = &contract.SpeechMetadata{ClientRequestID: rec.ClientRequestID}
	}
	return r, nil
}

// seconds turns integer microseconds into seconds; the float prints as the exact decimal of
// at most six places (for example 2.345678).
func seconds(us int64) float64 { return float64(us) / 1e6 }
