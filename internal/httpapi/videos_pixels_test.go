package httpapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/store"
	"mediagen/internal/video"
)

// An input video whose track states a frame over the budget (here a real clip whose tkhd is
// rewritten to 16000×16000) is refused at submission, on every route that measures one, with
// a 400 on the item naming the budget, before any decoder sees it: nothing is reserved or
// written.
func TestInputVideoOverTheFrameBudgetIsRefusedAtSubmission(t *testing.T) {
	t.Parallel()
	tools := requireFFmpeg(t)
	clip := filepath.Join(t.TempDir(), "in.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 24, Duration: 2, Container: "mp4"}, clip); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(clip)
	if err != nil {
		t.Fatal(err)
	}
	// tkhd version 0: width and height (16.16 fixed point) end its 84-byte payload.
	at := bytes.Index(b, []byte("tkhd"))
	if at < 0 || b[at+4] != 0 {
		t.Fatalf("no version 0 tkhd in the clip")
	}
	binary.BigEndian.PutUint32(b[at+80:], 16000<<16)
	binary.BigEndian.PutUint32(b[at+84:], 16000<<16)
	media := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "big.mp4", time.Time{}, bytes.NewReader(b))
	}))
	t.Cleanup(media.Close)
	fetch := loopbackFetch(t, media.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs, mapResolver{})
	for _, c := range []struct{ name, body, param string }{
		{"production reference video", `{"model":"acme-production-standard","prompt":"x","metadata":{"resolution":"1080p","content":[
			{"type":"video_url","role":"reference_video","video_url":{"url":"` + media.URL + `/big.mp4"}}]}}`, "metadata.content[0].video_url.url"},
		{"enhancement source", `{"model":"acme-enhance-lite","metadata":{"video_url":"` + media.URL + `/big.mp4","duration":2,"resolution_limit":720,"fps":30}}`, "metadata.video_url"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEnvWith(t, testCatalog(t), &video.Service{Prober: video.URLProber{Client: fetch}}, DefaultMaxBodyBytes)
			secret, k := e.newKey("acme", startCredit, false)
			ve := &videoEnv{testEnv: e, key: secret, keyRec: k}
			r := ve.post(secret, c.body)
			var env struct {
				Error struct {
					Param   string `json:"param"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if r.status != 400 || json.Unmarshal(r.body, &env) != nil || env.Error.Param != c.param {
				t.Fatalf("%d %s, want 400 on %s", r.status, r.body, c.param)
			}
			if !strings.Contains(env.Error.Message, "16000×16000") || !strings.Contains(env.Error.Message, "35,389,440 pixels") {
				t.Errorf("message %q does not state the size and the budget", env.Error.Message)
			}
			if bal := ve.balance(k); bal.Available != startCredit || bal.Reserved != 0 {
				t.Errorf("money moved: %+v", bal)
			}
			tasks, err := e.store.SearchTasks(context.Background(), store.TaskFilter{KeyID: k.ID, Page: store.Page{Limit: 10}})
			if err != nil || len(tasks) != 0 {
				t.Errorf("tasks written: %v %v", tasks, err)
			}
		})
	}
}
