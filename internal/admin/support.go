package admin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/money"
	"mediagen/internal/speech"
	"mediagen/internal/store"
	"mediagen/internal/video"
)

// Support: find a task, a speech record or an asset from the id a customer quotes, or search
// for them (docs/admin.md, "Support: finding a task"). These are reads: the viewer role may
// use them (the issue: "viewer reads everything"), and they write no audit entry.

// SupportStore is what the support reads use of the store (the SQL store has all of it).
type SupportStore interface {
	Task(ctx context.Context, id string) (store.Task, error)
	TaskRun(ctx context.Context, id string) (store.TaskRun, error)
	Speech(ctx context.Context, id string) (store.Speech, error)
	Asset(ctx context.Context, id string) (store.Asset, error)
	Key(ctx context.Context, id string) (store.Key, error)
	UpstreamExcess(ctx context.Context, f store.ExcessFilter) ([]store.UpstreamExcess, error)
	store.SupportStore
}

// Search bounds.
const (
	SearchDefaultLimit = store.SearchDefaultLimit
	SearchMaxLimit     = store.SearchMaxLimit
)

func (s *Service) support(a Actor) (SupportStore, error) {
	if err := need(a, RoleViewer); err != nil {
		return nil, err
	}
	ss, ok := s.st.(SupportStore)
	if !ok {
		return nil, errors.New("admin: the store cannot serve support reads")
	}
	return ss, nil
}

// Task is the operator's whole view of one video task, of any tenant.
func (s *Service) Task(ctx context.Context, a Actor, id string) (TaskDetail, error) {
	st, err := s.support(a)
	if err != nil {
		return TaskDetail{}, err
	}
	if err := checkID("task", id); err != nil {
		return TaskDetail{}, err
	}
	run, err := st.TaskRun(ctx, id)
	if isNotFound(err) {
		return TaskDetail{}, notFound("task", id)
	}
	if err != nil {
		return TaskDetail{}, fmt.Errorf("task %s: %w", id, err)
	}
	t := run.Task
	up := video.Upstreams(t.Request, run.State)
	d := TaskDetail{Object: "task_detail", ID: t.ID, Tenant: t.TenantID, KeyID: t.KeyID, Alias: t.Model, Route: t.Route,
		Status: t.Status, Progress: t.Progress, Step: run.Step, ClientRequestID: t.ClientRequestID,
		CreatedAt: t.CreatedAt.UTC(), UpdatedAt: t.UpdatedAt.UTC(), FinishedAt: utc(t.FinishedAt),
		Upstream: TaskUpstream{Account: up.Account, Model: up.Model, Job: up.Job, EnhanceAccount: up.EnhanceAccount,
			EnhanceModel: up.EnhanceModel, EnhanceJob: up.EnhanceJob}}
	if k, err := st.Key(ctx, t.KeyID); err == nil {
		d.KeyName = k.Name
	}
	if t.ErrorCode != "" || t.ErrorMessage != "" {
		d.Error = &PublicError{Code: t.ErrorCode, Message: t.ErrorMessage}
	}
	events, err := st.TaskEvents(ctx, id)
	if err != nil {
		return TaskDetail{}, fmt.Errorf("task %s: %w", id, err)
	}
	d.Events = make([]TaskEvent, 0, len(events))
	for _, e := range events {
		d.Events = append(d.Events, TaskEvent{Seq: e.Seq, At: e.At.UTC(), From: e.From, To: e.To, Step: e.Step, Attempt: e.Attempt,
			Upstream: e.Upstream, UpstreamJob: e.UpstreamJob, Detail: e.Detail})
	}
	d.InternalError = internalError(t.Status, events)
	d.Money = RecordMoney{Currency: billing.QuoteCurrency(t.Pricing), Reserved: t.Reserved, Charged: t.Charged}
	if d.Ledger, err = s.ledger(ctx, st, id, t.KeyID, &d.Money); err != nil {
		return TaskDetail{}, err
	}
	if d.Excess, err = excess(ctx, st, id); err != nil {
		return TaskDetail{}, err
	}
	if d.Jobs, err = jobsOf(ctx, st, video.TaskKind+":"+id); err != nil {
		return TaskDetail{}, err
	}
	return d, nil
}

// internalError is the reason behind a failed or expired task: its terminal event's detail,
// else the last failed attempt's (a task whose step kept failing).
func internalError(status string, events []store.TaskEvent) string {
	if status != store.StatusFailed && status != store.StatusExpired {
		return ""
	}
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Detail != "" {
			return events[i].Detail
		}
	}
	return ""
}

// ledger reads the transactions about ref and fills m's reservation, settlement and overage
// from the legs on the key's accounts.
func (s *Service) ledger(ctx context.Context, st SupportStore, ref, keyID string, m *RecordMoney) ([]LedgerTxn, error) {
	txns, err := st.LedgerTxns(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("ledger of %s: %w", ref, err)
	}
	out := make([]LedgerTxn, 0, len(txns))
	leg := func(t store.Txn, kind store.AccountKind) money.Micros {
		var sum money.Micros
		for _, e := range t.Entries {
			if e.Account == store.AccountID(keyID, kind) {
				sum += e.Amount
			}
		}
		return sum
	}
	for _, t := range txns {
		lt := LedgerTxn{ID: t.ID, Kind: t.Kind, Note: t.Note, CreatedAt: t.CreatedAt.UTC(), Entries: make([]LedgerEntry, 0, len(t.Entries))}
		for _, e := range t.Entries {
			lt.Entries = append(lt.Entries, LedgerEntry{Account: e.Account, Amount: e.Amount})
		}
		out = append(out, lt)
		ref := &TxnRef{ID: t.ID, Kind: t.Kind, CreatedAt: t.CreatedAt.UTC()}
		switch t.Kind {
		case "reserve":
			ref.Amount = leg(t, store.AccountReserved)
			m.Reservation = ref
		case "settle", "release":
			ref.Amount = leg(t, store.AccountSpent)
			m.Settlement = ref
		case store.TxnKindOverage:
			ref.Amount = leg(t, store.AccountSpent)
			m.OverageTxn, m.Overage = ref, m.Overage+ref.Amount
		}
	}
	return out, nil
}

func excess(ctx context.Context, st SupportStore, ref string) ([]Excess, error) {
	recs, err := st.UpstreamExcess(ctx, store.ExcessFilter{Ref: ref, Limit: 1000})
	if err != nil {
		return nil, fmt.Errorf("upstream excess of %s: %w", ref, err)
	}
	out := make([]Excess, 0, len(recs))
	for _, e := range recs {
		out = append(out, Excess{ID: e.ID, Upstream: e.Upstream, Kind: e.Kind, Claimed: e.Claimed, Charged: e.Charged,
			Amount: e.Amount, Currency: e.Currency, Detail: e.Detail, CreatedAt: e.CreatedAt.UTC()})
	}
	return out, nil
}

func jobsOf(ctx context.Context, st SupportStore, ids ...string) ([]Job, error) {
	jobs, err := st.Jobs(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	out := make([]Job, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, Job{ID: j.ID, Kind: j.Kind, Attempts: j.Attempts, LastError: j.LastError, RunAt: j.RunAt.UTC(),
			LeaseUntil: utc(j.LeaseUntil), Deadline: utc(j.Deadline), CreatedAt: j.CreatedAt.UTC()})
	}
	return out, nil
}

// Speech is the operator's view of one speech record.
func (s *Service) Speech(ctx context.Context, a Actor, id string) (SpeechDetail, error) {
	st, err := s.support(a)
	if err != nil {
		return SpeechDetail{}, err
	}
	if err := checkID("speech record", id); err != nil {
		return SpeechDetail{}, err
	}
	sp, err := st.Speech(ctx, id)
	if isNotFound(err) {
		return SpeechDetail{}, notFound("speech record", id)
	}
	if err != nil {
		return SpeechDetail{}, fmt.Errorf("speech %s: %w", id, err)
	}
	var req speech.Stored
	_ = json.Unmarshal(sp.Request, &req) // an unreadable request shows no upstream
	d := SpeechDetail{Object: "speech_detail", ID: sp.ID, Tenant: sp.TenantID, KeyID: sp.KeyID, Alias: sp.Model, Status: sp.Status,
		ClientRequestID: sp.ClientRequestID, Upstream: req.Upstream, UpstreamModel: req.UpstreamModel, ErrorKind: sp.ErrorKind,
		InternalError: sp.ErrorDetail,
		CreatedAt:     sp.CreatedAt.UTC(), UpdatedAt: sp.UpdatedAt.UTC(), FinishedAt: utc(sp.FinishedAt),
		Money: RecordMoney{Currency: billing.QuoteCurrency(sp.Pricing), Reserved: sp.Reserved, Charged: sp.Charged}}
	if sp.Status == store.SpeechPending {
		d.AttemptUntil = utc(sp.AttemptUntil)
	}
	events, err := st.SpeechEvents(ctx, id)
	if err != nil {
		return SpeechDetail{}, fmt.Errorf("speech %s: %w", id, err)
	}
	d.Events = make([]TaskEvent, 0, len(events))
	for _, e := range events {
		d.Events = append(d.Events, TaskEvent{Seq: e.Seq, At: e.At.UTC(), From: e.From, To: e.To, Step: e.Step, Attempt: e.Attempt, Upstream: e.Upstream, Detail: e.Detail})
	}
	if k, err := st.Key(ctx, sp.KeyID); err == nil {
		d.KeyName = k.Name
	}
	if sp.ErrorCode != "" || sp.ErrorMessage != "" {
		d.Error = &PublicError{Code: sp.ErrorCode, Message: sp.ErrorMessage, Param: sp.ErrorParam}
	}
	if d.Ledger, err = s.ledger(ctx, st, id, sp.KeyID, &d.Money); err != nil {
		return SpeechDetail{}, err
	}
	if d.Excess, err = excess(ctx, st, id); err != nil {
		return SpeechDetail{}, err
	}
	return d, nil
}

// Asset is the operator's view of one asset, with the jobs still working on it.
func (s *Service) Asset(ctx context.Context, a Actor, id string) (AssetDetail, error) {
	st, err := s.support(a)
	if err != nil {
		return AssetDetail{}, err
	}
	if err := checkID("asset", id); err != nil {
		return AssetDetail{}, err
	}
	as, err := st.Asset(ctx, id)
	if isNotFound(err) {
		return AssetDetail{}, notFound("asset", id)
	}
	if err != nil {
		return AssetDetail{}, fmt.Errorf("asset %s: %w", id, err)
	}
	d := AssetDetail{Object: "asset_detail", ID: as.ID, Tenant: as.TenantID, KeyID: as.KeyID, GroupID: as.GroupID, Library: as.Library,
		Name: as.Name, Type: as.Type, Status: as.Status, SourceURL: as.SourceURL, FailureCode: as.FailureCode,
		FailureReason: as.FailureReason, BlobKey: as.BlobKey, ContentType: as.ContentType, Bytes: as.Bytes, Duration: as.Duration,
		Width: as.Width, Height: as.Height, Attempts: as.Attempts, CreatedAt: as.CreatedAt.UTC(), UpdatedAt: as.UpdatedAt.UTC()}
	if d.Jobs, err = jobsOf(ctx, st, "asset.ingest:"+id); err != nil {
		return AssetDetail{}, err
	}
	return d, nil
}

// SearchInput is a search's filters, as the API's query or the CLI's flags give them; fields
// a kind does not have must be empty.
type SearchInput struct {
	Tenant, Key, Status, Alias, Route, UpstreamJob, Group string
	Since, Until                                          time.Time // created_at in [since, until)
	Order                                                 string    // "desc" (default) or "asc"
	Cursor                                                string    // next_cursor of the previous page
	Limit                                                 int       // 1..SearchMaxLimit (0: SearchDefaultLimit)
}

var (
	taskStatuses   = []string{store.StatusQueued, store.StatusInProgress, store.StatusCompleted, store.StatusFailed, store.StatusExpired}
	speechStatuses = []string{store.SpeechPending, store.SpeechCompleted, store.SpeechFailed}
	assetStatuses  = []string{store.AssetProcessing, store.AssetActive, store.AssetFailed}
	routes         = []string{"native", "enhancement", "production"}
)

// page checks the filters common to every search and returns the store's page.
func (in SearchInput) page() (store.Page, error) {
	var p store.Page
	for _, f := range []struct{ name, v string }{{"tenant", in.Tenant}, {"key", in.Key}, {"alias", in.Alias},
		{"upstream_job", in.UpstreamJob}, {"group", in.Group}} {
		if err := checkText(f.name, f.v, 2*MaxNameChars, false); err != nil {
			return p, err
		}
	}
	if !in.Since.IsZero() && !in.Until.IsZero() && !in.Since.Before(in.Until) {
		return p, invalidf("until", "until must be after since.")
	}
	switch in.Order {
	case "", "desc":
	case "asc":
		p.Asc = true
	default:
		return p, invalidf("order", "order must be asc or desc.")
	}
	switch {
	case in.Limit == 0:
		p.Limit = SearchDefaultLimit
	case in.Limit < 0 || in.Limit > SearchMaxLimit:
		return p, invalidf("limit", "limit must be between 1 and %d.", SearchMaxLimit)
	default:
		p.Limit = in.Limit
	}
	if in.Cursor != "" {
		at, id, ok := decodeCursor(in.Cursor)
		if !ok {
			return p, invalidf("cursor", "cursor is not one this service handed out.")
		}
		p.AfterAt, p.AfterID = at, id
	}
	return p, nil
}

func oneOf(param, v string, allowed []string) error {
	if v == "" {
		return nil
	}
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return invalidf(param, "%s must be one of %s.", param, strings.Join(allowed, ", "))
}

// Cursors are opaque to clients: the last row's position (created_at, id), so the next page
// starts strictly after it and is stable under inserts.
func encodeCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at.UnixMicro(), 10) + "." + id))
}

func decodeCursor(c string) (time.Time, string, bool) {
	if len(c) > 512 {
		return time.Time{}, "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", false
	}
	n, id, ok := strings.Cut(string(b), ".")
	if !ok || id == "" || checkText("cursor", id, MaxNameChars, true) != nil {
		return time.Time{}, "", false
	}
	us, err := strconv.ParseInt(n, 10, 64)
	if err != nil || us < 0 {
		return time.Time{}, "", false
	}
	return time.UnixMicro(us).UTC(), id, true
}

// page1 trims a search's limit+1 rows to the page and names the next cursor.
func page1[T any](rows []T, limit int, pos func(T) (time.Time, string)) ([]T, bool, string) {
	more := len(rows) > limit
	rows = rows[:min(len(rows), limit)]
	next := ""
	if more && len(rows) > 0 {
		next = encodeCursor(pos(rows[len(rows)-1]))
	}
	return rows, more, next
}

// SearchTasks finds tasks of any tenant by tenant, key, status, alias, route, creation time
// and upstream job id.
func (s *Service) SearchTasks(ctx context.Context, a Actor, in SearchInput) (List[TaskSummary], error) {
	st, err := s.support(a)
	if err != nil {
		return List[TaskSummary]{}, err
	}
	if in.Group != "" {
		return List[TaskSummary]{}, invalidf("group", "Tasks have no group; group filters assets.")
	}
	if err := oneOf("status", in.Status, taskStatuses); err != nil {
		return List[TaskSummary]{}, err
	}
	if err := oneOf("route", in.Route, routes); err != nil {
		return List[TaskSummary]{}, err
	}
	p, err := in.page()
	if err != nil {
		return List[TaskSummary]{}, err
	}
	limit := p.Limit
	p.Limit++
	tasks, err := st.SearchTasks(ctx, store.TaskFilter{TenantID: in.Tenant, KeyID: in.Key, Status: in.Status, Model: in.Alias,
		Route: in.Route, UpstreamJob: in.UpstreamJob, CreatedFrom: in.Since, CreatedTo: in.Until, Page: p})
	if err != nil {
		return List[TaskSummary]{}, fmt.Errorf("search tasks: %w", err)
	}
	tasks, more, next := page1(tasks, limit, func(t store.Task) (time.Time, string) { return t.CreatedAt, t.ID })
	out := make([]TaskSummary, 0, len(tasks))
	for _, t := range tasks {
		out = append(out, TaskSummary{Object: "task", ID: t.ID, Tenant: t.TenantID, KeyID: t.KeyID, Alias: t.Model, Route: t.Route,
			Status: t.Status, Progress: t.Progress, Reserved: t.Reserved, Charged: t.Charged, ErrorCode: t.ErrorCode,
			CreatedAt: t.CreatedAt.UTC(), FinishedAt: utc(t.FinishedAt)})
	}
	return newList(out, more, next), nil
}

// SearchSpeeches finds speech records by tenant, key, status, alias and creation time.
func (s *Service) SearchSpeeches(ctx context.Context, a Actor, in SearchInput) (List[SpeechSummary], error) {
	st, err := s.support(a)
	if err != nil {
		return List[SpeechSummary]{}, err
	}
	for _, f := range []struct{ name, v, why string }{{"route", in.Route, "Speech records have no route."},
		{"upstream_job", in.UpstreamJob, "Speech records have no upstream job."}, {"group", in.Group, "Speech records have no group."}} {
		if f.v != "" {
			return List[SpeechSummary]{}, invalidf(f.name, "%s", f.why)
		}
	}
	if err := oneOf("status", in.Status, speechStatuses); err != nil {
		return List[SpeechSummary]{}, err
	}
	p, err := in.page()
	if err != nil {
		return List[SpeechSummary]{}, err
	}
	limit := p.Limit
	p.Limit++
	recs, err := st.SearchSpeeches(ctx, store.SpeechFilter{TenantID: in.Tenant, KeyID: in.Key, Status: in.Status, Model: in.Alias,
		CreatedFrom: in.Since, CreatedTo: in.Until, Page: p})
	if err != nil {
		return List[SpeechSummary]{}, fmt.Errorf("search speech: %w", err)
	}
	recs, more, next := page1(recs, limit, func(r store.Speech) (time.Time, string) { return r.CreatedAt, r.ID })
	out := make([]SpeechSummary, 0, len(recs))
	for _, r := range recs {
		out = append(out, SpeechSummary{Object: "speech", ID: r.ID, Tenant: r.TenantID, KeyID: r.KeyID, Alias: r.Model, Status: r.Status,
			Reserved: r.Reserved, Charged: r.Charged, ErrorCode: r.ErrorCode, CreatedAt: r.CreatedAt.UTC(), FinishedAt: utc(r.FinishedAt)})
	}
	return newList(out, more, next), nil
}

// SearchAssets finds assets by tenant, key, group, status and creation time.
func (s *Service) SearchAssets(ctx context.Context, a Actor, in SearchInput) (List[AssetSummary], error) {
	st, err := s.support(a)
	if err != nil {
		return List[AssetSummary]{}, err
	}
	for _, f := range []struct{ name, v, why string }{{"route", in.Route, "Assets have no route."},
		{"upstream_job", in.UpstreamJob, "Assets have no upstream job."}, {"alias", in.Alias, "Assets have no alias."}} {
		if f.v != "" {
			return List[AssetSummary]{}, invalidf(f.name, "%s", f.why)
		}
	}
	if err := oneOf("status", in.Status, assetStatuses); err != nil {
		return List[AssetSummary]{}, err
	}
	p, err := in.page()
	if err != nil {
		return List[AssetSummary]{}, err
	}
	limit := p.Limit
	p.Limit++
	recs, err := st.SearchAssets(ctx, store.AssetFilter{TenantID: in.Tenant, KeyID: in.Key, GroupID: in.Group, Status: in.Status,
		CreatedFrom: in.Since, CreatedTo: in.Until, Page: p})
	if err != nil {
		return List[AssetSummary]{}, fmt.Errorf("search assets: %w", err)
	}
	recs, more, next := page1(recs, limit, func(r store.Asset) (time.Time, string) { return r.CreatedAt, r.ID })
	out := make([]AssetSummary, 0, len(recs))
	for _, r := range recs {
		out = append(out, AssetSummary{Object: "asset", ID: r.ID, Tenant: r.TenantID, GroupID: r.GroupID, Library: r.Library,
			Name: r.Name, Type: r.Type, Status: r.Status, CreatedAt: r.CreatedAt.UTC()})
	}
	return newList(out, more, next), nil
}

// KeyLedgerTxn is a ledger transaction of a key with what it is about (a task or speech id,
// an operator's credit).
type KeyLedgerTxn struct {
	LedgerTxn
	Ref string `json:"ref,omitempty"`
}

// KeyLedgerMax bounds KeyLedger's limit.
const KeyLedgerMax = 200

// KeyLedger lists the latest ledger transactions on a key's accounts, newest first (the
// console's key page). A read: viewers may.
func (s *Service) KeyLedger(ctx context.Context, a Actor, keyID string, limit int) ([]KeyLedgerTxn, error) {
	st, err := s.support(a)
	if err != nil {
		return nil, err
	}
	if err := checkID("key", keyID); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > KeyLedgerMax {
		return nil, invalidf("limit", "limit must be between 1 and %d.", KeyLedgerMax)
	}
	txns, err := st.KeyLedger(ctx, keyID, limit)
	if err != nil {
		return nil, fmt.Errorf("ledger of key %s: %w", keyID, err)
	}
	out := make([]KeyLedgerTxn, 0, len(txns))
	for _, t := range txns {
		lt := KeyLedgerTxn{Ref: t.Ref}
		lt.LedgerTxn = LedgerTxn{ID: t.ID, Kind: t.Kind, Note: t.Note, CreatedAt: t.CreatedAt.UTC(), Entries: make([]LedgerEntry, 0, len(t.Entries))}
		for _, e := range t.Entries {
			lt.Entries = append(lt.Entries, LedgerEntry{Account: e.Account, Amount: e.Amount})
		}
		out = append(out, lt)
	}
	return out, nil
}
