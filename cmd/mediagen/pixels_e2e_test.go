package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mediagen/internal/media/pixels/pixelstest"
)

// End to end, the bomb by URL: the first frame given as input_reference.image_url is
// not read at submission (an upstream would fetch it itself), so the task is accepted; the
// sandbox reads its header before decoding it and fails the task with InvalidParameter naming
// the budget, and the reservation comes back in full: nothing is charged, no render ran.
func TestOpenAIFirstFrameBombByURLFailsTheTaskAndChargesNothing(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	var bomb bytes.Buffer
	if err := pixelstest.WritePNG(&bomb, 16000, 16000, 8, pixelstest.RGB); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.mediaDir(), "black.png"), bomb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	available, used := e.balance()
	id := e.create(`{"model":"demo-video-fast","prompt":"a black frame","seconds":"4","size":"1280x720","input_reference":{"image_url":"` + e.media.URL + `/black.png"}}`)
	task := e.wait(id)
	if task.Status != "failed" || task.Error == nil || task.Error.Code != "InvalidParameter" ||
		!strings.Contains(task.Error.Message, "16000×16000") || !strings.Contains(task.Error.Message, "16,777,216 pixels") {
		t.Fatalf("task %+v, want failed InvalidParameter naming the size and the budget", task)
	}
	if a, u := e.balance(); a != available || u != used {
		t.Errorf("balance %s/%s → %s/%s: a task failed on its input must cost nothing", available, used, a, u)
	}
}
