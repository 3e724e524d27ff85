package httpapi

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

// A JSON create in OpenAI's shape is mapped onto the contract's native request and then
// priced and reserved exactly as that request is.
func TestOpenAIJSONCreateReservesAsTheContractRequest(t *testing.T) {
	t.Parallel()
	const contractBody = `{"model":"acme-video-fast","prompt":"a cat","metadata":{"duration":5,"resolution":"720p","ratio":"16:9"}}`
	for _, body := range []string{
		contractBody,
		`{"model":"acme-video-fast","prompt":"a cat","seconds":"5","size":"1280x720"}`,
		`{"model":"acme-video-fast","prompt":"a cat","seconds":5,"size":"1280x720"}`,
	} {
		e := newVideoEnv(t, "acme")
		r := e.post(e.key, body)
		if r.status != 202 {
			t.Fatalf("%s: %d %s", body, r.status, r.body)
		}
		tb := decodeTask(t, r)
		if tb.Object != "video" || tb.Model != "acme-video-fast" || tb.Status != "queued" {
			t.Errorf("%s: answer %s", body, r.body)
		}
		if b := e.balance(e.keyRec); b.Reserved != money.Micros(136_080) {
			t.Errorf("%s: reserved %s, want 0.136080", body, b.Reserved)
		}
	}
}

// OpenAI-shaped JSON that cannot be mapped is a 400 naming the OpenAI field, and a body that
// is not unambiguously OpenAI's (it has metadata, or none of seconds, size and
// input_reference) is the contract's and refused by the contract's rules as before.
func TestOpenAIJSONRefusalsWriteNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, param string
	}{
		{"size with no mapping", `{"model":"acme-video-fast","prompt":"x","size":"1792x1024"}`, "size"},
		{"size at a resolution the alias lacks", `{"model":"acme-video-fast","prompt":"x","size":"1920x1080"}`, "size"},
		{"seconds not digits", `{"model":"acme-video-fast","prompt":"x","seconds":"4s"}`, "seconds"},
		{"seconds outside the family", `{"model":"acme-video-fast","prompt":"x","seconds":"2"}`, "seconds"},
		{"seconds a boolean", `{"model":"acme-video-fast","prompt":"x","seconds":true}`, "seconds"},
		{"unknown field beside seconds", `{"model":"acme-video-fast","prompt":"x","seconds":"4","user_id":"u"}`, "user_id"},
		{"input_reference file_id", `{"model":"acme-video-fast","prompt":"x","input_reference":{"file_id":"file_123"}}`, "input_reference"},
		{"input_reference a string", `{"model":"acme-video-fast","prompt":"x","input_reference":"https://media.example/a.png"}`, "input_reference"},
		{"input_reference empty object", `{"model":"acme-video-fast","prompt":"x","input_reference":{}}`, "input_reference"},
		{"input_reference unknown field", `{"model":"acme-video-fast","prompt":"x","input_reference":{"url":"https://media.example/a.png"}}`, "input_reference"},
		{"input_reference image_url not a URL the contract takes", `{"model":"acme-video-fast","prompt":"x","input_reference":{"image_url":"ftp://media.example/a.png"}}`, "input_reference"},
		{"production alias", `{"model":"acme-production-lite","prompt":"x","seconds":"4"}`, "model"},
		{"contract body with size beside metadata", `{"model":"acme-video-fast","prompt":"x","size":"1280x720","metadata":{}}`, "size"},
		{"contract body with an unknown field", `{"model":"acme-video-fast","prompt":"x","quality":"high"}`, "quality"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newVideoEnv(t, "acme")
			r := e.post(e.key, tt.body)
			var env struct {
				Error struct {
					Type  string `json:"type"`
					Param string `json:"param"`
				} `json:"error"`
			}
			if r.status != 400 || json.Unmarshal(r.body, &env) != nil || env.Error.Type != "invalid_request_error" || env.Error.Param != tt.param {
				t.Fatalf("%d %s, want 400 on %q", r.status, r.body, tt.param)
			}
			if b := e.balance(e.keyRec); b.Available != startCredit || b.Reserved != 0 {
				t.Errorf("money moved: %+v", b)
			}
			tasks, err := e.store.SearchTasks(context.Background(), store.TaskFilter{KeyID: e.keyRec.ID, Page: store.Page{Limit: 10}})
			if err != nil {
				t.Fatal(err)
			}
			if len(tasks) != 0 {
				t.Errorf("tasks were written: %v", tasks)
			}
		})
	}
}
