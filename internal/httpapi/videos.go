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
//
// Two request shapes are accepted (docs/video.md): a multipart/form-data body is always
// OpenAI's; a JSON body is OpenAI's only when video.IsOpenAIJSON says so (seconds, size or
// input_reference at its top level and no metadata). Every other body is the contract's and
// is decided exactly as before.
func (s *Server) createVideo(w http.ResponseWriter, r *http.Request) error {
	if isMultipart(r) {
		return s.createVideoMultipart(w, r)
	}
	body, err := s.readJSONBody(w, r)
	if err != nil {
		return err
	}
	if video.IsOpenAIJSON(body) {
		o, err := video.ParseOpenAIJSON(body)
		if err != nil {
			return err
		}
		return s.createVideoOpenAI(w, r, o, nil)
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

// VideoList is GET /v1/videos's answer: the shape OpenAI's SDKs page through. first_id and
// last_id are omitted on an empty page (no nulls).
type VideoList struct {
	Object  string           `json:"object"`
	Data    []video.TaskView `json:"data"`
	FirstID string           `json:"first_id,omitempty"`
	LastID  string           `json:"last_id,omitempty"`
	HasMore bool             `json:"has_more"`
}

// listVideos answers GET /v1/videos: the calling key's own tasks, each exactly as GET
// /v1/videos/{task_id} shows it. Reads only.
func (s *Server) listVideos(w http.ResponseWriter, r *http.Request) error {
	q, err := video.ParseListQuery(r.URL.Query())
	if err != nil {
		return err
	}
	tasks, more, err := s.videos.List(r.Context(), caller(r), q)
	if err != nil {
		return err
	}
	out := VideoList{Object: "list", Data: make([]video.TaskView, 0, len(tasks)), HasMore: more}
	for _, t := range tasks {
		out.Data = append(out.Data, video.View(t, s.links))
	}
	if len(tasks) > 0 {
		out.FirstID, out.LastID = tasks[0].ID, tasks[len(tasks)-1].ID
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
