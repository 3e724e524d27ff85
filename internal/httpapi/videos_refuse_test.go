package httpapi

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

// assertRefused checks a 400 on param with nothing written: no task, no money moved.
func assertRefused(t *testing.T, e *videoEnv, r response, k store.Key, credit money.Micros, param string) {
	t.Helper()
	if r.status != 400 {
		t.Fatalf("status %d, want 400: %s", r.status, r.body)
	}
	var env struct {
		Error struct {
			Type  string `json:"type"`
			Param string `json:"param"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil || env.Error.Type != "invalid_request_error" || env.Error.Param != param {
		t.Fatalf("envelope %s, want invalid_request_error on %q", r.body, param)
	}
	if _, err := e.store.TaskByRequestID(context.Background(), k.ID, "r"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a task was stored: %v", err)
	}
	if b := e.balance(k); b.Available != credit || b.Reserved != 0 {
		t.Errorf("money moved: %+v", b)
	}
}

// A declared enhancement duration never lowers the reservation below the measured source:
// a 60 s source declared as 0.001 s reserves for 60 s, and a key that cannot cover that is
// refused with 402 before anything is written.
func TestEnhancementReservesOnMeasuredSourceNotDeclared(t *testing.T) {
	t.Parallel()
	e := newVideoEnv(t, "acme")
	e.prober.seconds["https://media.example/long-60.mp4"] = 60
	body := `{"model":"acme-enhance-lite","metadata":{"video_url":"https://media.example/long-60.mp4","duration":0.001,"resolution":"1080p","client_request_id":"r"}}`

	// Lite 1080p rate × ceil(60.25) s × 4 (fps omitted).
	r := e.post(e.key, body)
	if r.status != 202 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	// Lite 1080p is 0.01 per second: 61 s × 4 × 0.01 = 2.44.
	if b := e.balance(e.keyRec); b.Reserved != 2_440_000 {
		t.Fatalf("reserved %s, want 2.44 (ceil(60 + 0.25) s × 4 × 0.01)", b.Reserved)
	}

	// A key with 0.05 cannot cover it: 402, no task, no money moved.
	poor, poorKey := e.newKey("acme", 50_000, false)
	r = e.post(poor, body)
	checkEnvelope(t, r, 402, "insufficient_balance", "insufficient_balance")
	if _, err := e.store.TaskByRequestID(context.Background(), poorKey.ID, "r"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("task stored on 402: %v", err)
	}
	if b := e.balance(poorKey); b.Available != 50_000 || b.Reserved != 0 {
		t.Errorf("402 moved money: %+v", b)
	}
}

// A source that cannot be measured is a 400 on metadata.video_url, nothing written.
func TestEnhancementRefusesUnmeasurableSource(t *testing.T) {
	t.Parallel()
	e := newVideoEnv(t, "acme")
	body := `{"model":"acme-enhance-lite","metadata":{"video_url":"https://media.example/not-there.mp4","duration":5,"resolution":"1080p","client_request_id":"r"}}`
	assertRefused(t, e, e.post(e.key, body), e.keyRec, startCredit, "metadata.video_url")
}

// Native edit mode measures its reference video: outside 4–30 s is a 400 on the item.
func TestNativeEditMeasuresReferenceVideo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		url    string
		accept bool
	}{
		{"2 s clip refused", "https://media.example/in-2.mp4", false},
		{"40 s clip refused", "https://media.example/in-40.mp4", false},
		{"unmeasurable refused", "https://media.example/picture.png", false},
		{"5 s clip accepted", "https://media.example/in-5.mp4", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newVideoEnv(t, "acme")
			e.prober.seconds["https://media.example/in-2.mp4"] = 2
			body := `{"model":"acme-video-2.5","prompt":"make @Video1 blue","metadata":{"omni_reference_task_type":"edit","client_request_id":"r","content":[
				{"type":"video_url","role":"reference_video","video_url":{"url":"` + tc.url + `"}}]}}`
			r := e.post(e.key, body)
			if tc.accept {
				if r.status != 202 {
					t.Fatalf("%d %s", r.status, r.body)
				}
				return
			}
			assertRefused(t, e, r, e.keyRec, startCredit, "metadata.content[0].video_url.url")
		})
	}
}

// Every reference video is measured on native, whatever the mode: something that is not a
// video is refused at submission.
func TestNativeReferenceVideoMustBeAVideo(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"extend", "reference"} {
		t.Run(mode, func(t *testing.T) {
			e := newVideoEnv(t, "acme")
			body := `{"model":"acme-video-2.5","prompt":"continue @Video1","metadata":{"omni_reference_task_type":"` + mode + `","client_request_id":"r","content":[
				{"type":"video_url","role":"reference_video","video_url":{"url":"https://media.example/picture.png"}}]}}`
			assertRefused(t, e, e.post(e.key, body), e.keyRec, startCredit, "metadata.content[0].video_url.url")
		})
	}
}

// Addresses refusable without any network are refused at submission on every URL field of
// the video routes, with the field's param, before anything is written or dialled.
func TestVideoURLsRefusableWithoutNetworkAreRefused(t *testing.T) {
	t.Parallel()
	bad := []string{
		"https://10.1.2.3/a.mp4",
		"https://169.254.169.254/latest/meta-data",
		"https://127.0.0.1/a.mp4",
		"https://[::1]/a.mp4",
		"https://localhost/a.mp4",
		"https://media.localhost/a.mp4",
		"https://user:pass@media.example/a.mp4",
		"https://2130706433/a.mp4",
		"https://media.example:8443/a.mp4",
		"ftp://media.example/a.mp4",
	}
	routes := []struct {
		name, param string
		body        func(u string) string
	}{
		{"native reference image", "metadata.content[0].image_url.url", func(u string) string {
			return `{"model":"acme-video-2.5","prompt":"x","metadata":{"client_request_id":"r","content":[{"type":"image_url","role":"reference_image","image_url":{"url":"` + u + `"}}]}}`
		}},
		{"native first frame", "metadata.content[0].image_url.url", func(u string) string {
			return `{"model":"acme-video-fast","prompt":"x","metadata":{"client_request_id":"r","content":[{"type":"image_url","role":"first_frame","image_url":{"url":"` + u + `"}}]}}`
		}},
		{"native reference video", "metadata.content[0].video_url.url", func(u string) string {
			return `{"model":"acme-video-2.5","prompt":"x","metadata":{"client_request_id":"r","content":[{"type":"video_url","role":"reference_video","video_url":{"url":"` + u + `"}}]}}`
		}},
		{"native reference audio", "metadata.content[1].audio_url.url", func(u string) string {
			return `{"model":"acme-video-2.5","prompt":"x","metadata":{"client_request_id":"r","content":[{"type":"image_url","role":"reference_image","image_url":{"url":"https://media.example/a.png"}},{"type":"audio_url","role":"reference_audio","audio_url":{"url":"` + u + `"}}]}}`
		}},
		{"production reference image", "metadata.content[0].image_url.url", func(u string) string {
			return `{"model":"acme-production-standard","prompt":"x","metadata":{"resolution":"1080p","client_request_id":"r","content":[{"type":"image_url","role":"reference_image","image_url":{"url":"` + u + `"}}]}}`
		}},
		{"enhancement source", "metadata.video_url", func(u string) string {
			return `{"model":"acme-enhance-lite","metadata":{"video_url":"` + u + `","duration":5,"resolution":"1080p","client_request_id":"r"}}`
		}},
	}
	for _, rt := range routes {
		for _, u := range bad {
			t.Run(rt.name+" "+u, func(t *testing.T) {
				e := newVideoEnv(t, "acme")
				e.prober.refuse = true // a measurement would be a dial: it must not happen
				r := e.post(e.key, rt.body(u))
				assertRefused(t, e, r, e.keyRec, startCredit, rt.param)
				if strings.Contains(string(r.body), "10.1.2.3") || strings.Contains(string(r.body), "169.254") {
					t.Errorf("the answer repeats the address: %s", r.body)
				}
			})
		}
	}
	// Plain http is refused for references but allowed for the enhancement source.
	e := newVideoEnv(t, "acme")
	r := e.post(e.key, routes[0].body("http://media.example/a.png"))
	assertRefused(t, e, r, e.keyRec, startCredit, routes[0].param)
}
