package video

import (
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/store"
)

// expiringLinker mints links that say when they expire, as BlobLinker does.
type expiringLinker struct{ at time.Time }

func (l expiringLinker) Link(key string) string { return "https://files.example/" + key }
func (l expiringLinker) Expiry() time.Time      { return l.at }

// A task view carries OpenAI's seconds, size, completed_at and expires_at once completed; a
// deleted result shows deleted_at and the facts of the task (usage, the enhancement's
// measures) but no link and no expiry; an unfinished task shows none of them.
func TestViewShowsOpenAIFieldsAndNoLinksOnceDeleted(t *testing.T) {
	t.Parallel()
	created := time.Unix(1795643120, 0)
	finished := created.Add(3 * time.Second)
	links := expiringLinker{at: time.Unix(1795729523, 0)}
	result := func(deletedAt int64) []byte {
		b, _ := json.Marshal(Result{VideoKey: "videos/v/result.mp4", Duration: 4.0416, FPS: 24, Width: 854, Height: 480,
			Resolution: "854x480", ToolVersion: "lite", CompletionTokens: 20160, DeletedAt: deletedAt})
		return b
	}
	for _, tc := range []struct {
		name string
		task store.Task
		want string
	}{
		{"native completed", store.Task{ID: "video_a", Route: "native", Model: "m", Status: store.StatusCompleted, Progress: 100,
			CreatedAt: created, FinishedAt: finished, Result: result(0)},
			`{"id":"video_a","task_id":"video_a","object":"video","model":"m","status":"completed","progress":100,"created_at":1795643120,"metadata":{"url":"https://files.example/videos/v/result.mp4"},"usage":{"completion_tokens":20160,"total_tokens":20160},"seconds":"4.042","size":"854x480","completed_at":1795643123,"expires_at":1795729523}`},
		{"native deleted", store.Task{ID: "video_a", Route: "native", Model: "m", Status: store.StatusCompleted, Progress: 100,
			CreatedAt: created, FinishedAt: finished, Result: result(1795643190)},
			`{"id":"video_a","task_id":"video_a","object":"video","model":"m","status":"completed","progress":100,"created_at":1795643120,"usage":{"completion_tokens":20160,"total_tokens":20160},"seconds":"4.042","size":"854x480","completed_at":1795643123,"deleted_at":1795643190}`},
		{"enhancement deleted", store.Task{ID: "video_e", Route: "enhancement", Model: "e", Status: store.StatusCompleted, Progress: 100,
			CreatedAt: created, FinishedAt: finished, Result: result(1795643190)},
			`{"id":"video_e","task_id":"video_e","object":"video","model":"e","status":"completed","progress":100,"created_at":1795643120,"metadata":{"duration":4.0416,"resolution":"854x480","fps":24,"tool_version":"lite"},"seconds":"4.042","size":"854x480","completed_at":1795643123,"deleted_at":1795643190}`},
		{"queued", store.Task{ID: "video_q", Route: "native", Model: "m", Status: store.StatusQueued, CreatedAt: created},
			`{"id":"video_q","task_id":"video_q","object":"video","model":"m","status":"queued","progress":0,"created_at":1795643120}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(View(tc.task, links))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("view\n got %s\nwant %s", b, tc.want)
			}
		})
	}
}
