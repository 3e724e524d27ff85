package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/probe/probetest"
	"mediagen/internal/money"
)

// The first example through the service: a 1.2 s source whose mvhd, tkhd and mdhd
// say 0.75 s. The probe believed the header (the samples ran less than 0.5 s past it), so
// the task reserved ⌈0.75 + 0.25⌉ = 1 s (0.01 at lite 1080p) while the engine enhanced every
// sample up to -t 1.000 and the output measured 1.003 s: charged 2 s (0.02), and a key holding
// 0.01 ended at −0.01. The charge now stays within the reservation, and such a key is either
// refused (402) or never ends below zero.
func TestEnhancementSourceWhoseHeadersUnderstateItsSamplesIsChargedWithinItsReservation(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 64, Height: 36, FPS: 24, Duration: 1.2, Audio: true, Container: "mp4"}, src); err != nil {
		t.Fatal(err)
	}
	if err := probetest.RewriteDurations(src, 0.75); err != nil {
		t.Fatal(err)
	}
	media := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, src) }))
	t.Cleanup(media.Close)
	e := serveFetchingFrom(t, dir, media)
	body := func(crid string) string {
		return `{"model":"demo-enhance-lite","metadata":{"video_url":"` + media.URL + `/clip.mp4","duration":0.75,"fps":24,"resolution":"1080p","client_request_id":"` + crid + `"}}`
	}
	id := e.create(body("ample"))
	if task := e.wait(id); task.Status != "completed" {
		t.Fatalf("task = %+v %+v", task, task.Error)
	}
	rec, err := e.m.db.Task(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reserved %s, charged %s", rec.Reserved, rec.Charged)
	if rec.Charged > rec.Reserved {
		t.Errorf("charged %s against a reservation of %s", rec.Charged, rec.Reserved)
	}

	small := (&assetE2E{e2e: e}).newKey("demo", 10000) // 0.01, what the task used to reserve
	status, b := postAs(t, e.m.URL(), small, "/v1/videos", body("small"))
	switch status {
	case 402:
	case 202:
		var task apiTask
		if err := json.Unmarshal(b, &task); err != nil {
			t.Fatal(err)
		}
		waitTerminal(t, e.m.URL(), []string{small}, task.ID)
	default:
		t.Fatalf("create with 0.005: %d %s", status, b)
	}
	if avail := availableOf(t, e.m.URL(), small); avail < 0 {
		t.Errorf("a key holding 0.01 ends at %s", avail)
	}
}

// availableOf reads a key's available balance.
func availableOf(t *testing.T, base, secret string) money.Micros {
	t.Helper()
	status, body := get(t, base+"/v1/billing/balance", secret)
	if status != 200 {
		t.Fatalf("balance: %d %s", status, body)
	}
	i := strings.Index(body, `"available":`) + len(`"available":`)
	j := strings.IndexAny(body[i:], ",}")
	m, err := money.Parse(body[i : i+j])
	if err != nil {
		t.Fatal(err)
	}
	return m
}
