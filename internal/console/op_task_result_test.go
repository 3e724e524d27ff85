package console

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"mediagen/internal/store"
)

// completeTask marks an in-progress task of the operator env completed with a result.
func (e *opEnv) completeTask(t *testing.T, id string, result string) {
	t.Helper()
	ctx := context.Background()
	if err := e.st.Transact(ctx, func(tx store.Tx) error {
		return tx.AdvanceTask(ctx, store.Advance{ID: id, Status: store.StatusCompleted, Step: "done", Progress: 100,
			Charged: 1000, Result: []byte(result), FinishedAt: e.clock.Now()})
	}); err != nil {
		t.Fatal(err)
	}
}

func TestOperatorTaskPagePlaysACompletedTasksResultFromASignedLink(t *testing.T) {
	e := newOpEnv(t, func(c *OperatorConfig) {
		c.Links = fakeLinks{}
		c.MediaOrigins = []string{"https://media.example"}
	})
	k := e.newKey(t, 10_000_000)
	now := e.clock.Now()
	e.addTask(t, k.ID, "video_done", store.StatusInProgress, now.Add(-time.Minute))
	e.completeTask(t, "video_done", `{"video_key":"videos/video_done.mp4","thumbnail_key":"thumbs/video_done.jpg","duration":5,"fps":24,"width":1280,"height":720}`)
	e.addTask(t, k.ID, "video_gone", store.StatusInProgress, now.Add(-time.Minute))
	e.completeTask(t, "video_gone", `{"video_key":"videos/video_gone.mp4","duration":5,"width":1280,"height":720,"deleted_at":1}`)
	e.addTask(t, k.ID, "video_fail", store.StatusFailed, now.Add(-time.Minute))

	src := "https://media.example/signed/videos/video_done.mp4?sig=abc"
	for _, tc := range []struct {
		name, id  string
		want, not []string
	}{
		{"completed", "video_done", []string{`<video controls`, `src="` + src + `"`,
			`poster="https://media.example/signed/thumbs/video_done.jpg?sig=abc"`, `<a href="` + src + `" download>Download</a>`, "1280x720"}, nil},
		{"deleted files", "video_gone", []string{"The result's files were deleted."}, []string{"<video", "video_gone.mp4"}},
		{"failed", "video_fail", nil, []string{"<video", "Download"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, secret := range []string{e.oper, e.viewer} {
				p := e.browser(t, secret).get("/console/tasks/" + tc.id)
				if p.status != http.StatusOK {
					t.Fatalf("task page: %d\n%s", p.status, p.body)
				}
				for _, w := range tc.want {
					if !strings.Contains(p.body, w) {
						t.Errorf("page lacks %q\n%s", w, p.body)
					}
				}
				for _, n := range tc.not {
					if strings.Contains(p.body, n) {
						t.Errorf("page shows %q", n)
					}
				}
				if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "media-src 'self' https://media.example") {
					t.Errorf("CSP %q does not allow the media origin", csp)
				}
			}
		})
	}
}

func TestOperatorTaskPageWithoutALinkerShowsNoResult(t *testing.T) {
	e := newOpEnv(t)
	k := e.newKey(t, 10_000_000)
	e.addTask(t, k.ID, "video_done", store.StatusInProgress, e.clock.Now().Add(-time.Minute))
	e.completeTask(t, "video_done", `{"video_key":"videos/video_done.mp4","duration":5,"width":1280,"height":720}`)
	p := e.browser(t, e.oper).get("/console/tasks/video_done")
	if p.status != http.StatusOK || strings.Contains(p.body, "<video") {
		t.Errorf("task page without links: %d, has a video: %v", p.status, strings.Contains(p.body, "<video"))
	}
}

// addSpeech stores a speech record of key k, completed with an audio file when done.
func (e *opEnv) addSpeech(t *testing.T, keyID, id string, done bool) {
	t.Helper()
	ctx := context.Background()
	now := e.clock.Now()
	sp := store.Speech{ID: id, KeyID: keyID, TenantID: "demo", Model: "voice", Status: store.SpeechPending, PayloadHash: []byte(id),
		Request: []byte(`{"upstream":"tts-main","upstream_model":"tts-1"}`), Pricing: []byte(`{}`), Reserved: 10,
		AttemptToken: "attempt_1", AttemptUntil: now.Add(time.Minute), CreatedAt: now, UpdatedAt: now}
	err := e.st.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateSpeech(ctx, sp); err != nil || !done {
			return err
		}
		return tx.FinishSpeech(ctx, store.SpeechFinish{ID: id, Token: "attempt_1", Status: store.SpeechCompleted, Charged: 5, FinishedAt: now,
			Result: []byte(`{"audio_key":"speech/` + id + `.mp3","content_type":"audio/mpeg","bytes":1000,"duration_us":2500000,"original_duration_us":2500000}`)})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestOperatorSpeechPagePlaysACompletedRecordsAudio(t *testing.T) {
	e := newOpEnv(t, func(c *OperatorConfig) { c.Links = fakeLinks{} })
	k := e.newKey(t, 10_000_000)
	e.addSpeech(t, k.ID, "speech_done", true)
	e.addSpeech(t, k.ID, "speech_pending", false)
	b := e.browser(t, e.viewer)
	src := "https://media.example/signed/speech/speech_done.mp3?sig=abc"
	p := b.get("/console/speech/speech_done")
	for _, want := range []string{`<audio controls`, `src="` + src + `"`, `<a href="` + src + `" download>Download</a>`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("completed speech page lacks %q\n%s", want, p.body)
		}
	}
	if p := b.get("/console/speech/speech_pending"); p.status != http.StatusOK || strings.Contains(p.body, "<audio") {
		t.Errorf("pending speech page: %d, has audio: %v", p.status, strings.Contains(p.body, "<audio"))
	}
}
