package video

import (
	"context"
	"errors"
	"strings"
	"time"

	"mediagen/internal/contract"
	"mediagen/internal/routing"
)

// Routing of a task across the accounts of its alias (catalog upstreams; docs/upstreams.md,
// "Routing"). A half is routed when its alias names more than one account; a one-account
// alias never reaches this file's choices and behaves as before.
//
// The rule that bounds it all: never two paid jobs for one task. A task leaves an account
// only when its create there is known to have made no job — the account refused it outright
// (401/403, 429), or it answered, asked by the task's tag, that it has no job for the task.
// After any other failure (a 5xx, a timeout, a dropped connection) the task stays on the
// account: it first looks for its job there (provider.GenerationFinder), and an account that
// cannot be asked gets the same create again under the same idempotency key, as before.

// routes are the accounts a half may run on (more than one when it is routed).
func (s *stepCtx) routes(half string) []string {
	if half == "enh" && s.c.Route == string(contract.RouteProduction) {
		return s.req.EnhanceUpstreams
	}
	return s.req.Upstreams
}

// bound is where the half's chosen account is kept in the task's state.
func (s *stepCtx) bound(half string) *string {
	if half == "enh" && s.c.Route == string(contract.RouteProduction) {
		return &s.st.EnhAccount
	}
	return &s.st.Account
}

// slotted: the half's submit takes its account's slot (the generation half, or a standalone
// enhancement; a production task's enhancement half runs under the slot its generation took).
func (s *stepCtx) slotted(half string) bool {
	return !(half == "enh" && s.c.Route == string(contract.RouteProduction))
}

func (p *Pipeline) slotWait() time.Duration {
	if p.SlotWait > 0 {
		return p.SlotWait
	}
	return time.Second
}

// maxRouteWait bounds how long a task none of whose accounts is usable waits before it looks
// again.
const maxRouteWait = 30 * time.Second

// route binds the half to an account, or keeps the account it is bound to while that account
// is usable. It checkpoints the choice with the submit's record (Submitting) and the account's
// slot, as a one-account submit does. done: the step ends with the outcome returned (the task
// waits: every account is full, broken, rate-limited or its breaker open); otherwise the
// submit goes on to the bound account.
func (s *stepCtx) route(ctx context.Context, half string) (Outcome, string, error, bool) {
	r := s.p.router()
	if cur := *s.bound(half); cur != "" {
		ok, why, _ := r.Admit(cur)
		if ok {
			return Outcome{}, "", nil, false
		}
		if err := s.leave(half, cur, why); err != nil {
			return Outcome{}, "", err, true
		}
	}
	var busy func(string) (int, int)
	if s.req.Strategy == "least_busy" && s.p.Slots != nil {
		if held, err := s.p.Slots(ctx); err == nil {
			busy = func(a string) (int, int) {
				limit := 0
				if s.p.MaxInFlight != nil {
					limit = s.p.MaxInFlight(a)
				}
				return held[a], limit
			}
		}
	}
	var skip skipped
	var soonest time.Time
	full := ""
	wait := s.p.slotWait()
	for _, a := range order(s.routes(half), s.req.Strategy, s.req.Weights, busy) {
		ok, why, until := r.Admit(a)
		if !ok {
			skip.add(a, why)
			if soonest.IsZero() || until.Before(soonest) {
				soonest = until
			}
			continue
		}
		if _, ok := s.p.upstream(a); !ok {
			skip.add(a, "has no engine in this process")
			continue
		}
		prev := s.st
		*s.bound(half) = a
		s.st.Submitting, s.st.SubmitAt = true, time.Now().Unix()
		limit := 0
		if s.slotted(half) && s.p.MaxInFlight != nil && !s.st.SlotHeld {
			limit = s.p.MaxInFlight(a)
		}
		s.st.SlotHeld = s.st.SlotHeld || limit > 0
		o, err := s.outcome(s.c.Progress, s.phase, 0)
		if err != nil {
			return o, "", err, true
		}
		if limit > 0 {
			o.TakeSlot, o.SlotLimit, o.SlotLine = a, limit, slotLineWaits*wait
		} else if s.slotted(half) {
			// Refused a slot earlier, the task may wait in a full account's line; it asks
			// there no more (a slot taken elsewhere leaves the line with it).
			o.LeaveLine = true
		}
		o.Detail = strings.TrimPrefix(s.note+"; ", "; ") + "routed to " + a
		if len(skip) > 0 {
			o.Detail += " (skipped: " + strings.Join(skip, ", ") + ")"
		}
		if err := s.save(o); errors.Is(err, ErrSlotsFull) {
			s.st = prev
			skip.add(a, "full")
			if full == "" {
				full = a
			}
			continue
		} else if err != nil {
			return Outcome{}, "", err, true
		}
		s.note = ""
		if !s.engines() {
			return permanent("video_generation_failed", "The model is not available."), "", nil, true
		}
		return Outcome{}, "", nil, false
	}
	// No account can take the task now: it waits, queued as a one-account task waits for its
	// account's slot, and looks again (sooner when an account's wait ends sooner).
	if full != "" && s.p.UpstreamWaits != nil {
		s.p.UpstreamWaits.WithLabelValues(full).Inc()
	}
	if full == "" && !soonest.IsZero() {
		wait = min(max(time.Until(soonest), wait), maxRouteWait)
	}
	return Outcome{Status: s.c.Status, Progress: s.c.Progress, RunIn: wait}, "", nil, true
}

// leave unbinds the half from an account its create never made a job on, giving back the
// account's slot, and records why (the task's event).
func (s *stepCtx) leave(half, account, why string) error {
	s.moves++
	*s.bound(half) = ""
	s.st.Submitting = false
	o, err := s.outcome(s.c.Progress, s.phase, 0)
	if err != nil {
		return err
	}
	if s.slotted(half) && s.st.SlotHeld {
		s.st.SlotHeld = false
		if o, err = s.outcome(s.c.Progress, s.phase, 0); err != nil {
			return err
		}
		o.ReleaseSlot = account
	}
	o.Detail = "left " + account + ": " + why
	s.log.Info("routed task left an account", "task_id", s.c.ID, "upstream", account, "why", why)
	return s.save(o)
}

// fallback answers a failed create of a routed half. A refusal that is the account's (its key
// refused, 401/403; rate-limited, 429) made no job: the account is avoided for a while and
// the task routes again at once — unless an earlier create's answer on this account is still
// unknown (unsure). A refusal of the request itself is not retried elsewhere. Any other
// failure counts against the account's breaker and is retried as before (moved: false): a
// create that failed with a 5xx may have made a job. The policy is routing's.
func (s *stepCtx) fallback(half string, err error, unsure bool) (Outcome, string, error, bool) {
	acct := s.account()
	v := routing.Policy{AccountWait: s.p.AccountWait, BlameUnknown: true}.Judge(s.p.router(), acct, err)
	if v.Opened {
		s.log.Warn("upstream account's breaker opened", "upstream", acct, "err", err)
	}
	if v.Why == "" || unsure || s.moves > 2*len(s.routes(half)) {
		return Outcome{}, "", nil, false
	}
	s.upstreamErr("submit", v.Class.String())
	if lerr := s.leave(half, acct, v.Why); lerr != nil {
		return Outcome{}, "", lerr, true
	}
	return Outcome{}, s.phase, nil, true
}
