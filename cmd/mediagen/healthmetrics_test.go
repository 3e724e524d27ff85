package main

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"
)

func TestUpGaugeIsZeroWhilePingFailsOrHangs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ping func(ctx context.Context) error
		want float64
	}{
		{"answering ping is up", func(context.Context) error { return nil }, 1},
		{"failing ping is down", func(context.Context) error { return errors.New("connection refused") }, 0},
		{"ping past its timeout is down", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, 0},
	}
	for _, tc := range tests {
		// In a bubble, the hanging ping's 2 s timeout passes on the fake clock at once.
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { checkUp(t, tc.ping, tc.want) })
		})
	}
}

func checkUp(t *testing.T, ping func(ctx context.Context) error, want float64) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(upGauge{desc: prometheus.NewDesc("x_up", "test", nil, nil), ping: ping})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(fams) != 1 || len(fams[0].GetMetric()) != 1 {
		t.Fatalf("gathered %v, want one x_up sample", fams)
	}
	if got := fams[0].GetMetric()[0].GetGauge().GetValue(); got != want {
		t.Errorf("x_up = %v, want %v", got, want)
	}
}
