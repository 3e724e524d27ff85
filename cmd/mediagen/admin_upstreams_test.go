package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/video"
)

// TestAdminUpstreamsListsEveryAccountWithThisProcessBreaker asks GET /admin/v1/upstreams of a
// running service: every account of the catalog is there with its kind and slots, and this
// process's breaker (closed: no call failed) and broken flag.
func TestAdminUpstreamsListsEveryAccountWithThisProcessBreaker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	token := reAdminToken.FindString(adminAs(t, dir, "root", "token", "create", "--name", "v", "--role", "viewer"))
	m, _ := startMain(t, dir, "--admin-listen", "127.0.0.1:0", "--log-level", "warn")
	status, body := get(t, m.AdminURL()+"/admin/v1/upstreams", token)
	if status != 200 {
		t.Fatalf("GET /admin/v1/upstreams = %d %s", status, body)
	}
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			Name, Kind, Breaker string
			MaxInFlight         int `json:"max_in_flight"`
			InFlight            int `json:"in_flight"`
			Waiting             int
			Broken              *bool
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, u := range list.Data {
		if u.Name == "sandbox" {
			found = true
			if u.Kind != "sandbox" || u.Breaker != "closed" || u.Broken == nil || *u.Broken || u.InFlight != 0 || u.Waiting != 0 {
				t.Errorf("sandbox = %+v; want kind sandbox, breaker closed, not broken, nothing in flight", u)
			}
		}
	}
	if list.Object != "list" || !found {
		t.Errorf("answer %s lacks the sandbox account", body)
	}
	if status, _ := get(t, m.AdminURL()+"/admin/v1/upstreams", ""); status != 401 {
		t.Errorf("without a token: %d, want 401", status)
	}
}

// TestAdminUpstreamLocalReadsTheConsoleFigures: the admin API's breaker state and broken flag
// are the operator console's (the process's gauges); an api-only process has none.
func TestAdminUpstreamLocalReadsTheConsoleFigures(t *testing.T) {
	reg := prometheus.NewRegistry()
	broken, breaker := video.NewAccountBroken(reg), video.NewBreakerState(reg)
	broken.WithLabelValues("ark-1").Set(1)
	breaker.WithLabelValues("ark-1").Set(video.BreakerOpen)
	breaker.WithLabelValues("ark-2").Set(video.BreakerHalfOpen)
	m := &Main{reg: reg}
	got, err := m.upstreamLocal()(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := "[{ark-1 1 true} {ark-2 2 false}]"; fmt.Sprint(got) != want {
		t.Errorf("local = %v; want %s", got, want)
	}
	m.Config.Role = "api"
	if m.upstreamLocal() != nil {
		t.Error("an api-only process reported breaker figures")
	}
}
