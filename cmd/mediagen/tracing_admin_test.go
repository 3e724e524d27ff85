package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	"mediagen/internal/tracing/otlptest"
)

// The admin listener (admin API and operator console) and the tenant console on the public
// address make a server span per request, under the client's traceparent, named by the
// route's or page's pattern (a bounded label where none matched), never by the raw path.
func TestTracingNamesAdminAndConsoleRequestsByRoute(t *testing.T) {
	t.Parallel()
	rec, otlp := otlptest.Start(t)
	m := NewMain(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": otlp}), io.Discard, io.Discard)
	if err := m.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", filepath.Join(t.TempDir(), "d"),
		"--admin-listen", "127.0.0.1:0", "--log-level", "warn"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })

	const clientSpan = "00f067aa0ba902b7"
	cases := []struct {
		name, url, want string
		status          int
		route           bool
	}{
		{name: "admin route", url: m.AdminURL() + "/admin/v1/whoami", want: "GET /admin/v1/whoami", status: 401, route: true},
		{name: "admin path no route matches", url: m.AdminURL() + "/admin/v1/nothing/key_123", want: "GET /admin/v1/*", status: 404},
		{name: "operator console page", url: m.AdminURL() + "/console/signin", want: "GET /console/signin", status: 200, route: true},
		{name: "operator console page with an id", url: m.AdminURL() + "/console/tasks/task_123", want: "GET /console/tasks/{id}", status: 303, route: true},
		{name: "tenant console page", url: m.URL() + "/console/tasks/task_123", want: "GET /console/tasks/{id}", status: 303, route: true},
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i, tc := range cases {
		req, _ := http.NewRequest("GET", tc.url, nil)
		req.Header.Set("traceparent", fmt.Sprintf("00-%032x-%s-01", i+1, clientSpan))
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status {
			t.Fatalf("%s: status %d, want %d", tc.name, res.StatusCode, tc.status)
		}
	}
	if err := m.Close(); err != nil { // flushes the spans
		t.Fatal(err)
	}

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []otlptest.Span
			for _, s := range rec.Spans() {
				if s.TraceID == fmt.Sprintf("%032x", i+1) && s.ParentID == clientSpan {
					got = append(got, s)
				}
			}
			if len(got) != 1 {
				t.Fatalf("%d spans under the client's, want 1: %+v", len(got), got)
			}
			s := got[0]
			if s.Name != tc.want || s.Kind != "SPAN_KIND_SERVER" || s.Attrs["http.response.status_code"] != fmt.Sprint(tc.status) {
				t.Errorf("span %s %s %v, want %s with status %d", s.Name, s.Kind, s.Attrs, tc.want, tc.status)
			}
			if route, ok := s.Attrs["http.route"]; ok != tc.route || (ok && route != tc.want) {
				t.Errorf("http.route %q (set %v), want set %v", route, ok, tc.route)
			}
			if s.Attrs["mediagen.request_id"] == "" {
				t.Errorf("no request id: %v", s.Attrs)
			}
		})
	}
}
