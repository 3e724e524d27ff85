package main

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"mediagen/internal/adminapi"
	"mediagen/internal/console"
)

// upstreamHealth is the operator overview's view of this process's upstream figures, read
// from its own metrics registry: calls and failed calls (mediagen_upstream_call_duration_seconds
// by outcome), submits that waited for a slot (mediagen_upstream_waits_total), refused
// credentials (mediagen_upstream_account_broken) and the circuit breaker
// (mediagen_upstream_breaker_state). nil for an api-only process, which runs no pipeline and
// so knows nothing of the accounts' calls.
func (m *Main) upstreamHealth() func(context.Context) ([]console.UpstreamHealth, error) {
	if m.reg == nil || m.Config.Role == "api" {
		return nil
	}
	return func(context.Context) ([]console.UpstreamHealth, error) { return gatherUpstreamHealth(m.reg) }
}

// upstreamLocal is the same figures for GET /admin/v1/upstreams: each account's breaker state
// and broken flag in this process; nil for an api-only process.
func (m *Main) upstreamLocal() func(context.Context) ([]adminapi.UpstreamLocal, error) {
	health := m.upstreamHealth()
	if health == nil {
		return nil
	}
	return func(ctx context.Context) ([]adminapi.UpstreamLocal, error) {
		hs, err := health(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]adminapi.UpstreamLocal, 0, len(hs))
		for _, h := range hs {
			out = append(out, adminapi.UpstreamLocal{Account: h.Account, Breaker: h.Breaker, Broken: h.Broken})
		}
		return out, nil
	}
}

func gatherUpstreamHealth(g prometheus.Gatherer) ([]console.UpstreamHealth, error) {
	families, err := g.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather metrics: %w", err)
	}
	var order []string
	byName := map[string]*console.UpstreamHealth{}
	get := func(account string) *console.UpstreamHealth {
		h, ok := byName[account]
		if !ok {
			h = &console.UpstreamHealth{Account: account}
			byName[account] = h
			order = append(order, account)
		}
		return h
	}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			labels := metricLabels(mt)
			account := labels["upstream"]
			if account == "" {
				continue
			}
			switch f.GetName() {
			case "mediagen_upstream_call_duration_seconds":
				n := int64(mt.GetHistogram().GetSampleCount())
				h := get(account)
				h.Calls += n
				if labels["outcome"] == "error" {
					h.Errors += n
				}
			case "mediagen_upstream_waits_total":
				get(account).Waits += int64(mt.GetCounter().GetValue())
			case "mediagen_upstream_account_broken":
				get(account).Broken = mt.GetGauge().GetValue() == 1
			case "mediagen_upstream_breaker_state":
				get(account).Breaker = int(mt.GetGauge().GetValue())
			}
		}
	}
	out := make([]console.UpstreamHealth, 0, len(order))
	for _, name := range order {
		out = append(out, *byName[name])
	}
	return out, nil
}

func metricLabels(mt *dto.Metric) map[string]string {
	out := make(map[string]string, len(mt.GetLabel()))
	for _, l := range mt.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}
