package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"mediagen/bench/internal/democat"
	"mediagen/internal/catalog"
)

func TestTemplates(t *testing.T) {
	var create *target
	for _, tg := range targets() {
		if tg.method == http.MethodPost && tg.keys == 0 {
			create = tg
		}
	}
	r, err := newRequester(create, "http://127.0.0.1:1", []string{"mg_secret"}, "demo-video-fast", "run1-3", nil)
	if err != nil {
		t.Fatal(err)
	}
	req, err := r.newRequest(7)
	if err != nil {
		t.Fatal(err)
	}
	if req.Method != http.MethodPost || req.URL.String() != "http://127.0.0.1:1/v1/videos" ||
		req.Header.Get("Authorization") != "Bearer mg_secret" || req.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request %s %s %v", req.Method, req.URL, req.Header)
	}
	body, _ := io.ReadAll(req.Body)
	var v struct {
		Model    string `json:"model"`
		Prompt   string `json:"prompt"`
		Metadata struct {
			Duration        int    `json:"duration"`
			Resolution      string `json:"resolution"`
			ClientRequestID string `json:"client_request_id"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if v.Model != "demo-video-fast" || v.Metadata.ClientRequestID != "bench-run1-3-7" || v.Metadata.Duration != 5 ||
		!strings.HasSuffix(v.Prompt, "benchmark run1-3-7") {
		t.Errorf("%s", body)
	}

	get := &target{name: "get", server: "api", method: http.MethodGet, path: "/v1/videos/{id}"}
	r, _ = newRequester(get, "http://h", []string{"s"}, "m", "p", []string{"task_a", "task_b"})
	for i, want := range []string{"task_a", "task_b", "task_a"} {
		req, _ := r.newRequest(i)
		if req.URL.Path != "/v1/videos/"+want || req.Body != nil {
			t.Errorf("%d: %s", i, req.URL.Path)
		}
	}
	bare := &target{name: "bare", server: "bare", method: http.MethodGet, path: "/v1/videos/{id}"}
	r, _ = newRequester(bare, "http://h", []string{"s"}, "m", "p", nil)
	req, _ = r.newRequest(0)
	if req.Header.Get("Authorization") != "" || req.URL.Path != "/v1/videos/task_none" {
		t.Errorf("bare request %s %v", req.URL, req.Header)
	}
}

func TestSecretLine(t *testing.T) {
	out := "key id:  key_01abc\ntenant:  demo\nsecret:  mg_abcdefghijklmnopqrstuvwxyz234567abcdefgh\n(the secret is shown only now)\n"
	m := secretLine.FindStringSubmatch(out)
	if m == nil || m[1] != "mg_abcdefghijklmnopqrstuvwxyz234567abcdefgh" {
		t.Errorf("%q", m)
	}
}

func TestFlags(t *testing.T) {
	o, err := parseFlags([]string{"-quick", "-stores", "sqlite", "-warmup", "0s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.duration != time.Second || o.warmup != 0 || o.seed != 100 || o.createRate != 2000 ||
		o.searchDuration != 500*time.Millisecond || len(o.stores) != 1 {
		t.Errorf("%+v", o)
	}
	if _, err := parseFlags([]string{"-stores", "mysql"}, io.Discard); err == nil {
		t.Error("unknown store accepted")
	}
}

func TestMs(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "-", 412 * time.Microsecond: "0.412", 12340 * time.Microsecond: "12.3", 1234 * time.Millisecond: "1234",
	} {
		if got := ms(d); got != want {
			t.Errorf("ms(%v) = %s, want %s", d, got, want)
		}
	}
	if signedMs(-300*time.Microsecond) != "-0.300" || signedMs(time.Millisecond) != "+1.000" {
		t.Error("signedMs")
	}
}

func TestBenchCatalogLiftsTheDemoLimits(t *testing.T) {
	path, err := democat.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	demo, _ := c.Tenant("demo")
	l := demo.Limits()
	if !l.Key.RequestsPerSecond.Unlimited() || !l.Key.ConcurrentRequests.Unlimited() || !l.Key.VideoTasksInFlight.Unlimited() ||
		!l.Key.SpeechInFlight.Unlimited() || !l.Tenant.RequestsPerSecond.Unlimited() || !l.Tenant.VideoTasksInFlight.Unlimited() ||
		!l.Tenant.SpeechInFlight.Unlimited() || !l.Key.AssetIngestsInFlight.Unlimited() || !l.Tenant.AssetIngestsInFlight.Unlimited() {
		t.Errorf("bench limits %+v are not all unlimited", l)
	}
}
