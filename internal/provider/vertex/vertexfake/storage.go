package vertexfake

import (
	"net/http"
	"net/url"
	"strings"
)

// object serves GET /storage/v1/b/{bucket}/o/{object}?alt=media, Cloud Storage's JSON API
// read of an object's bytes (the object name escaped in the path): a video Veo wrote under a
// create's storageUri.
func (s *Server) object(w http.ResponseWriter, r *http.Request, escaped string) {
	bucket, obj, ok := strings.Cut(escaped, "/o/")
	b, err1 := url.PathUnescape(bucket)
	o, err2 := url.PathUnescape(obj)
	if r.Method != http.MethodGet || !ok || err1 != nil || err2 != nil || r.URL.Query().Get("alt") != "media" {
		s.Violate("storage: %s %s is not an object read with alt=media", r.Method, r.URL)
		apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "bad request")
		return
	}
	s.Mu.Lock()
	j, found := s.objects[b+"/"+o]
	if found {
		s.reads++
	}
	s.Mu.Unlock()
	if !found {
		apiError(w, http.StatusNotFound, "NOT_FOUND", "No such object.")
		return
	}
	video, err := s.clip(j)
	if err != nil {
		apiError(w, http.StatusInternalServerError, "INTERNAL", "internal error")
		return
	}
	w.Header().Set("Content-Type", "video/mp4")
	_, _ = w.Write(video)
}

// ObjectReads is how many videos were read from the fake's Cloud Storage.
func (s *Server) ObjectReads() int {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	return s.reads
}
