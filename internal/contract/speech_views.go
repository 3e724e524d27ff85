package contract

// The response body of POST /v1/audio/speech. The speech service fills it from its record
// (speech.Service); the edge writes it as it is.

// SpeechResponse is the contract's speech response.
type SpeechResponse struct {
	ID               string          `json:"id"`
	Object           string          `json:"object"`
	Created          int64           `json:"created"`
	Model            string          `json:"model"`
	URL              string          `json:"url"`
	URLExpiresAt     int64           `json:"url_expires_at"`
	Duration         float64         `json:"duration"`
	OriginalDuration float64         `json:"original_duration"`
	Usage            SpeechUsage     `json:"usage"`
	Metadata         *SpeechMetadata `json:"metadata,omitempty"`
}

// SpeechUsage is the billed quantity: seconds of generated audio.
type SpeechUsage struct {
	Type             string  `json:"type"`
	Duration         float64 `json:"duration"`
	OriginalDuration float64 `json:"original_duration"`
}

// SpeechMetadata echoes the client's request id; it is omitted when there is none.
type SpeechMetadata struct {
	ClientRequestID string `json:"client_request_id"`
}
