package httpapi

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"mediagen/internal/blob"
	"mediagen/internal/media/pixels/pixelstest"
	"mediagen/internal/store"
)

// An input_reference whose header declares more pixels than the budget is refused at
// submission with a 400 on input_reference that names the budget, whatever the file weighs:
// the 746 KB black 16000×16000 PNG, its 1.99 MB 16-bit RGBA twin, and one column over
// the budget. Nothing is reserved, no task is written and no upload is kept.
func TestOpenAIUploadOverThePixelBudgetIsRefusedAndKeepsNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		w, h      uint32
		depth, ct byte
	}{
		{"black 16000x16000 rgb", 16000, 16000, 8, pixelstest.RGB},
		{"black 16000x16000 16-bit rgba", 16000, 16000, 16, pixelstest.RGBA},
		{"one column over 4096x4096", 4097, 4096, 8, pixelstest.Gray},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newVideoEnv(t, "acme")
			dir := t.TempDir()
			fs, err := blob.NewFS(dir, []byte("0123456789abcdef0123456789abcdef"), "http://127.0.0.1")
			if err != nil {
				t.Fatal(err)
			}
			e.srv.uploads = fs
			var img bytes.Buffer
			if err := pixelstest.WritePNG(&img, c.w, c.h, c.depth, c.ct); err != nil {
				t.Fatal(err)
			}
			var body bytes.Buffer
			mw := multipart.NewWriter(&body)
			_ = mw.WriteField("model", "acme-video-fast")
			_ = mw.WriteField("prompt", "a black frame")
			_ = mw.WriteField("seconds", "4")
			_ = mw.WriteField("size", "1280x720")
			fw, _ := mw.CreateFormFile("input_reference", "black.png")
			_, _ = fw.Write(img.Bytes())
			_ = mw.Close()
			req, _ := http.NewRequest("POST", e.ts.URL+"/v1/videos", &body)
			req.Header.Set("Authorization", "Bearer "+e.key)
			req.Header.Set("Content-Type", mw.FormDataContentType())
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(res.Body)
			res.Body.Close()
			var env struct {
				Error struct {
					Param   string `json:"param"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if res.StatusCode != 400 || json.Unmarshal(raw, &env) != nil || env.Error.Param != "input_reference" {
				t.Fatalf("%d %s, want 400 on input_reference", res.StatusCode, raw)
			}
			if !strings.Contains(env.Error.Message, "16,777,216 pixels") {
				t.Errorf("message %q does not state the budget", env.Error.Message)
			}
			if b := e.balance(e.keyRec); b.Available != startCredit || b.Reserved != 0 {
				t.Errorf("money moved: %+v", b)
			}
			tasks, err := e.store.SearchTasks(context.Background(), store.TaskFilter{KeyID: e.keyRec.ID, Page: store.Page{Limit: 10}})
			if err != nil || len(tasks) != 0 {
				t.Errorf("tasks written: %v %v", tasks, err)
			}
			_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					t.Errorf("upload kept: %s", p)
				}
				return nil
			})
		})
	}
}
