package video

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"

	"mediagen/internal/apierr"
	"mediagen/internal/billing"
	"mediagen/internal/catalog"
	"mediagen/internal/contract"
	"mediagen/internal/idgen"
	"mediagen/internal/keys"
	"mediagen/internal/limits"
	"mediagen/internal/logctx"
	"mediagen/internal/store"
)

// Stored is the normalized request the task's job runs, kept with the task.
type Stored struct {
	Request *contract.VideoRequest `json:"request"`
	// Upstream binding resolved from the alias at acceptance, so a later catalog change does
	// not re-route a task already accepted.
	Upstream     string `json:"upstream"`
	Model        string `json:"upstream_model"`
	GenerateRes  string `json:"generate_resolution,omitempty"`
	EnhanceModel string `json:"enhance_model,omitempty"`
	// EnhanceUpstream is the account of a production task's enhancement half ("": Upstream).
	EnhanceUpstream string `json:"enhance_upstream,omitempty"`
	// Routing (an alias with several accounts): the accounts a task may run on, in the
	// catalog's order, the strategy and its weights; EnhanceUpstreams the production
	// enhancement half's. Absent for a one-account alias. The account a half runs on is
	// recorded in the task's state (pipeState.Account, EnhAccount) when it is chosen.
	Upstreams        []string `json:"upstreams,omitempty"`
	Strategy         string   `json:"strategy,omitempty"`
	Weights          []int    `json:"weights,omitempty"`
	EnhanceUpstreams []string `json:"enhance_upstreams,omitempty"`
	// Assets maps a content index to the asset its asset:// reference resolved to at acceptance.
	Assets map[int]Asset `json:"assets,omitempty"`
}

// Create accepts a POST /v1/videos body for the caller. It returns the task and whether it was
// newly created (false for an identical replay).
func (s *Service) Create(ctx context.Context, c keys.Caller, body []byte) (store.Task, bool, error) {
	return s.create(ctx, c, body, nil, nil)
}

// Quote runs every step of Create before acceptance — parse, decode for the alias's product,
// the upstream account's refusals, content resolution and measuring, pricing — and returns the
// reservation the request would make, writing nothing. It does not look for a replay: a
// client_request_id already used is answered by Create only.
func (s *Service) Quote(ctx context.Context, c keys.Caller, body []byte) (billing.Quote, error) {
	d, _, err := s.prepare(ctx, c, body, nil, nil, false)
	if err != nil {
		return billing.Quote{}, err
	}
	return d.quote, nil
}

// create is Create with an uploaded first frame (CreateOpenAI) that the body refers to as
// asset://<upload.ID>; nil for every contract request. hashed, when not nil, is the body
// the replay hash is taken over instead of body (CreateOpenAI's, naming the upload by its
// bytes' digest rather than by its stored copy); nil for every contract request.
func (s *Service) create(ctx context.Context, c keys.Caller, body []byte, upload *Asset, hashed []byte) (store.Task, bool, error) {
	d, prev, err := s.prepare(ctx, c, body, upload, hashed, true)
	if err != nil {
		return store.Task{}, false, err
	}
	if prev != nil {
		return replay(*prev, d.hash)
	}
	return s.accept(ctx, c, d.req, d.stored, d.quote, d.hash)
}

// draft is a request checked and priced, ready for accept.
type draft struct {
	req    *contract.VideoRequest
	stored *Stored
	quote  billing.Quote
	hash   []byte
}

// prepare is every step of a create before its transaction, shared by Create and Quote. With
// findReplay, a request whose client_request_id already has a task returns that task (prev)
// with the draft's hash and nothing measured or priced.
func (s *Service) prepare(ctx context.Context, c keys.Caller, body []byte, upload *Asset, hashed []byte, findReplay bool) (d draft, prev *store.Task, err error) {
	// One parse serves both steps: finding the alias, then decoding for its product.
	parsed, perr := contract.ParseVideo(body)
	if perr != nil {
		return d, nil, perr
	}
	aliasName, perr := parsed.Model()
	if perr != nil {
		return d, nil, perr
	}
	alias, ok := c.Tenant.Alias(aliasName)
	if !ok || alias.Product == catalog.ProductSpeech {
		return d, nil, apierr.Invalid("model",
			fmt.Sprintf("The model %q is not a video model alias of this account. Use an alias supplied by the operator.", aliasName))
	}
	req, derr := parsed.Decode(product(alias), entitlements(c.Tenant.Packages))
	if derr != nil {
		return d, nil, derr
	}
	accounts := s.Accounts
	if c.Catalog != nil {
		accounts = c.Catalog.Upstream
	}
	if accounts != nil {
		// A routed alias refuses what any of its accounts cannot do: a task may run on any.
		for _, name := range alias.Accounts() {
			if acc, ok := accounts(string(name)); ok {
				if param, msg := acc.Kind.RefuseModel(alias.Model, req); param != "" {
					return d, nil, apierr.Invalid(param, msg)
				}
			}
		}
	}
	if hashed == nil {
		hashed = body
	}
	canonical, err := contract.Canonical(hashed)
	if err != nil {
		return d, nil, apierr.Invalid("", "The request body is not valid JSON.")
	}
	sum := sha256.Sum256(canonical)
	d.req, d.hash = req, sum[:]

	// A replay is answered before anything is measured or priced again. A request with no
	// media has nothing to measure: its replay is found by the insert itself (the unique index
	// on client_request_id, ahead of every limit and of the reservation in accept), which
	// spares every first create a read — a quarter of the server's CPU per create on PostgreSQL.
	if findReplay && req.ClientRequestID != "" && measures(req) {
		found, err := s.Store.TaskByRequestID(ctx, c.Key.ID, req.ClientRequestID)
		switch {
		case err == nil:
			return d, &found, nil
		case !errors.Is(err, store.ErrNotFound):
			return d, nil, err
		}
	}

	d.stored = &Stored{Request: req, Upstream: string(alias.Upstream), Model: alias.Model,
		GenerateRes: string(alias.GenerateResolution), EnhanceModel: alias.EnhanceModel}
	if alias.Product == catalog.ProductProduction && alias.EnhanceUpstream != "" {
		d.stored.EnhanceUpstream = string(alias.EnhanceUpstream)
	}
	if accts := alias.Accounts(); len(accts) > 1 {
		d.stored.Upstreams, d.stored.Strategy, d.stored.Weights = names(accts), string(alias.RoutingStrategy()), alias.Weights
	}
	if alias.Product == catalog.ProductProduction {
		if accts := alias.EnhancementAccounts(); len(accts) > 1 {
			d.stored.EnhanceUpstreams = names(accts)
		}
	}
	m, err := s.resolveContent(ctx, c, req, d.stored, upload)
	if err != nil {
		return d, nil, err
	}
	if d.quote, err = s.quote(c.Tenant, alias, req, m); err != nil {
		return d, nil, err
	}
	return d, nil, nil
}

// measures reports whether accepting req fetches or reads anything (media to probe, assets to
// resolve) before its transaction.
func measures(req *contract.VideoRequest) bool {
	return len(req.Content) > 0 || req.Route == contract.RouteEnhancement
}

func replay(prev store.Task, hash []byte) (store.Task, bool, error) {
	if !bytes.Equal(prev.PayloadHash, hash) {
		return store.Task{}, false, &apierr.Error{Kind: apierr.KindIdempotency, Param: "metadata.client_request_id",
			Message: "This client_request_id was already used for a different request. Keep the original request unchanged to retrieve its task, or use a new ID for a new task."}
	}
	return prev, false, nil
}

func (s *Service) quote(t *catalog.Tenant, a *catalog.Alias, req *contract.VideoRequest, m measured) (billing.Quote, error) {
	switch req.Route {
	case contract.RouteNative:
		return billing.EstimateNative(t, a, req.Native)
	case contract.RouteProduction:
		return billing.EstimateProduction(t, req.Production, m.inputs)
	case contract.RouteEnhancement:
		return billing.EstimateEnhancement(t, contract.EnhRoute(a.Route), req.Enhancement, m.source)
	}
	return billing.Quote{}, fmt.Errorf("quote: route %q", req.Route)
}

// accept writes the task, its job, its reservation and (through the unique index) its
// idempotency record in one transaction, so a 202 is only ever written for a durable task.
func (s *Service) accept(ctx context.Context, c keys.Caller, req *contract.VideoRequest, stored *Stored, q billing.Quote, hash []byte) (store.Task, bool, error) {
	reqJSON, err := json.Marshal(stored)
	if err != nil {
		return store.Task{}, false, fmt.Errorf("encode request: %w", err)
	}
	pricing, err := json.Marshal(q)
	if err != nil {
		return store.Task{}, false, fmt.Errorf("encode quote: %w", err)
	}
	now := s.now().UTC()
	task := store.Task{
		ID: idgen.New("video"), KeyID: c.Key.ID, TenantID: c.Tenant.ID, Route: string(req.Route), Model: req.Model,
		Status: store.StatusQueued, ClientRequestID: req.ClientRequestID, PayloadHash: hash,
		Request: reqJSON, Pricing: pricing, Reserved: q.Amount, CreatedAt: now, UpdatedAt: now,
	}
	// The transaction locks only this tenant's and key's rows and has no effect outside the
	// database, so it may share its commit with concurrent creates (store.ShareCommit).
	err = s.Store.Transact(store.ShareCommit(ctx, c.Tenant.ID, c.Key.ID), func(tx store.Tx) error {
		if err := tx.CreateTask(ctx, task); err != nil {
			return err
		}
		job := TaskJob(task)
		job.RequestID = logctx.RequestID(ctx) // the job's runs log with the request's id
		if err := tx.EnqueueJob(ctx, job); err != nil {
			return err
		}
		if err := limits.Admit(ctx, tx, c.Tenant.Limits(), store.InFlightTasks, c.Key.ID, c.Tenant.ID); err != nil {
			return err
		}
		return billing.Reserve(ctx, tx, c, task.ID, q.Amount, now)
	})
	switch {
	case err == nil:
		if s.Scheduled != nil {
			s.Scheduled(task.ID)
		}
		return task, true, nil
	case errors.Is(err, store.ErrSpendCap):
		if capErr, ok := billing.AsCapError(err); ok {
			return store.Task{}, false, capErr
		}
		return store.Task{}, false, err
	case errors.Is(err, store.ErrInsufficientFunds):
		return store.Task{}, false, &apierr.Error{Kind: apierr.KindInsufficientBalance,
			Message: fmt.Sprintf("The available balance is below this request's reservation of %s %s. Top up, and leave room for final reconciliation.", q.Amount, q.Currency)}
	case errors.Is(err, store.ErrConflict) && req.ClientRequestID != "":
		// A concurrent identical request won the race: answer with its task.
		prev, perr := s.Store.TaskByRequestID(ctx, c.Key.ID, req.ClientRequestID)
		if perr != nil {
			return store.Task{}, false, fmt.Errorf("idempotent re-read: %w", perr)
		}
		return replay(prev, hash)
	default:
		return store.Task{}, false, err
	}
}

func product(a *catalog.Alias) contract.Product {
	switch a.Product {
	case catalog.ProductNative:
		return contract.Product{Route: contract.RouteNative, Family: contract.Family(a.Family)}
	case catalog.ProductProduction:
		return contract.Product{Route: contract.RouteProduction, Tier: contract.Tier(a.Tier)}
	case catalog.ProductEnhancement:
		return contract.Product{Route: contract.RouteEnhancement, Enh: contract.EnhRoute(a.Route)}
	}
	return contract.Product{Route: contract.RouteSpeech}
}

func entitlements(p catalog.Packages) contract.Entitlements {
	e := contract.Entitlements{
		Native4K: p.Native4K, Enhance8K: p.Enhance8K, Production: p.Production.Enabled,
		LastFrame: p.Production.LastFrame, ProductionResolutions: map[string]bool{},
	}
	for _, r := range p.Production.Resolutions {
		e.ProductionResolutions[string(r)] = true
	}
	return e
}

func names(us []catalog.Upstream) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = string(u)
	}
	return out
}
