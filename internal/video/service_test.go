package video

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"mediagen/internal/apierr"
	"mediagen/internal/billing"
	"mediagen/internal/catalog"
	"mediagen/internal/contract"
	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

// fakeStore is the video service's Store in memory: tasks, jobs and the key's available and
// reserved money. A transaction's writes are staged and applied only when it returns nil,
// so a refused create can be checked to have written nothing.
type fakeStore struct {
	mu        sync.Mutex
	tasks     map[string]store.Task
	jobs      map[string]store.Job
	available map[string]money.Micros // by key id
	reserved  map[string]money.Micros
	postings  int
}

func newFakeStore(keyID string, available money.Micros) *fakeStore {
	return &fakeStore{tasks: map[string]store.Task{}, jobs: map[string]store.Job{},
		available: map[string]money.Micros{keyID: available}, reserved: map[string]money.Micros{}}
}

func (f *fakeStore) Transact(ctx context.Context, fn func(store.Tx) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	tx := &fakeTx{f: f}
	if err := fn(tx); err != nil {
		return err
	}
	for _, apply := range tx.staged {
		apply()
	}
	return nil
}

func (f *fakeStore) Task(_ context.Context, id string) (store.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tasks[id]
	if !ok {
		return store.Task{}, store.ErrNotFound
	}
	return t, nil
}

func (f *fakeStore) TaskByRequestID(_ context.Context, keyID, crid string) (store.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.tasks {
		if t.KeyID == keyID && t.ClientRequestID == crid && crid != "" {
			return t, nil
		}
	}
	return store.Task{}, store.ErrNotFound
}

// fakeTx implements the writes a create makes; any other method of store.Tx panics (nil
// embedded interface), which a test would show at once.
type fakeTx struct {
	store.Tx
	f      *fakeStore
	staged []func()
}

func (t *fakeTx) CreateTask(_ context.Context, task store.Task) error {
	for _, other := range t.f.tasks {
		if other.KeyID == task.KeyID && task.ClientRequestID != "" && other.ClientRequestID == task.ClientRequestID {
			return store.ErrConflict
		}
	}
	t.staged = append(t.staged, func() { t.f.tasks[task.ID] = task })
	return nil
}

func (t *fakeTx) EnqueueJob(_ context.Context, j store.Job) error {
	t.staged = append(t.staged, func() { t.f.jobs[j.ID] = j })
	return nil
}

func (t *fakeTx) InFlight(_ context.Context, kind store.InFlightKind, keyID, tenantID string) (store.InFlight, error) {
	var n store.InFlight
	if kind != store.InFlightTasks {
		return n, fmt.Errorf("fake tx counts video tasks only, not %s", kind)
	}
	for _, task := range t.f.tasks {
		if !store.Terminal(task.Status) {
			if task.KeyID == keyID {
				n.Key++
			}
			if task.TenantID == tenantID {
				n.Tenant++
			}
		}
	}
	return n, nil
}

// Post applies a reservation: available → reserved, never below zero.
func (t *fakeTx) Post(_ context.Context, txn store.Txn) error {
	var amount money.Micros
	var keyID string
	for _, e := range txn.Entries {
		if id, ok := cutSuffix(e.Account, ":"+string(store.AccountReserved)); ok {
			keyID, amount = id, e.Amount
		}
	}
	if txn.Kind != "reserve" || keyID == "" {
		return fmt.Errorf("fake store: unexpected posting %+v", txn)
	}
	if t.f.available[keyID] < amount {
		return store.ErrInsufficientFunds
	}
	t.staged = append(t.staged, func() {
		t.f.available[keyID] -= amount
		t.f.reserved[keyID] += amount
		t.f.postings++
	})
	return nil
}

func cutSuffix(s, suffix string) (string, bool) {
	if len(s) > len(suffix) && s[len(s)-len(suffix):] == suffix {
		return s[:len(s)-len(suffix)], true
	}
	return "", false
}

// fakeProber measures every source as seconds long.
type fakeProber struct{ seconds float64 }

func (p fakeProber) Check(string, bool) error { return nil }
func (p fakeProber) MeasureVideo(context.Context, string, bool) (float64, error) {
	return p.seconds, nil
}

func demoCaller(t *testing.T) keys.Caller {
	t.Helper()
	tenant, ok := catalog.Demo().Tenant("demo")
	if !ok {
		t.Fatal("no demo tenant")
	}
	return keys.Caller{Key: store.Key{ID: "key_1", TenantID: tenant.ID}, Tenant: tenant}
}

func newService(st *fakeStore, sourceSeconds float64) *Service {
	return &Service{Store: st, Prober: fakeProber{seconds: sourceSeconds}, Now: func() time.Time { return time.Unix(1_800_000_000, 0) }}
}

const nativeBody = `{"model":"demo-video-fast","prompt":"a red kite","metadata":{"duration":4,"resolution":"480p","ratio":"16:9","client_request_id":"r-1"}}`

func TestCreateReservesTheEstimateAndEnqueuesTheTasksJob(t *testing.T) {
	t.Parallel()
	c := demoCaller(t)
	st := newFakeStore(c.Key.ID, 100*money.Scale)
	var scheduled []string
	s := newService(st, 0)
	s.Scheduled = func(id string) { scheduled = append(scheduled, id) }
	task, created, err := s.Create(t.Context(), c, []byte(nativeBody))
	if err != nil || !created {
		t.Fatalf("create: %v (created %v)", err, created)
	}
	alias, _ := c.Tenant.Alias("demo-video-fast")
	req := decodeBody(t, nativeBody, product(alias), entitlements(c.Tenant.Packages))
	want, err := billing.EstimateNative(c.Tenant, alias, req.Native)
	if err != nil {
		t.Fatal(err)
	}
	if task.Status != store.StatusQueued || task.Reserved != want.Amount || task.KeyID != c.Key.ID || task.Route != "native" {
		t.Errorf("task %+v, want queued with reservation %s", task, want.Amount)
	}
	if st.reserved[c.Key.ID] != want.Amount || st.available[c.Key.ID] != 100*money.Scale-want.Amount {
		t.Errorf("reserved %s, available %s; want %s reserved", st.reserved[c.Key.ID], st.available[c.Key.ID], want.Amount)
	}
	if j, ok := st.jobs[TaskKind+":"+task.ID]; !ok || j.Ref != task.ID || j.Kind != TaskKind || j.TenantID != "demo" {
		t.Errorf("job %+v (%v), want the task's job", j, ok)
	}
	if len(scheduled) != 1 || scheduled[0] != task.ID {
		t.Errorf("scheduled %v", scheduled)
	}
}

func TestCreateReplayAnswersTheOriginalOrAConflict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		second   string
		wantKind apierr.Kind // 0: the original task again
	}{
		{"the same body answers the original", nativeBody, 0},
		{"the same body with other spacing answers the original",
			`{ "model": "demo-video-fast", "prompt": "a red kite", "metadata": {"ratio":"16:9","resolution":"480p","duration":4,"client_request_id":"r-1"} }`, 0},
		{"another body with the same id is a conflict",
			`{"model":"demo-video-fast","prompt":"a blue kite","metadata":{"duration":4,"resolution":"480p","ratio":"16:9","client_request_id":"r-1"}}`, apierr.KindIdempotency},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := demoCaller(t)
			st := newFakeStore(c.Key.ID, 100*money.Scale)
			s := newService(st, 0)
			first, _, err := s.Create(t.Context(), c, []byte(nativeBody))
			if err != nil {
				t.Fatal(err)
			}
			again, created, err := s.Create(t.Context(), c, []byte(tt.second))
			var ae *apierr.Error
			switch {
			case tt.wantKind == 0 && (err != nil || created || again.ID != first.ID):
				t.Errorf("replay: %+v created=%v err=%v; want the original %s", again, created, err, first.ID)
			case tt.wantKind != 0 && (!errors.As(err, &ae) || ae.Kind != tt.wantKind):
				t.Errorf("replay error %v, want kind %v", err, tt.wantKind)
			}
			if len(st.tasks) != 1 || len(st.jobs) != 1 || st.postings != 1 {
				t.Errorf("after the replay: %d tasks, %d jobs, %d postings; want one of each", len(st.tasks), len(st.jobs), st.postings)
			}
		})
	}
}

func TestCreateRefusalsWriteNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		available money.Micros
		body      string
		wantKind  apierr.Kind
		wantParam string
	}{
		{"an empty balance is 402", 0, nativeBody, apierr.KindInsufficientBalance, ""},
		{"a speech alias is not a video model", 100 * money.Scale, `{"model":"demo-speech","prompt":"x"}`, apierr.KindInvalid, "model"},
		{"an unknown alias is refused", 100 * money.Scale, `{"model":"nope","prompt":"x"}`, apierr.KindInvalid, "model"},
		{"a contract violation names its field", 100 * money.Scale,
			`{"model":"demo-video-fast","prompt":"x","metadata":{"duration":99}}`, apierr.KindInvalid, "metadata.duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := demoCaller(t)
			st := newFakeStore(c.Key.ID, tt.available)
			_, _, err := newService(st, 0).Create(t.Context(), c, []byte(tt.body))
			var ae *apierr.Error
			if !errors.As(err, &ae) || ae.Kind != tt.wantKind || ae.Param != tt.wantParam {
				t.Fatalf("error %v, want kind %v on %q", err, tt.wantKind, tt.wantParam)
			}
			if len(st.tasks) != 0 || len(st.jobs) != 0 || st.postings != 0 || st.available[c.Key.ID] != tt.available {
				t.Errorf("a refused create wrote: %d tasks, %d jobs, %d postings", len(st.tasks), len(st.jobs), st.postings)
			}
		})
	}
}

// An enhancement reserves on the source's measured length, never the declared one: a 60 s
// source declared as 2.5 s reserves for 61 s (measured + 0.25 s, rounded up).
func TestCreateEnhancementReservesOnTheMeasuredSource(t *testing.T) {
	t.Parallel()
	c := demoCaller(t)
	st := newFakeStore(c.Key.ID, 100*money.Scale)
	body := `{"model":"demo-enhance-lite","metadata":{"video_url":"https://cdn.example.com/a.mp4","duration":2.5,"resolution_limit":240,"fps":30}}`
	task, _, err := newService(st, 60).Create(t.Context(), c, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	alias, _ := c.Tenant.Alias("demo-enhance-lite")
	req := decodeBody(t, body, product(alias), entitlements(c.Tenant.Packages))
	declared, _ := billing.EstimateEnhancement(c.Tenant, contract.EnhRoute(alias.Route), req.Enhancement, 0)
	measured, _ := billing.EstimateEnhancement(c.Tenant, contract.EnhRoute(alias.Route), req.Enhancement, 60)
	if task.Reserved != measured.Amount || task.Reserved <= declared.Amount {
		t.Errorf("reserved %s; want the measured source's %s, above the declared length's %s", task.Reserved, measured.Amount, declared.Amount)
	}
}

func TestGetShowsATaskOnlyToItsKey(t *testing.T) {
	t.Parallel()
	c := demoCaller(t)
	st := newFakeStore(c.Key.ID, 100*money.Scale)
	s := newService(st, 0)
	task, _, err := s.Create(t.Context(), c, []byte(nativeBody))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(t.Context(), c, task.ID); err != nil || got.ID != task.ID {
		t.Errorf("owner's read: %+v %v", got, err)
	}
	other := c
	other.Key = store.Key{ID: "key_2", TenantID: c.Tenant.ID}
	for _, id := range []string{task.ID, "video_unknown"} {
		var ae *apierr.Error
		if _, err := s.Get(t.Context(), other, id); !errors.As(err, &ae) || ae.Kind != apierr.KindNotFound {
			t.Errorf("another key's read of %s: %v, want not found", id, err)
		}
	}
}

// pgTextStore answers Task as PostgreSQL does for a text parameter it cannot hold: with an
// error that is not store.ErrNotFound.
type pgTextStore struct{ *fakeStore }

func (p pgTextStore) Task(ctx context.Context, id string) (store.Task, error) {
	if !utf8.ValidString(id) || strings.ContainsRune(id, 0) {
		return store.Task{}, errors.New(`ERROR: invalid byte sequence for encoding "UTF8" (SQLSTATE 22021)`)
	}
	return p.fakeStore.Task(ctx, id)
}

func TestGetOfAnIdThatCannotBeOursIsNotFoundWithoutALookup(t *testing.T) {
	t.Parallel()
	c := demoCaller(t)
	st := newFakeStore(c.Key.ID, 0)
	s := newService(st, 0)
	s.Store = pgTextStore{st}
	_, want := s.Get(t.Context(), c, "video_unknown")
	for _, id := range []string{"\x00", "video_\x00", "\xff", "caf\xe9", "a b", ""} {
		_, err := s.Get(t.Context(), c, id)
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Kind != apierr.KindNotFound || err.Error() != want.Error() {
			t.Errorf("Get(%q): %v, want the unknown id's %v", id, err, want)
		}
	}
}

// fakeAssets is an asset library that answers each id as the real one would.
type fakeAssets map[string]struct {
	a   Asset
	err error
}

func (f fakeAssets) Resolve(_ context.Context, _ string, id string) (Asset, error) {
	r, ok := f[id]
	if !ok {
		return Asset{}, ErrAssetNotFound
	}
	return r.a, r.err
}

// Every refusal of an asset:// reference names the content item's url in param, whether the
// video service words it (unknown, not Active, wrong type) or the library does (a group the
// operator revoked, 403 asset_group_not_authorized); and nothing is written.
func TestAssetRefusalsNameTheContentItem(t *testing.T) {
	t.Parallel()
	revoked := &apierr.Error{Kind: apierr.KindPermission, Code: "asset_group_not_authorized",
		Message: `Asset "asset_revoked" is in an asset group that is no longer authorized for this account; it cannot be used. Contact the operator.`}
	lib := fakeAssets{
		"asset_ok":         {a: Asset{ID: "asset_ok", Type: AssetImage, Status: AssetActive}},
		"asset_processing": {a: Asset{ID: "asset_processing", Type: AssetImage, Status: "Processing"}},
		"asset_clip":       {a: Asset{ID: "asset_clip", Type: AssetVideo, Status: AssetActive, Duration: 5}},
		"asset_revoked":    {err: revoked},
	}
	tests := []struct {
		name     string
		id       string
		wantKind apierr.Kind
		wantCode string
	}{
		{"an unknown asset is 400", "asset_nope", apierr.KindInvalid, ""},
		{"an asset still processing is 400", "asset_processing", apierr.KindInvalid, ""},
		{"an asset of the wrong type is 400", "asset_clip", apierr.KindInvalid, ""},
		{"an asset in a revoked group is 403", "asset_revoked", apierr.KindPermission, "asset_group_not_authorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := demoCaller(t)
			st := newFakeStore(c.Key.ID, 100*money.Scale)
			s := newService(st, 0)
			s.Assets = lib
			body := `{"model":"demo-video-2.5","prompt":"@Image1 @Image2","metadata":{"resolution":"480p","content":[` +
				`{"type":"image_url","role":"reference_image","image_url":{"url":"asset://asset_ok"}},` +
				`{"type":"image_url","role":"reference_image","image_url":{"url":"asset://` + tt.id + `"}}]}}`
			_, _, err := s.Create(t.Context(), c, []byte(body))
			var ae *apierr.Error
			if !errors.As(err, &ae) || ae.Kind != tt.wantKind || ae.Param != "metadata.content[1].image_url.url" || (tt.wantCode != "" && ae.Code != tt.wantCode) {
				t.Fatalf("error %#v, want kind %v code %q on metadata.content[1].image_url.url", err, tt.wantKind, tt.wantCode)
			}
			if len(st.tasks) != 0 || len(st.jobs) != 0 || st.postings != 0 {
				t.Errorf("a refused create wrote: %d tasks, %d jobs, %d postings", len(st.tasks), len(st.jobs), st.postings)
			}
		})
	}
	if revoked.Param != "" {
		t.Errorf("the library's error was changed in place: param %q", revoked.Param)
	}
}

// decodeBody decodes a create body as the service does (one parse, then Decode).
func decodeBody(t *testing.T, body string, p contract.Product, e contract.Entitlements) *contract.VideoRequest {
	t.Helper()
	v, err := contract.ParseVideo([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	req, err := v.Decode(p, e)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
