package main

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/video"
)

func TestUpstreamHealthReadFromThePipelinesMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	calls, waits, broken, breaker := video.NewUpstreamCalls(reg), video.NewUpstreamWaits(reg), video.NewAccountBroken(reg), video.NewBreakerState(reg)
	for range 3 {
		calls.WithLabelValues("ark-1", "submit", "ok").Observe(0.1)
	}
	calls.WithLabelValues("ark-1", "poll", "error").Observe(0.1)
	waits.WithLabelValues("ark-1").Add(4)
	broken.WithLabelValues("ark-1").Set(1)
	broken.WithLabelValues("sandbox").Set(0)
	breaker.WithLabelValues("ark-1").Set(video.BreakerOpen)
	got, err := gatherUpstreamHealth(reg)
	if err != nil {
		t.Fatal(err)
	}
	want := "[{ark-1 4 1 4 true 1} {sandbox 0 0 0 false 0}]"
	if fmt.Sprint(got) != want {
		t.Errorf("health = %v; want %s", got, want)
	}
}
