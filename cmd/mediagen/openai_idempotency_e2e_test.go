//lint:file-ignore SA1019 the SDK marks its video methods deprecated (OpenAI shuts its own Sora API down); they are exactly what clients of this service call.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"mediagen/internal/store/postgres/pgtest"
)

// onBothStores runs an end-to-end test against a started service on SQLite and on
// PostgreSQL (a fresh schema of the test server; skipped when it is unreachable, except
// under CI=true).
func onBothStores(t *testing.T, run func(t *testing.T, e *e2e)) {
	t.Helper()
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			var args []string
			if driver == "postgres" {
				args = []string{"--db", pgtest.URL(t)}
			}
			run(t, startE2E(t, args...))
		})
	}
}

// sdkError unwraps the SDK's API error.
func sdkError(t *testing.T, err error) *openai.Error {
	t.Helper()
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("got %v, want an API error", err)
	}
	return apiErr
}

// The Idempotency-Key header on a create in OpenAI's shape is the contract's
// client_request_id: the SDK sending the same request twice with one key gets one task and
// one reservation, and the second upload of the same file is not kept; the same key with
// another file or other fields is a 409 naming the header, with nothing written; a key the
// contract would refuse as a client_request_id is a 400 on the header. A request in the
// contract's shape ignores the header, as before.
func TestOpenAISDKIdempotencyKeyReplaysOneTask(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, e *e2e) {
		client := sdkClient(e)
		ctx := context.Background()
		frame := pngOf(t, 128, 72)
		params := func(img []byte, seconds openai.VideoSeconds) openai.VideoNewParams {
			return openai.VideoNewParams{Model: "demo-video-fast", Prompt: "the frame comes alive", Seconds: seconds,
				Size:           openai.VideoSize1280x720,
				InputReference: openai.VideoNewParamsInputReferenceUnion{OfFile: openai.File(bytes.NewReader(img), "frame.png", "image/png")}}
		}
		key := option.WithHeader("Idempotency-Key", "sdk-retry-1")

		first, err := client.Videos.New(ctx, params(frame, openai.VideoSeconds4), key)
		if err != nil {
			t.Fatal(err)
		}
		available, used := e.balance()
		again, err := client.Videos.New(ctx, params(frame, openai.VideoSeconds4), key)
		if err != nil {
			t.Fatal(err)
		}
		if again.ID != first.ID {
			t.Fatalf("replay made task %s, want %s", again.ID, first.ID)
		}
		if a, u := e.balance(); a != available || u != used {
			t.Errorf("replay moved the balance: %s/%s → %s/%s", available, used, a, u)
		}
		if n := len(e.uploads()); n != 1 {
			t.Errorf("%d stored uploads after a replay, want 1", n)
		}
		if task := e.wait(first.ID); task.Status != "completed" || task.Metadata.ClientRequestID != "sdk-retry-1" {
			t.Fatalf("task: %+v", task)
		}
		available, used = e.balance() // settled

		conflicts := []struct {
			name string
			req  openai.VideoNewParams
		}{
			{"another file", params(pngOf(t, 64, 36), openai.VideoSeconds4)},
			{"other seconds", params(frame, openai.VideoSeconds8)},
			{"no file", openai.VideoNewParams{Model: "demo-video-fast", Prompt: "the frame comes alive", Seconds: openai.VideoSeconds4, Size: openai.VideoSize1280x720}},
		}
		for _, c := range conflicts {
			_, err := client.Videos.New(ctx, c.req, key)
			apiErr := sdkError(t, err)
			if apiErr.StatusCode != http.StatusConflict || apiErr.Param != "Idempotency-Key" || apiErr.Code != "idempotency_conflict" ||
				!strings.Contains(apiErr.Message, "Idempotency-Key header") {
				t.Errorf("%s: %d %s %s %q, want 409 idempotency_conflict on Idempotency-Key", c.name, apiErr.StatusCode, apiErr.Code, apiErr.Param, apiErr.Message)
			}
		}
		if a, u := e.balance(); a != available || u != used {
			t.Errorf("conflicts moved the balance: %s/%s → %s/%s", available, used, a, u)
		}
		if n := len(e.uploads()); n != 1 {
			t.Errorf("%d stored uploads after conflicts, want 1", n)
		}

		// Without a file (JSON-free multipart): the replay is found by the insert itself.
		plain := openai.VideoNewParams{Model: "demo-video-fast", Prompt: "a kite", Seconds: openai.VideoSeconds4, Size: openai.VideoSize720x1280}
		k2 := option.WithHeader("Idempotency-Key", "sdk-retry-2")
		a1, err := client.Videos.New(ctx, plain, k2)
		if err != nil {
			t.Fatal(err)
		}
		available, used = e.balance()
		a2, err := client.Videos.New(ctx, plain, k2)
		if err != nil || a2.ID != a1.ID {
			t.Fatalf("replay without a file: %v %v, want %s", a2, err, a1.ID)
		}
		if a, u := e.balance(); a != available || u != used {
			t.Errorf("replay moved the balance: %s/%s → %s/%s", available, used, a, u)
		}

		for _, bad := range []string{strings.Repeat("k", 65), "   ", "caf\u00e9"} {
			_, err := client.Videos.New(ctx, plain, option.WithHeader("Idempotency-Key", bad))
			if apiErr := sdkError(t, err); apiErr.StatusCode != 400 || apiErr.Param != "Idempotency-Key" || !strings.Contains(apiErr.Message, "Idempotency-Key header") {
				t.Errorf("key %q: %d %s %q, want 400 on Idempotency-Key", bad, apiErr.StatusCode, apiErr.Param, apiErr.Message)
			}
		}

		// The contract's shape ignores the header: two creates, two tasks.
		contract := `{"model":"demo-video-fast","prompt":"a lantern","metadata":{"duration":4}}`
		ids := map[string]bool{}
		for range 2 {
			req, _ := http.NewRequest("POST", e.baseURL()+"/v1/videos", strings.NewReader(contract))
			req.Header.Set("Authorization", "Bearer "+e.key)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "contract-ignores-it")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var task apiTask
			err = json.NewDecoder(res.Body).Decode(&task)
			res.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != 202 || task.Metadata.ClientRequestID != "" {
				t.Fatalf("contract create with the header: %d %+v", res.StatusCode, task)
			}
			ids[task.ID] = true
		}
		if len(ids) != 2 {
			t.Errorf("contract creates with one Idempotency-Key made %d tasks, want 2", len(ids))
		}
	})
}
