package video

import (
	"errors"
	"fmt"

	"mediagen/internal/billing"
	"mediagen/internal/provider"
	"mediagen/internal/routing"
)

// A create whose answer is lost may have made a paid job. An upstream that can find it
// (provider.GenerationFinder) or dedups a repeated create is asked again; one that can do
// neither (minimax: no idempotency key, no task list) answers provider.ErrOutcomeUnknown, and
// the task ends here instead of creating again: failed, fully refunded, the job the lost
// create may have made recorded as the operator's upstream excess (lost_create). Rule 15
// holds: never a second paid job. docs/upstreams.md, "Never a second paid job".

// lostCreate is the terminal outcome of a task whose create's fate cannot be known.
func (s *stepCtx) lostCreate(err error) Outcome {
	s.upstreamErr("find", "outcome_unknown")
	acct := s.account()
	o := permanent("video_generation_failed", "The video could not be generated.").
		because(acct + ": a create's answer was lost and the upstream cannot be asked whether it made a job; not submitted again (" + err.Error() + ")")
	o.Final.Excess = []billing.Excess{{Kind: billing.ExcessLostCreate, Upstream: acct, Claimed: s.c.Reserved, Amount: s.c.Reserved,
		Detail: "create answer lost; the upstream may have made a job no task polls"}}
	s.log.Warn("a create's answer was lost on an upstream that cannot be asked for it: the task fails, refunded, and the possible job is recorded as upstream excess",
		"task_id", s.c.ID, "upstream", acct)
	return o
}

// madeNoJob (a provider.BlindCreator's) clears the task's "submitting" mark after a create
// the upstream refused outright (a refused key or balance, 401/403; a rate limit, 429) or
// that never left this process (provider.ErrNotSent): no job was made, so the next submit is
// not one whose fate is unknown, and such a failure must not end the task as a lost create.
// Only when this submit was the first since the mark was clear (not unsure): an earlier lost
// create's job may still exist.
func (s *stepCtx) madeNoJob(err error, unsure bool) error {
	if _, blind := s.up.Generator.(provider.BlindCreator); !blind || unsure || !s.st.Submitting ||
		!(errors.Is(err, provider.ErrAccount) || routing.RateLimited(err) || errors.Is(err, provider.ErrNotSent)) {
		return nil
	}
	s.st.Submitting = false
	o, oerr := s.outcome(s.c.Progress, s.phase, 0)
	if oerr != nil {
		return oerr
	}
	if serr := s.save(o); serr != nil {
		return fmt.Errorf("recording a refused create: %w", serr)
	}
	return nil
}

// lostCreates keeps, of a failed task's excess, what a failed task records: a lost create.
func lostCreates(ex []billing.Excess) []billing.Excess {
	var out []billing.Excess
	for _, e := range ex {
		if e.Kind == billing.ExcessLostCreate {
			out = append(out, e)
		}
	}
	return out
}
