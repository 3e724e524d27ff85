package main

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	opadmin "mediagen/internal/admin"
	"mediagen/internal/catalog"
)

// TestEndToEndSupportSeesWhatTheRealPipelineRecorded: tasks run by the real service (sandbox
// engine) are listed by GET /v1/videos, and the admin API's view of each shows the history the
// pipeline wrote — the steps, the sandbox's job id, the settlement — and, for a failed one, the
// internal reason; a search by that job id finds the task.
func TestEndToEndSupportSeesWhatTheRealPipelineRecorded(t *testing.T) {
	t.Parallel()
	e := startE2E(t, "--admin-listen", "127.0.0.1:0")
	svc := opadmin.New(opadmin.Config{Store: e.m.db, Catalog: func() *catalog.Catalog { return e.m.catalogs.Current() }})
	tok, err := svc.CreateToken(context.Background(), opadmin.CLIActor("t"), opadmin.TokenInput{Name: "support", Role: "viewer"})
	if err != nil {
		t.Fatal(err)
	}
	done := e.create(`{"model":"demo-video-fast","prompt":"a red kite over the sea","metadata":{"duration":4,"resolution":"480p"}}`)
	failed := e.create(`{"model":"demo-video-fast","prompt":"boom [sandbox:fail]","metadata":{"duration":4,"resolution":"480p"}}`)
	if got := e.wait(done); got.Status != "completed" {
		t.Fatalf("task %s: %+v", done, got)
	}
	if got := e.wait(failed); got.Status != "failed" {
		t.Fatalf("task %s: %+v", failed, got)
	}

	status, body := e.call("GET", "/v1/videos?limit=10", "")
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if status != 200 || json.Unmarshal(body, &list) != nil {
		t.Fatalf("GET /v1/videos: %d %s", status, body)
	}
	var ids []string
	for _, d := range list.Data {
		ids = append(ids, d.ID)
	}
	if !slices.Contains(ids, done) || !slices.Contains(ids, failed) {
		t.Errorf("GET /v1/videos lists %v, want both tasks", ids)
	}

	view := func(id string) opadmin.TaskDetail {
		t.Helper()
		req, _ := http.NewRequest("GET", e.m.AdminURL()+"/admin/v1/tasks/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+tok.Secret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var d opadmin.TaskDetail
		if res.StatusCode != 200 || json.UnmarshalRead(res.Body, &d) != nil {
			t.Fatalf("admin view of %s: %d", id, res.StatusCode)
		}
		return d
	}
	d := view(done)
	if d.Status != "completed" || d.Upstream.Account == "" || d.Upstream.Job == "" || d.Money.Reservation == nil ||
		d.Money.Settlement == nil || d.Money.Settlement.Kind != "settle" || d.Money.Settlement.Amount != d.Money.Charged {
		t.Fatalf("completed task view: %+v", d)
	}
	var steps []string
	sawJob := false
	for i, ev := range d.Events {
		steps = append(steps, ev.From+">"+ev.To+":"+ev.Step)
		sawJob = sawJob || ev.UpstreamJob == d.Upstream.Job
		if i > 0 && ev.At.Before(d.Events[i-1].At) {
			t.Errorf("events out of time order: %+v", d.Events)
		}
	}
	if len(d.Events) < 3 || d.Events[0].To != "queued" || d.Events[len(d.Events)-1].To != "completed" || !sawJob {
		t.Errorf("history of the completed task: %v (job %s)", steps, d.Upstream.Job)
	}
	f := view(failed)
	if f.Status != "failed" || f.Error == nil || f.InternalError == "" || f.Money.Settlement == nil || f.Money.Settlement.Kind != "release" {
		t.Errorf("failed task view: %+v", f)
	}
	if f.InternalError == f.Error.Message || strings.Contains(f.Error.Message, "sandbox") {
		t.Errorf("the internal error %q should say more than the public one %q, which names no engine", f.InternalError, f.Error.Message)
	}
	t.Logf("completed: %v; failed: %q", steps, f.InternalError)

	req, _ := http.NewRequest("GET", e.m.AdminURL()+"/admin/v1/tasks?upstream_job="+d.Upstream.Job, nil)
	req.Header.Set("Authorization", "Bearer "+tok.Secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var found opadmin.List[opadmin.TaskSummary]
	if res.StatusCode != 200 || json.UnmarshalRead(res.Body, &found) != nil || len(found.Data) != 1 || found.Data[0].ID != done {
		t.Errorf("search by upstream job %s: %d %+v", d.Upstream.Job, res.StatusCode, found)
	}
}
