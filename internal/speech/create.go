package speech

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/apierr"
	"mediagen/internal/billing"
	"mediagen/internal/catalog"
	"mediagen/internal/contract"
	"mediagen/internal/idgen"
	"mediagen/internal/keys"
	"mediagen/internal/limits"
	"mediagen/internal/logctx"
	"mediagen/internal/media/budget"
	"mediagen/internal/store"
	"mediagen/internal/tenantctx"
)

// Stored is the normalized request kept with the record, with the upstream binding resolved
// at acceptance (so a take-over after a catalog change still runs what was accepted).
type Stored struct {
	Model         string      `json:"model"`
	Input         string      `json:"input,omitempty"`
	Instructions  string      `json:"instructions,omitempty"`
	Text          string      `json:"text"`
	Mode          string      `json:"mode"`
	References    []StoredRef `json:"references,omitempty"`
	Upstream      string      `json:"upstream"`
	UpstreamModel string      `json:"upstream_model"`
	// A routed alias's accounts (more than one) that may serve the request, and its strategy:
	// the attempt tries them in turn (generate.go, route.go). Upstream is the first until the
	// record finishes, then the account it finally ran on.
	Upstreams []string `json:"upstreams,omitempty"`
	Strategy  string   `json:"strategy,omitempty"`
	Weights   []int    `json:"weights,omitempty"`
	// UpstreamModels is the model of each routed account whose model is not UpstreamModel
	// (an alias over an espeak and an openai account names a model for each).
	UpstreamModels map[string]string `json:"upstream_models,omitempty"`
}

// modelOn is the upstream model the request runs as on account.
func (st Stored) modelOn(account string) string {
	if m, ok := st.UpstreamModels[account]; ok {
		return m
	}
	return st.UpstreamModel
}

// accounts are the accounts the stored request may run on, in the catalog's order.
func (st Stored) accounts() []string {
	if len(st.Upstreams) > 0 {
		return st.Upstreams
	}
	return []string{st.Upstream}
}

// StoredRef is one reference of a Stored request.
type StoredRef struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// Create handles a POST /v1/audio/speech body for the caller and returns the finished
// speech. Validation failures (400, never recorded or charged), 402 and 503 come before the
// record is written; once it is written, the outcome is recorded with it, so a retry with the
// same client_request_id gets the same answer.
func (s *Service) Create(ctx context.Context, c keys.Caller, body []byte) (*Response, error) {
	req, alias, routes, err := s.check(c, body)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(req.CanonicalForIdempotency())
	hash := sum[:]
	// From here on the work is detached from the client's connection: a client that hangs up
	// must not leave a half-finished record behind. Every step below has its own bound.
	work := context.WithoutCancel(ctx)

	if req.ClientRequestID != "" {
		prev, err := s.Store.SpeechByRequestID(ctx, c.Key.ID, req.ClientRequestID)
		switch {
		case err == nil:
			return s.replay(work, prev, hash)
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
	}
	quote, err := s.price(ctx, c, req, routes)
	if err != nil {
		return nil, err
	}
	// Synchronous work is refused early, nothing recorded or reserved, when the media budget
	// could not serve it soon (503, or 429 when the tenant holds its share; Retry-After).
	if err := s.Media.Admit(tenantctx.With(ctx, c.Tenant.ID, c.Key.ID), budget.WorkSpeech); err != nil {
		return nil, err
	}
	rec, _, err := s.accept(work, c, req, alias, routes, quote, hash)
	if err != nil {
		var dup *duplicate
		if errors.As(err, &dup) {
			return s.replay(work, dup.prev, hash)
		}
		return nil, err
	}
	// The job was enqueued with the record; this process runs it at once (the request
	// watches for its end before waking the producer, so the wake-up is not missed).
	// Its first run generates within the wait and stores within the grace; the request
	// waits that long and one lease more for the finish.
	return s.await(work, rec, s.wait()+s.grace()+s.lease(), s.notify)
}

// Quote runs every step of Create before the record is written — decoding, the alias, the
// upstream account's refusals, the engine's availability, the reference checks and the
// estimate — and returns the reservation the request would make, writing nothing. It does
// not look for a replay: a client_request_id already used is answered by Create only.
func (s *Service) Quote(ctx context.Context, c keys.Caller, body []byte) (Quote, error) {
	req, _, routes, err := s.check(c, body)
	if err != nil {
		return Quote{}, err
	}
	return s.price(ctx, c, req, routes)
}

// check decodes and validates a request for the caller: the contract, a speech alias of the
// tenant, what its upstream accounts refuse. routes are the alias's accounts that can serve
// the request, in the catalog's order: an account whose kind refuses it (an openai account
// and voice references) is left out of a routed alias's list; the request is refused only
// when every account refuses it (with the first account's reason).
func (s *Service) check(c keys.Caller, body []byte) (*contract.SpeechRequest, *catalog.Alias, []string, error) {
	req, derr := contract.DecodeSpeech(body)
	if derr != nil {
		return nil, nil, nil, derr
	}
	alias, ok := c.Tenant.Alias(req.Model)
	if !ok || alias.Product != catalog.ProductSpeech {
		return nil, nil, nil, apierr.Invalid("model", fmt.Sprintf("The model %q is not a speech model alias of this account. Use a speech alias supplied by the operator.", req.Model))
	}
	accounts := s.accountsOf(c)
	var routes []string
	var refused *apierr.Error
	for _, u := range alias.Accounts() {
		if accounts != nil {
			if acc, ok := accounts(string(u)); ok {
				if param, msg := acc.RefuseSpeech(req); param != "" {
					if refused == nil {
						refused = apierr.Invalid(param, msg)
					}
					continue
				}
			}
		}
		routes = append(routes, string(u))
	}
	if len(routes) == 0 && refused != nil {
		return nil, nil, nil, refused
	}
	return req, alias, routes, nil
}

// accountsOf looks accounts up in the caller's catalog, else in s.Accounts.
func (s *Service) accountsOf(c keys.Caller) func(string) (catalog.UpstreamAccount, bool) {
	if c.Catalog != nil {
		return c.Catalog.Upstream
	}
	return s.Accounts
}

// price is what a new request needs before its record: an engine for one of the alias's
// accounts, the tenant's rate, reachable references, and the estimate of its reservation —
// under the largest bound of the accounts it may run on, so a failover never under-reserves.
func (s *Service) price(ctx context.Context, c keys.Caller, req *contract.SpeechRequest, routes []string) (Quote, error) {
	if !slices.ContainsFunc(routes, func(u string) bool { return s.engine(u) != nil }) {
		return Quote{}, apierr.New(apierr.KindUnavailable, "Speech generation is not available on this server right now. Retry later, or contact the operator.")
	}
	rate, ok := c.Tenant.Rates.SpeechRate()
	if !ok {
		return Quote{}, fmt.Errorf("speech: tenant %s has no speech rate: %w", c.Tenant.ID, billing.ErrNoRate)
	}
	// References are checked with the client's context: nothing is recorded yet, so a client
	// that hangs up here simply ends the request.
	if err := s.checkReferences(ctx, req.References); err != nil {
		return Quote{}, err
	}
	return Estimate(c.Tenant.Currency, rate, s.largestBound(routes, s.accountsOf(c), req.Text), req.Text)
}

// duplicate reports a concurrent request with the same client_request_id that won the race to
// create the record.
type duplicate struct{ prev store.Speech }

func (d *duplicate) Error() string { return "speech: duplicate client_request_id" }

// accept writes the pending record, its reservation and its generation job in one
// transaction, before the engine is called. The record's AttemptUntil is the end of its
// bounded wait: the job's first run must have the audio by then.
func (s *Service) accept(ctx context.Context, c keys.Caller, req *contract.SpeechRequest, alias *catalog.Alias, routes []string, q Quote, hash []byte) (store.Speech, Stored, error) {
	stored := Stored{Model: req.Model, Input: req.Input, Instructions: req.Instructions, Text: req.Text, Mode: req.Mode,
		Upstream: routes[0], UpstreamModel: alias.ModelOf(catalog.Upstream(routes[0]))}
	if len(routes) > 1 {
		stored.Upstreams, stored.Strategy, stored.Weights = routes, string(alias.RoutingStrategy()), alias.Weights
		for _, r := range routes {
			if m := alias.ModelOf(catalog.Upstream(r)); m != stored.UpstreamModel {
				if stored.UpstreamModels == nil {
					stored.UpstreamModels = map[string]string{}
				}
				stored.UpstreamModels[r] = m
			}
		}
		if len(alias.Weights) != len(routes) {
			stored.Weights = nil // an account left out: the weights no longer pair up
			if stored.Strategy == string(catalog.StrategyWeighted) {
				stored.Strategy = string(catalog.StrategyPriority)
			}
		}
	}
	for _, r := range req.References {
		stored.References = append(stored.References, StoredRef{Type: r.Type, URL: r.URL})
	}
	reqJSON, err := json.Marshal(stored)
	if err != nil {
		return store.Speech{}, Stored{}, fmt.Errorf("encode speech request: %w", err)
	}
	pricing, err := json.Marshal(q)
	if err != nil {
		return store.Speech{}, Stored{}, fmt.Errorf("encode speech quote: %w", err)
	}
	now := s.now().UTC()
	rec := store.Speech{
		ID: idgen.New("speech"), KeyID: c.Key.ID, TenantID: c.Tenant.ID, Model: req.Model, Status: store.SpeechPending,
		ClientRequestID: req.ClientRequestID, PayloadHash: hash, Request: reqJSON, Pricing: pricing,
		Reserved: q.Amount, AttemptToken: idgen.New("attempt"), AttemptUntil: now.Add(s.wait()),
		CreatedAt: now, UpdatedAt: now,
	}
	err = s.Store.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateSpeech(ctx, rec); err != nil {
			return err
		}
		if err := limits.Admit(ctx, tx, c.Tenant.Limits(), store.InFlightSpeeches, c.Key.ID, c.Tenant.ID); err != nil {
			return err
		}
		if err := billing.Reserve(ctx, tx, c, rec.ID, q.Amount, now); err != nil {
			return err
		}
		job := GenerateJob(rec)
		job.RequestID = logctx.RequestID(ctx) // the generation's lines carry the request's id
		return tx.EnqueueJob(ctx, job)
	})
	switch {
	case err == nil:
		return rec, stored, nil
	case errors.Is(err, store.ErrSpendCap):
		if capErr, ok := billing.AsCapError(err); ok {
			return store.Speech{}, Stored{}, capErr
		}
		return store.Speech{}, Stored{}, err
	case errors.Is(err, store.ErrInsufficientFunds):
		return store.Speech{}, Stored{}, &apierr.Error{Kind: apierr.KindInsufficientBalance,
			Message: fmt.Sprintf("The available balance is below this request's reservation of %s %s. Top up, and leave room for final reconciliation.", q.Amount, q.Currency)}
	case errors.Is(err, store.ErrConflict) && req.ClientRequestID != "":
		prev, perr := s.Store.SpeechByRequestID(ctx, c.Key.ID, req.ClientRequestID)
		if perr != nil {
			return store.Speech{}, Stored{}, fmt.Errorf("speech idempotent re-read: %w", perr)
		}
		return store.Speech{}, Stored{}, &duplicate{prev: prev}
	default:
		return store.Speech{}, Stored{}, err
	}
}

// replay answers a request whose client_request_id already has a record: a different payload
// is a conflict; the same payload gets the original's outcome, waiting for it (at most one
// wait) while it runs.
func (s *Service) replay(ctx context.Context, prev store.Speech, hash []byte) (*Response, error) {
	if !bytes.Equal(prev.PayloadHash, hash) {
		return nil, &apierr.Error{Kind: apierr.KindIdempotency, Param: "metadata.client_request_id",
			Message: "This client_request_id was already used for a different speech request. Send the original request unchanged to get its result, or use a new ID for a new request."}
	}
	return s.await(ctx, prev, s.wait(), nil)
}

// await returns the outcome of rec, waiting at most bound while its job runs: a job that ends
// in this process wakes it at once; one that runs in another is seen by re-reading the
// record every poll. started, when set, runs once the wait is watched (it wakes the job).
// A record still pending after the bound answers request_in_progress when a replay can
// collect it (it has a client_request_id), else speech_timeout; either way its job still
// ends it, and a first run that could not start within the wait fails it, refunded.
func (s *Service) await(ctx context.Context, rec store.Speech, bound time.Duration, started func()) (*Response, error) {
	ended, stop := s.watch(rec.ID)
	defer stop()
	if started != nil {
		started()
	}
	wait := time.NewTimer(bound)
	defer wait.Stop()
	waited := false
	for {
		switch rec.Status {
		case store.SpeechCompleted:
			return s.render(ctx, rec)
		case store.SpeechFailed:
			return nil, failure(rec)
		}
		if waited {
			if rec.ClientRequestID == "" {
				return nil, &apierr.Error{Kind: apierr.KindTimeout, Code: CodeTimeout,
					Message: fmt.Sprintf("Speech generation did not finish within %s. A request that produces no audio is refunded in full.", s.wait())}
			}
			return nil, &apierr.Error{Kind: apierr.KindIdempotency, Code: CodeInProgress, Param: "metadata.client_request_id",
				Message: "The original request with this client_request_id is still being generated. Retry with the same client_request_id in a few seconds to get its result; do not use a new ID."}
		}
		t := time.NewTimer(s.poll())
		select {
		case <-ended:
			ended = nil // read once more; a closed channel must not spin
		case <-t.C:
		case <-wait.C:
			waited = true // read the record once more, then give up
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		t.Stop()
		var err error
		if rec, err = s.Store.Speech(ctx, rec.ID); err != nil {
			return nil, err
		}
	}
}
