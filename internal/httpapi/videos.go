package httpapi

import (
	"net/http"

	"mediagen/internal/keys"
	"mediagen/internal/video"
)

func caller(r *http.Request) keys.Caller {
	p, _ := CallerFrom(r.Context())
	return p
}

// createVideo answers POST /v1/videos with 202 and the task, for a new task and for an
// identical replay alike (the replay carries the original id).
func (s *Server) createVideo(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readJSONBody(w, r)
	if err != nil {
		return err
	}
	task, created, err := s.videos.Create(r.Context(), caller(r), body)
	if err != nil {
		return err
	}
	if created {
		s.metrics.accepted.WithLabelValues(task.Route).Inc()
	}
	writeJSON(w, http.StatusAccepted, video.View(task, s.links))
	return nil
}

// getVideo answers GET /v1/videos/{task_id}: one indexed read, no write.
func (s *Server) getVideo(w http.ResponseWriter, r *http.Request) error {
	task, err := s.videos.Get(r.Context(), caller(r), r.PathValue("task_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, video.View(task, s.links))
	return nil
}
