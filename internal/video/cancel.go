package video

import (
	"context"
	"encoding/json"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/logctx"
	"mediagen/internal/provider"
	"mediagen/internal/store"
)

// cancelTimeout bounds the cancel call of a task being given up: the settlement waits for
// it, and a cancel that does not come through only costs what not cancelling would.
const cancelTimeout = 10 * time.Second

// NewUpstreamCancels registers the counter of upstream jobs cancelled when their task was
// given up, by upstream and outcome (ok, error).
func NewUpstreamCancels(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mediagen_upstream_cancels_total",
		Help: "Upstream jobs cancelled because their task was given up (deadline passed or steps kept failing), by upstream and outcome (ok, error).",
	}, []string{"upstream", "outcome"})
	reg.MustRegister(c)
	return c
}

// Abandon implements Abandoner: c is being given up while its current half may still be
// running upstream. If that half's engine can cancel its jobs, the job is cancelled, best
// effort: the task ends refunded whatever the answer, and the upstream stops spending the
// operator's money on a result nobody will collect. A half between jobs (no job id yet, or
// a submit whose answer was lost) has nothing to cancel.
func (p *Pipeline) Abandon(ctx context.Context, c store.TaskRun) {
	var req Stored
	var st pipeState
	if json.Unmarshal(c.Request, &req) != nil || len(c.State) == 0 || json.Unmarshal(c.State, &st) != nil {
		return
	}
	var account, job string
	var cancel func(context.Context, string) error
	switch c.Step {
	case phaseGenPoll:
		account, job = genAccount(req, st), st.GenJob
		if up, ok := p.upstream(account); ok {
			if cc, ok := up.Generator.(provider.GenerationCanceler); ok {
				cancel = cc.CancelGeneration
			}
		}
	case phaseEnhPoll:
		account, job = enhAccount(req, st), st.EnhJob
		if up, ok := p.upstream(account); ok {
			if cc, ok := up.Enhancer.(provider.EnhancementCanceler); ok {
				cancel = cc.CancelEnhancement
			}
		}
	}
	if cancel == nil || job == "" {
		return
	}
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer stop()
	outcome := "ok"
	if err := cancel(ctx, job); err != nil {
		outcome = "error"
		logctx.Logger(ctx, p.logger()).Warn("could not cancel the upstream job of a task given up", "task", c.ID, "upstream", account, "err", err)
	}
	if p.UpstreamCancels != nil {
		p.UpstreamCancels.WithLabelValues(account, outcome).Inc()
	}
}
