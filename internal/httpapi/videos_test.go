package httpapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"

	"mediagen/internal/catalog"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/money"
	"mediagen/internal/store"
	"mediagen/internal/video"
)

func testCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Load("testdata/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fakeProber measures every URL as the seconds in its table; unknown URLs fail. URLs are
// checked by the real fetch policy's static rules (no I/O). With refuse set, any measurement
// fails the test: the request should have been refused before it.
type fakeProber struct {
	t       testing.TB
	seconds map[string]float64
	refuse  bool
}

func (f *fakeProber) MeasureVideo(_ context.Context, url string, _ bool) (float64, error) {
	if f.refuse {
		f.t.Errorf("measured %s: the URL should have been refused without a fetch", url)
	}
	if s, ok := f.seconds[url]; ok {
		return s, nil
	}
	return 0, errors.New("unreachable")
}

func (f *fakeProber) Check(raw string, allowHTTP bool) error {
	_, err := staticPolicy.Check(raw, allowHTTP)
	return err
}

// staticPolicy is the default fetch policy, used only for its static checks.
var staticPolicy = safefetch.New(safefetch.Options{})

type videoEnv struct {
	*testEnv
	key    string
	keyRec store.Key
	prober *fakeProber
}

const startCredit = money.Micros(50 * money.Scale)

func newVideoEnv(t testing.TB, tenant string) *videoEnv {
	t.Helper()
	p := &fakeProber{t: t, seconds: map[string]float64{
		"https://media.example/in-5.mp4":     5.0,
		"https://media.example/in-2.125.mp4": 2.125,
		"https://media.example/in-3.mp4":     3.0,
		"https://media.example/in-40.mp4":    40.0,
		"https://media.example/a.mp4":        5.0,
		"http://media.example/a.mp4":         5.5,
	}}
	e := newTestEnvWith(t, testCatalog(t), &video.Service{Prober: p}, DefaultMaxBodyBytes)
	secret, k := e.newKey(tenant, startCredit, false)
	return &videoEnv{testEnv: e, key: secret, keyRec: k, prober: p}
}

func (e *videoEnv) post(key, body string) response {
	e.t.Helper()
	return e.do("POST", "/v1/videos", map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}, body)
}

func (e *videoEnv) get(key, id string) response {
	e.t.Helper()
	return e.do("GET", "/v1/videos/"+id, map[string]string{"Authorization": "Bearer " + key}, "")
}

func (e *videoEnv) balance(k store.Key) store.Balance {
	e.t.Helper()
	b, err := e.store.Balance(context.Background(), k.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

type taskBody struct {
	ID       string `json:"id"`
	TaskID   string `json:"task_id"`
	Object   string `json:"object"`
	Model    string `json:"model"`
	Status   string `json:"status"`
	Progress *int   `json:"progress"`
	Created  int64  `json:"created_at"`
	Metadata *struct {
		ClientRequestID string `json:"client_request_id"`
	} `json:"metadata"`
}

func decodeTask(t *testing.T, r response) taskBody {
	t.Helper()
	var tb taskBody
	if err := json.Unmarshal(r.body, &tb, json.RejectUnknownMembers(true)); err != nil {
		t.Fatalf("task body: %v: %s", err, r.body)
	}
	if hasJSONNull(r.body) {
		t.Errorf("task body contains null: %s", r.body)
	}
	return tb
}

func TestCreateVideoRejectsWithoutTaskOrCharge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, tenant, body string
		status             int
		typ, param         string
	}{
		{"unknown alias", "acme", `{"model":"nope","prompt":"x","metadata":{"client_request_id":"r"}}`, 400, "invalid_request_error", "model"},
		{"upstream model name", "acme", `{"model":"sandbox-video-2.5","prompt":"x","metadata":{"client_request_id":"r"}}`, 400, "invalid_request_error", "model"},
		{"another tenant's alias", "acme", `{"model":"lim-video","prompt":"x","metadata":{"client_request_id":"r"}}`, 400, "invalid_request_error", "model"},
		{"speech alias on videos", "acme", `{"model":"acme-speech","prompt":"x","metadata":{"client_request_id":"r"}}`, 400, "invalid_request_error", "model"},
		{"model wrong case key", "acme", `{"Model":"acme-video-fast","prompt":"x"}`, 400, "invalid_request_error", "model"},
		{"duplicate key", "acme", `{"model":"acme-video-fast","prompt":"x","prompt":"y","metadata":{"client_request_id":"r"}}`, 400, "invalid_request_error", "prompt"},
		{"trailing data", "acme", `{"model":"acme-video-fast","prompt":"x","metadata":{"client_request_id":"r"}} {}`, 400, "invalid_request_error", ""},
		{"2.5 duration 31", "acme", `{"model":"acme-video-2.5","prompt":"x","metadata":{"duration":31,"client_request_id":"r"}}`, 400, "invalid_request_error", "metadata.duration"},
		{"seed on 2.5", "acme", `{"model":"acme-video-2.5","prompt":"x","seed":1,"metadata":{"client_request_id":"r"}}`, 400, "invalid_request_error", "seed"},
		{"4k on 2.5 is invalid", "acme", `{"model":"acme-video-2.5","prompt":"x","metadata":{"resolution":"4k","client_request_id":"r"}}`, 400, "invalid_request_error", "metadata.resolution"},
		{"4k without package is permission", "limited", `{"model":"lim-video","prompt":"x","metadata":{"resolution":"4k","client_request_id":"r"}}`, 403, "permission_error", "metadata.resolution"},
		{"8k without package is permission", "limited", `{"model":"lim-enhance","metadata":{"video_url":"https://media.example/a.mp4","duration":5,"resolution":"8k","client_request_id":"r"}}`, 403, "permission_error", "metadata.resolution"},
		{"production without access", "noprod", `{"model":"np-prod","prompt":"x","metadata":{"resolution":"1080p","client_request_id":"r"}}`, 403, "permission_error", "model"},
		{"production resolution not enabled", "limited", `{"model":"lim-prod","prompt":"x","metadata":{"resolution":"2k","client_request_id":"r"}}`, 403, "permission_error", "metadata.resolution"},
		{"last frame without capability", "limited", `{"model":"lim-prod","prompt":"x","metadata":{"resolution":"1080p","return_last_frame":true,"client_request_id":"r"}}`, 403, "permission_error", "metadata.return_last_frame"},
		{"production top-level mode", "acme", `{"model":"acme-production-lite","prompt":"x","mode":"pro","metadata":{"resolution":"1080p","client_request_id":"r"}}`, 400, "invalid_request_error", "mode"},
		{"production scene on lite", "acme", `{"model":"acme-production-lite","prompt":"x","metadata":{"resolution":"1080p","scene":"ugc","client_request_id":"r"}}`, 400, "invalid_request_error", "metadata.scene"},
		{"production unreachable input video", "acme", `{"model":"acme-production-pro","prompt":"x","metadata":{"resolution":"1080p","client_request_id":"r","content":[{"type":"video_url","role":"reference_video","video_url":{"url":"https://media.example/gone.mp4"}}]}}`, 400, "invalid_request_error", "metadata.content[0].video_url.url"},
		{"production edit video too long", "acme", `{"model":"acme-production-pro","prompt":"x","metadata":{"resolution":"1080p","omni_reference_task_type":"edit","client_request_id":"r","content":[{"type":"video_url","role":"reference_video","video_url":{"url":"https://media.example/in-40.mp4"}}]}}`, 400, "invalid_request_error", "metadata.content[0].video_url.url"},
		{"asset reference not found", "acme", `{"model":"acme-video-2.5","prompt":"x","metadata":{"client_request_id":"r","content":[{"type":"image_url","role":"reference_image","image_url":{"url":"asset://img-1"}}]}}`, 400, "invalid_request_error", "metadata.content[0].image_url.url"},
		{"enhancement asset source", "acme", `{"model":"acme-enhance","metadata":{"video_url":"asset://v1","duration":5,"resolution":"1080p","client_request_id":"r"}}`, 400, "invalid_request_error", "metadata.video_url"},
		{"enhancement lte_720p", "acme", `{"model":"acme-enhance-lite","metadata":{"video_url":"https://media.example/a.mp4","duration":5,"resolution":"lte_720p","client_request_id":"r"}}`, 400, "invalid_request_error", "metadata.resolution"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newVideoEnv(t, tt.tenant)
			r := e.post(e.key, tt.body)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			var env struct {
				Error struct {
					Type  string `json:"type"`
					Param string `json:"param"`
				} `json:"error"`
			}
			if err := json.Unmarshal(r.body, &env); err != nil || env.Error.Type != tt.typ || env.Error.Param != tt.param {
				t.Fatalf("envelope %s, want type %s param %q", r.body, tt.typ, tt.param)
			}
			if tt.status == 403 && !strings.Contains(string(r.body), "operator") {
				t.Errorf("permission message does not point to the operator: %s", r.body)
			}
			if _, err := e.store.TaskByRequestID(context.Background(), e.keyRec.ID, "r"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a task was stored: %v", err)
			}
			if b := e.balance(e.keyRec); b.Available != startCredit || b.Reserved != 0 {
				t.Errorf("money moved: %+v", b)
			}
			if err := e.store.CheckLedger(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestCreateVideoReservesExactAmounts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		reserve    money.Micros
	}{
		// Reservations bound the charge (docs/billing.md): the requested length plus 0.25 s of
		// slack; for -1 the longest the family makes; for adaptive the widest frame (21:9).
		// 1280x720 × 24 fps × 5.25 s / 1024 = 113400 tokens at 1.20 per million.
		{"native fast 720p 16:9 5 s", `{"model":"acme-video-fast","prompt":"a cat","metadata":{"duration":5,"resolution":"720p","ratio":"16:9"}}`, 136_080},
		// Adaptive → 2520x1080 × 24 × 10.25 / 1024 = 653822 tokens at 2.50 per million.
		{"native standard 1080p adaptive 10 s", `{"model":"acme-video-standard","prompt":"a cat","metadata":{"duration":10,"resolution":"1080p"}}`, 1_634_555},
		// Lite 1080p, no video input, duration -1 → 30 s + slack = 31 chargeable s at 0.05.
		{"production lite text", `{"model":"acme-production-lite","prompt":"a cat","metadata":{"resolution":"1080p"}}`, 1_550_000},
		// Pro 4k with inputs 2.125 + 3 (measured) + ceil(6.25) s at the video-input rate 0.54.
		{"production pro measured inputs", `{"model":"acme-production-pro","prompt":"edit @Video1 with @Video2","metadata":{"resolution":"4k","duration":6,"content":[
			{"type":"video_url","role":"reference_video","video_url":{"url":"https://media.example/in-2.125.mp4"}},
			{"type":"video_url","role":"reference_video","video_url":{"url":"https://media.example/in-3.mp4"}}]}}`, 6_547_500},
		// An image reference is not a video input: the no-video-input rate 0.10 applies, 5 s.
		{"production standard image ref", `{"model":"acme-production-standard","prompt":"x","metadata":{"resolution":"1080p","duration":4,"content":[
			{"type":"image_url","role":"reference_image","image_url":{"url":"https://media.example/a.png"}}]}}`, 500_000},
		// Professional 4k, 5.084 s declared, 5 s measured → ceil(5.334) = 6 s × 0.08 × 4 (fps omitted).
		{"enhancement professional fps omitted", `{"model":"acme-enhance","prompt":null,"metadata":{"video_url":"https://media.example/a.mp4","duration":5.084,"tool_version":"professional","resolution":"4k"}}`, 1_920_000},
		// Lite, resolution_limit 720, 5.5 s → up-to-720p band 0.005 × 6 s × 2 (fps 60).
		{"enhancement lite limit 720 fps 60", `{"model":"acme-enhance-lite","metadata":{"video_url":"http://media.example/a.mp4","duration":5.5,"resolution_limit":720,"fps":60}}`, 60_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newVideoEnv(t, "acme")
			r := e.post(e.key, tt.body)
			if r.status != 202 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			tb := decodeTask(t, r)
			if tb.ID == "" || tb.TaskID != tb.ID || tb.Object != "video" || tb.Status != "queued" || tb.Progress == nil || *tb.Progress != 0 || !strings.HasPrefix(tb.Model, "acme-") {
				t.Errorf("create answer %s", r.body)
			}
			b := e.balance(e.keyRec)
			if b.Reserved != tt.reserve || b.Available != startCredit-tt.reserve {
				t.Fatalf("reserved %s (available %s), want %s", b.Reserved, b.Available, tt.reserve)
			}
			task, err := e.store.Task(context.Background(), tb.ID)
			if err != nil || task.Reserved != tt.reserve {
				t.Fatalf("stored task reserve %d, %v", task.Reserved, err)
			}
			if err := e.store.CheckLedger(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestCreateVideoInsufficientBalanceAndUnlimited(t *testing.T) {
	t.Parallel()
	e := newVideoEnv(t, "acme")
	poor, poorKey := e.newKey("acme", 100_000, false) // 0.10 < 0.1296
	body := `{"model":"acme-video-fast","prompt":"a cat","metadata":{"duration":5,"resolution":"720p","client_request_id":"r"}}`
	r := e.post(poor, body)
	checkEnvelope(t, r, 402, "insufficient_balance", "insufficient_balance")
	if _, err := e.store.TaskByRequestID(context.Background(), poorKey.ID, "r"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("task stored on 402: %v", err)
	}
	if b := e.balance(poorKey); b.Available != 100_000 || b.Reserved != 0 {
		t.Errorf("402 moved money: %+v", b)
	}
	rich, richKey := e.newKey("acme", 0, true)
	if r := e.post(rich, body); r.status != 202 {
		t.Fatalf("unlimited key: %d %s", r.status, r.body)
	}
	if b := e.balance(richKey); b.Reserved != 178_606 || b.Available != -178_606 || !b.Unlimited {
		t.Errorf("unlimited reservation: %+v", b)
	}
}

func TestCreateVideoIdempotency(t *testing.T) {
	t.Parallel()
	e := newVideoEnv(t, "acme")
	body := `{"model":"acme-video-fast","prompt":"a cat","metadata":{"duration":5,"client_request_id":"order-42"}}`
	first := decodeTask(t, e.post(e.key, body))
	// Same payload with other key order and whitespace: the same task, no new reservation.
	again := e.post(e.key, "{ \"metadata\" : {\"client_request_id\":\"order-42\", \"duration\":5},\n \"prompt\":\"a cat\", \"model\":\"acme-video-fast\" }")
	if again.status != 202 || decodeTask(t, again).ID != first.ID {
		t.Fatalf("replay: %d %s", again.status, again.body)
	}
	if b := e.balance(e.keyRec); b.Reserved != 178_606 {
		t.Fatalf("replay reserved again: %+v", b)
	}
	// Same id, different payload.
	r := e.post(e.key, `{"model":"acme-video-fast","prompt":"a dog","metadata":{"duration":5,"client_request_id":"order-42"}}`)
	checkEnvelope(t, r, 409, "idempotency_error", "idempotency_conflict")
	// Another key may use the same client_request_id for its own task.
	other, _ := e.newKey("acme", startCredit, false)
	if r := e.post(other, body); r.status != 202 || decodeTask(t, r).ID == first.ID {
		t.Fatalf("other key: %d %s", r.status, r.body)
	}
}

func TestConcurrentIdenticalRequestsMakeOneTask(t *testing.T) {
	t.Parallel()
	e := newVideoEnv(t, "acme")
	body := `{"model":"acme-production-pro","prompt":"x","metadata":{"resolution":"1080p","duration":5,"client_request_id":"burst","content":[
		{"type":"video_url","role":"reference_video","video_url":{"url":"https://media.example/in-5.mp4"}}]}}`
	// As many at once as the key's concurrent_requests limit (32) lets in: more could
	// rightly be refused with 429 on a busy machine, where all of them overlap.
	const n = 32
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := e.post(e.key, body)
			if r.status != 202 {
				t.Errorf("request %d: %d %s", i, r.status, r.body)
				return
			}
			var tb struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(r.body, &tb)
			ids[i] = tb.ID
		}(i)
	}
	wg.Wait()
	for i := range ids {
		if ids[i] != ids[0] || ids[0] == "" {
			t.Fatalf("request %d got task %q, request 0 got %q", i, ids[i], ids[0])
		}
	}
	// One reservation: (5 s measured + ceil(5.25) s) × 0.24 = 2.64.
	if b := e.balance(e.keyRec); b.Reserved != 2_640_000 {
		t.Fatalf("reserved %s, want exactly one reservation of 2.64", b.Reserved)
	}
	if err := e.store.CheckLedger(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestGetVideoOwnerOnlyAndNeverWrites(t *testing.T) {
	t.Parallel()
	e := newVideoEnv(t, "acme")
	created := decodeTask(t, e.post(e.key, `{"model":"acme-video-2.5","prompt":"a cat","metadata":{"client_request_id":"mine"}}`))
	before := e.balance(e.keyRec)
	for i := 0; i < 3; i++ {
		r := e.get(e.key, created.ID)
		if r.status != 200 {
			_, terr := e.store.Task(context.Background(), created.ID)
			t.Fatalf("owner GET %s: %d %s (%v)", created.ID, r.status, r.body, terr)
		}
		got := decodeTask(t, r)
		if got.ID != created.ID || got.Model != "acme-video-2.5" || got.Status != "queued" || got.Metadata == nil || got.Metadata.ClientRequestID != "mine" {
			t.Errorf("GET body %s", r.body)
		}
	}
	if after := e.balance(e.keyRec); after != before {
		t.Errorf("GET moved money: %+v → %+v", before, after)
	}
	sibling, _ := e.newKey("acme", 0, false)
	checkEnvelope(t, e.get(sibling, created.ID), 404, "not_found_error", "not_found")
	checkEnvelope(t, e.get(e.key, "video_doesnotexist0000"), 404, "not_found_error", "not_found")
}

func TestVideoRoutesRequireAuthAndJSON(t *testing.T) {
	t.Parallel()
	e := newVideoEnv(t, "acme")
	checkEnvelope(t, e.do("POST", "/v1/videos", map[string]string{"Content-Type": "application/json"}, `{}`), 401, "authentication_error", "missing_api_key")
	checkEnvelope(t, e.do("POST", "/v1/videos", map[string]string{"Authorization": "Bearer " + e.key, "Content-Type": "text/plain"}, `{}`), 415, "invalid_request_error", "unsupported_media_type")
	big := fmt.Sprintf(`{"model":"acme-video-fast","prompt":"%s"}`, strings.Repeat("a", DefaultMaxBodyBytes))
	checkEnvelope(t, e.post(e.key, big), 413, "invalid_request_error", "request_too_large")
	checkEnvelope(t, e.do("PUT", "/v1/videos/abc", map[string]string{"Authorization": "Bearer " + e.key}, ""), 405, "invalid_request_error", "method_not_allowed")
}
