package httpapi

import (
	"net/http"

	"mediagen/internal/apierr"
	"mediagen/internal/speech"
)

// createSpeech answers POST /v1/audio/speech with 200 and the generated speech, synchronously
// within the service's bounded wait. A replay of the same client_request_id answers the
// original outcome (the same id, a fresh link to the same audio).
func (s *Server) createSpeech(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readJSONBody(w, r)
	if err != nil {
		return err
	}
	if s.speech == nil {
		return apierr.New(apierr.KindUnavailable, "Speech generation is not available on this server right now. Retry later, or contact the operator.")
	}
	p, _ := CallerFrom(r.Context())
	res, err := s.speech.Create(r.Context(), p, body)
	if err != nil {
		if e, ok := err.(*apierr.Error); ok && e.Code == speech.CodeInProgress {
			w.Header().Set("Retry-After", "5")
		}
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}
