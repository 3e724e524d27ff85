// Package samples is the sandbox's built-in sample media: a short MP4 clip, a JPEG still and
// an MP3 voice, served to the service's own fetch client under a reserved host so that every
// route — enhancement, production with a reference video, reference images and audio, speech
// references, asset registration — can be tried offline with no certificate and no server of
// one's own. See safefetch.Samples for how the fetch client answers that host in-process
// without opening anything else, and docs/sandbox.md for the switch.
package samples

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/safefetch"
)

// Host is the sample host. It lies under .example, a top-level domain reserved by RFC 2606
// that never resolves, so where samples are off a sample URL fails like any unknown name.
const Host = "samples.mediagen.example"

// File is one sample.
type File struct {
	Name        string
	ContentType string
	About       string
}

// Files lists the samples, in the order the documentation shows them.
var Files = []File{
	{"clip.mp4", "video/mp4", "5 s, 640×360, 24 fps, H.264 with an AAC tone track"},
	{"still.jpg", "image/jpeg", "640×360 JPEG (the clip's last frame)"},
	{"voice.mp3", "audio/mpeg", "about 2 s of speech, MP3 mono 24 kHz"},
}

// URL is the https URL of a sample.
func URL(name string) string { return "https://" + Host + "/" + name }

// Server makes the sample files on first use (with ffmpeg and espeak-ng, into dir) and serves
// them with ranges. Making them lazily keeps serve's start fast; a failure is retried on the
// next request.
type Server struct {
	Tools ffmpeg.Tools
	Dir   string

	mu    sync.Mutex
	ready bool
}

// Fetch is the safefetch option that serves these samples.
func (s *Server) Fetch() *safefetch.Samples { return &safefetch.Samples{Host: Host, Handler: s} }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var file *File
	for i := range Files {
		if "/"+Files[i].Name == r.URL.Path {
			file = &Files[i]
		}
	}
	if file == nil {
		http.NotFound(w, r)
		return
	}
	if err := s.prepare(r.Context()); err != nil {
		http.Error(w, "sample media unavailable", http.StatusServiceUnavailable)
		return
	}
	f, err := os.Open(filepath.Join(s.Dir, file.Name))
	if err != nil {
		http.Error(w, "sample media unavailable", http.StatusServiceUnavailable)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		http.Error(w, "sample media unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", file.ContentType)
	w.Header().Set("ETag", fmt.Sprintf(`"%x-%x"`, fi.Size(), fi.ModTime().UnixNano()))
	http.ServeContent(w, r, file.Name, fi.ModTime(), f)
}

// prepare makes the missing sample files. It runs under the lock: the first requests wait for
// one render instead of starting several.
func (s *Server) prepare(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready {
		return nil
	}
	// The render must not fail because the first caller gave up early.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return fmt.Errorf("samples: %w", err)
	}
	clip := filepath.Join(s.Dir, "clip.mp4")
	steps := []struct {
		name string
		make func(out string) error
	}{
		{"clip.mp4", func(out string) error {
			return s.Tools.Render(ctx, ffmpeg.RenderSpec{Width: 640, Height: 360, FPS: 24, Duration: 5, Audio: true, Text: "mediagen sample clip"}, out)
		}},
		{"still.jpg", func(out string) error { return s.Tools.LastFrameJPG(ctx, clip, out) }},
		{"voice.mp3", func(out string) error {
			return s.Tools.Speak(ctx, "This is the mediagen sample voice.", out, ffmpeg.SpeakOptions{})
		}},
	}
	for _, st := range steps {
		out := filepath.Join(s.Dir, st.name)
		if _, err := os.Stat(out); err == nil {
			continue
		}
		if err := st.make(out); err != nil {
			return fmt.Errorf("samples: make %s: %w", st.name, err)
		}
	}
	s.ready = true
	return nil
}

// Names is the list of sample URLs for logs.
func Names() string {
	names := make([]string, len(Files))
	for i, f := range Files {
		names[i] = f.Name
	}
	return "https://" + Host + "/{" + strings.Join(names, ",") + "}"
}
