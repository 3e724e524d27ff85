package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"path"

	"mediagen/internal/apierr"
	"mediagen/internal/contract"
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
		_, err = s.createVideoOpenAI(w, r, o, nil)
		return err
	}
	task, created, err := s.videos.Create(r.Context(), caller(r), body)
	if err != nil {
		return err
	}
	if created {
		s.metrics.accepted.WithLabelValues(task.Route).Inc()
	}
	writeJSON(w, http.StatusAccepted, video.View(task, video.LinkerIn(r.Context(), s.links)))
	return nil
}

// getVideo answers GET /v1/videos/{task_id}: one indexed read, no write.
func (s *Server) getVideo(w http.ResponseWriter, r *http.Request) error {
	task, err := s.videos.Get(r.Context(), caller(r), r.PathValue("task_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, video.View(task, video.LinkerIn(r.Context(), s.links)))
	return nil
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
	out := contract.VideoList{Object: "list", Data: make([]contract.VideoTask, 0, len(tasks)), HasMore: more}
	links := video.LinkerIn(r.Context(), s.links)
	for _, t := range tasks {
		out.Data = append(out.Data, video.View(t, links))
	}
	if len(tasks) > 0 {
		out.FirstID, out.LastID = tasks[0].ID, tasks[len(tasks)-1].ID
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// videoContent answers GET /v1/videos/{task_id}/content (OpenAI's download). When the
// result's signed link is on the origin the client called, the answer is a 302 to it: the
// file route serves ranges within the download bounds. Otherwise (results on S3: a presigned
// link on the bucket's host) the bytes are streamed from the store here, with ranges, under
// the same download bounds: OpenAI's Go SDK refuses to follow a redirect to another origin.
func (s *Server) videoContent(w http.ResponseWriter, r *http.Request) error {
	key, err := s.videos.ContentKey(r.Context(), caller(r), r.PathValue("task_id"), r.URL.Query().Get("variant"))
	if err != nil {
		return err
	}
	if s.links == nil {
		return apierr.New(apierr.KindUnavailable, "Video content cannot be linked right now. Retry later.")
	}
	w.Header().Set("Cache-Control", "no-store")
	link := video.LinkerIn(r.Context(), s.links).Link(key)
	if u, err := url.Parse(link); err == nil && u.Host == r.Host {
		http.Redirect(w, r, link, http.StatusFound)
		return nil
	}
	return s.streamResult(w, r, key)
}

// streamResult serves a stored result from the blob store, with Range support, bounded like
// a file link download.
func (s *Server) streamResult(w http.ResponseWriter, r *http.Request, key string) error {
	if s.videos.Blobs == nil {
		return apierr.New(apierr.KindUnavailable, "Video content cannot be served right now. Retry later.")
	}
	end, err := s.downloads.Begin(s.proxies.ClientOfRequest(r), key)
	if err != nil {
		w.Header().Set("Connection", "close")
		return err
	}
	defer end()
	obj, err := s.videos.Blobs.Open(r.Context(), key)
	if err != nil {
		return fmt.Errorf("content %s: %w", key, err)
	}
	defer obj.Close()
	info, err := s.videos.Blobs.Stat(r.Context(), key)
	if err != nil {
		return fmt.Errorf("content %s: %w", key, err)
	}
	if info.ContentType != "" {
		w.Header().Set("Content-Type", info.ContentType)
	}
	http.ServeContent(w, r, path.Base(key), info.ModTime, obj)
	return nil
}

// deleteVideo answers DELETE /v1/videos/{task_id}: the stored result goes, the task stays.
func (s *Server) deleteVideo(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("task_id")
	if err := s.videos.Delete(r.Context(), caller(r), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, contract.VideoDeleted{ID: id, Object: "video.deleted", Deleted: true})
	return nil
}
