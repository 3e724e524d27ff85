package video

import (
	"errors"

	"mediagen/internal/billing"
	"mediagen/internal/provider"
)

// lostCreate ends a task whose create's answer was lost on an account that answered, asked,
// that it cannot tell whether that create made a job (provider.GenerationFinder's permanent
// error: an upstream without idempotency keys or tags, such as dashscope). Creating again
// could start a second paid job, so the task fails, refunded; the job the lost create may
// have made is the operator's possible loss, recorded as upstream excess (lost_create) on the
// account at the task's reservation, its price at most. docs/upstreams.md, "Never a second
// paid job".
func (s *stepCtx) lostCreate(err error) Outcome {
	s.upstreamErr("find", "rejected")
	code, msg := "video_generation_failed", "The video could not be generated."
	var pe *provider.Error
	if errors.As(err, &pe) && pe.Code != "" {
		code, msg = pe.Code, pe.Message
	}
	o := permanent(code, msg).because(s.account() + " find: " + err.Error())
	o.Final.Excess = []billing.Excess{{Kind: billing.ExcessLostCreate, Upstream: s.account(), Claimed: s.c.Reserved, Amount: s.c.Reserved,
		Detail: "a create's answer was lost and the account cannot tell whether it made a job: the task failed, refunded, instead of creating again"}}
	return o
}
