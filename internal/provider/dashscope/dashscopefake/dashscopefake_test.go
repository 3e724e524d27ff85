package dashscopefake

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The fake answers the requests of the published reference's own examples (the curl bodies of
// the Wan text-to-video and image-to-video references, the SDKs' task list query) as the
// reference documents, and refuses what the service refuses — independently of this
// repository's adapter, so the adapter's tests cannot pass on a fake bent to its mistakes.
func TestTheFakeAnswersTheReferencesOwnExamples(t *testing.T) {
	s := Start(Config{Key: "sk-ref", Clip: "/dev/null", Seconds: 5})
	defer s.Close()
	do := func(method, path, body string, hdr map[string]string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, s.Base()+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer sk-ref")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var out map[string]any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s %s: %d %s is not JSON", method, path, res.StatusCode, b)
		}
		return res.StatusCode, out
	}
	async := map[string]string{"X-DashScope-Async": "enable"}
	for name, body := range map[string]string{
		"text-to-video": `{"model":"wan2.2-t2v-plus","input":{"prompt":"A kitten running in the moonlight"},"parameters":{"size":"1920*1080","prompt_extend":true}}`,
		"image-to-video": `{"model":"wan2.2-i2v-plus","input":{"prompt":"A cat running on the grass","img_url":"https://cdn.example.com/cat.png"},` +
			`"parameters":{"resolution":"1080P","prompt_extend":true}}`,
		"the SDK's deprecated extend_prompt": `{"model":"wan2.2-t2v-plus","input":{"prompt":"p","extend_prompt":true},"parameters":{"size":"832*480","duration":5,"seed":12345,"watermark":false}}`,
	} {
		status, out := do("POST", createPath, body, async)
		o, _ := out["output"].(map[string]any)
		if status != 200 || o["task_status"] != "PENDING" || o["task_id"] == "" || out["request_id"] == "" {
			t.Errorf("%s: %d %v; want 200 with output.task_id, task_status PENDING and request_id", name, status, out)
		}
	}
	if v := s.Violations(); len(v) > 0 {
		t.Fatalf("the reference's examples broke the fake's format: %q", v)
	}
	// Video synthesis is asynchronous only: a create without the header is refused.
	if status, out := do("POST", createPath, `{"model":"wan2.2-t2v-plus","input":{"prompt":"p"},"parameters":{}}`, nil); status != 403 || out["code"] != "AccessDenied" {
		t.Errorf("a synchronous create: %d %v", status, out)
	}
	// A size outside the reference's table is InvalidParameter.
	if status, out := do("POST", createPath, `{"model":"wan2.2-t2v-plus","input":{"prompt":"p"},"parameters":{"size":"1000*1000"}}`, async); status != 400 || out["code"] != "InvalidParameter" {
		t.Errorf("an unlisted size: %d %v", status, out)
	}
	// A task read: PENDING, then RUNNING, then SUCCEEDED with video_url and usage.
	var last map[string]any
	for range 3 {
		_, last = do("GET", tasksPath+"/ds-00000001", "", nil)
	}
	o, _ := last["output"].(map[string]any)
	u, _ := last["usage"].(map[string]any)
	if o["task_status"] != "SUCCEEDED" || !strings.Contains(o["video_url"].(string), "Expires=") || u["video_duration"] != 5.0 || u["video_count"] != 1.0 {
		t.Errorf("a finished task: %v", last)
	}
	if _, out := do("GET", tasksPath+"/00000000-0000-0000-0000-000000000000", "", nil); out["output"].(map[string]any)["task_status"] != "UNKNOWN" {
		t.Errorf("an unknown task: %v", out)
	}
	// The SDKs' list query: YYYYMMDDhhmmss, page_no, page_size.
	from := time.Now().Add(-time.Hour).In(zone).Format("20060102150405")
	to := time.Now().Add(time.Hour).In(zone).Format("20060102150405")
	_, out := do("GET", tasksPath+"?model_name=wan2.2-t2v-plus&start_time="+from+"&end_time="+to+"&page_no=1&page_size=10", "", nil)
	data, _ := out["data"].([]any)
	if out["total"] != 2.0 || len(data) != 2 || data[0].(map[string]any)["gmt_create"] == nil {
		t.Errorf("the task list: %v", out)
	}
	// The key is checked on every call: InvalidApiKey, 401.
	req, _ := http.NewRequest("GET", s.Base()+tasksPath+"/x", nil)
	req.Header.Set("Authorization", "Bearer sk-other")
	res, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 {
		t.Errorf("a wrong key: %d", res.StatusCode)
	}
}
