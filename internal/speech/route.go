package speech

import (
	"context"
	"errors"
	"fmt"

	"mediagen/internal/logctx"
	"mediagen/internal/provider"
	"mediagen/internal/routing"
	"mediagen/internal/store"
)

// Routing of a speech request across the accounts of its alias (catalog upstreams;
// docs/upstreams.md, "Routing"). A speech call is not a job: a synthesis call that failed
// made nothing the tenant is billed for, so after an account's problem — its key refused
// (401/403), a 429, a 5xx or a timeout of that call — the next account is tried at once,
// inside the same bounded wait. A refusal of the request itself (the text refused, an
// invalid parameter) is not retried elsewhere: the record fails as a one-account one does.
// The accounts' health (circuit breaker, accounts avoided for a while) is the
// routing.Router shared with video tasks. A one-account alias never consults it.

// DefaultAccountWait is how long an account whose key was refused is skipped by routed
// requests (the routing policy's default, shared with video tasks).
const DefaultAccountWait = routing.DefaultAccountWait

// router is the accounts' health routed requests consult (Router, else one per Service).
func (s *Service) router() *routing.Router {
	s.routerMu.Lock()
	defer s.routerMu.Unlock()
	if s.Router == nil {
		s.Router = &routing.Router{}
	}
	return s.Router
}

// errNoAccount: every account of a routed request was passed over (breaker open, avoided,
// no engine in this process) before any was called.
var errNoAccount = errors.New("no account of the alias can take the request now")

// routed is where a routed attempt ran: the account, and the accounts it tried or passed
// over before, with why (the record's route events).
type routed struct {
	account string
	route   []store.SpeechRoute
}

// synthesizeRouted calls the engine of each account in the strategy's order until one makes
// the audio, within ctx (the attempt's bounded wait). It returns the account the last call
// went to (or the first account when none was called) with the error of that call.
func (s *Service) synthesizeRouted(ctx context.Context, st Stored, preq provider.SpeechRequest) (provider.Speech, routed, error) {
	accounts := st.accounts()
	var tries *int // the run's calls, for their trace spans: counted only when tracing is on
	if s.Tracer != nil {
		tries = new(int)
	}
	if len(accounts) == 1 {
		e := s.engine(accounts[0])
		if e == nil {
			return provider.Speech{}, routed{account: accounts[0]}, errNoEngine{accounts[0]}
		}
		preq.Model = st.modelOn(accounts[0])
		out, err := synthesize(ctx, s.traced(e, accounts[0], tries), preq, transientRetries)
		return out, routed{account: accounts[0]}, err
	}
	r := s.router()
	var got routed
	var last error
	for _, a := range routing.Order(accounts, st.Strategy, st.Weights, nil) {
		if ok, why, _ := r.Admit(a); !ok {
			got.route = append(got.route, store.SpeechRoute{Upstream: a, Detail: "skipped " + a + ": " + why})
			continue
		}
		e := s.engine(a)
		if e == nil {
			got.route = append(got.route, store.SpeechRoute{Upstream: a, Detail: "skipped " + a + ": no engine in this process"})
			continue
		}
		got.account = a
		preq.Model = st.modelOn(a) // each account runs the alias as its own model
		// One retry of a transient error on the account, then the next account; a 429 is
		// not retried there: the next account at once (the account is avoided for its
		// Retry-After).
		out, err := synthesizeUnless(ctx, s.traced(e, a, tries), preq, 1, routing.RateLimited)
		if err == nil {
			r.Success(a)
			return out, got, nil
		}
		last = err
		if ctx.Err() != nil {
			return out, got, err // the wait is over: no account more
		}
		v := routing.Policy{AccountWait: s.AccountWait}.Judge(r, a, err)
		if v.Opened {
			logctx.Logger(ctx, s.log()).Warn("upstream account's breaker opened", "upstream", a, "err", err)
		}
		if v.Class == routing.Rejected || v.Class == routing.Unknown {
			return out, got, err // the request's own refusal: not retried elsewhere
		}
		why := v.Why
		if why == "" {
			why = moved(err)
		}
		got.route = append(got.route, store.SpeechRoute{Upstream: a, Detail: "left " + a + ": " + why})
		logctx.Logger(ctx, s.log()).Info("routed speech left an account", "upstream", a, "why", why)
	}
	if last == nil {
		if got.account == "" {
			got.account = accounts[0]
		}
		return provider.Speech{}, got, fmt.Errorf("%w: %s", errNoAccount, describe(got.route))
	}
	return provider.Speech{}, got, last
}

// moved says why a routed request left an account after a transient err (the account's own
// refusals are explained by the routing policy's verdict).
func moved(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return "failed, nothing made: " + detail(err)
}

func describe(route []store.SpeechRoute) string {
	s := ""
	for i, r := range route {
		if i > 0 {
			s += "; "
		}
		s += r.Detail
	}
	return s
}

// errNoEngine: the account has no engine in this process.
type errNoEngine struct{ account string }

func (e errNoEngine) Error() string { return "no engine for upstream " + e.account }
