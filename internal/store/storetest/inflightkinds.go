package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"mediagen/internal/store"
)

// inFlightCase is one kind of in-flight work (store.InFlightKind) as the conformance suite
// drives it: how a key makes a record that counts, the writes that must move no count, and
// the ways a record stops counting. inflight.go runs the same cases over every kind.
type inFlightCase struct {
	kind store.InFlightKind
	// creator prepares, outside any transaction, what records of the tenants need (an
	// asset's group) and returns how a key creates one.
	creator func(t *testing.T, s store.Store, tenants ...string) inFlightCreate
	// twinErr is what a record's twin returns.
	twinErr error
	// keep are writes to a counted record that leave it counted.
	keep []inFlightEnd
	// ends are every way a record stops counting; each applies to a record still counted.
	ends []inFlightEnd
	// late applies ends to records already ended: each moves no count.
	late []lateEnd
	// stored counts the key's records, so a refused create is seen to leave none.
	stored func(ctx context.Context, s store.Store, k store.Key) (int, error)
}

// inFlightCreate writes one counted record of key k in tx, with what the service writes along
// with it (a task's or an asset's job).
type inFlightCreate func(ctx context.Context, tx store.Tx, k store.Key) (inFlightRecord, error)

// inFlightRecord is a created record as its ends need it.
type inFlightRecord struct {
	id    string
	token string // a speech record's attempt token, which fences its finish
	// twin writes a record like this one that must not count: a duplicate client_request_id,
	// or an asset created already Failed. It returns the case's twinErr.
	twin func(ctx context.Context, tx store.Tx) error
}

// inFlightEnd is a write to one record.
type inFlightEnd struct {
	name  string
	write func(ctx context.Context, tx store.Tx, r inFlightRecord) error
}

// lateEnd applies ends[end] to the record that ends[rec] ended; it must return want.
type lateEnd struct {
	rec, end int
	want     error
}

// inFlightCases holds every kind in store.InFlightKinds.
var inFlightCases = []inFlightCase{
	{
		kind:    store.InFlightTasks,
		creator: func(*testing.T, store.Store, ...string) inFlightCreate { return createCountedTask },
		twinErr: store.ErrConflict,
		keep:    []inFlightEnd{advanceTask(store.StatusInProgress)},
		ends:    []inFlightEnd{advanceTask(store.StatusCompleted), advanceTask(store.StatusFailed), advanceTask(store.StatusExpired)},
		late:    []lateEnd{{rec: 2, end: 1, want: store.ErrLeaseLost}},
		stored: func(ctx context.Context, s store.Store, k store.Key) (int, error) {
			got, err := s.SearchTasks(ctx, store.TaskFilter{KeyID: k.ID, Page: store.Page{Limit: store.SearchMaxLimit}})
			return len(got), err
		},
	},
	{
		kind:    store.InFlightSpeeches,
		creator: func(*testing.T, store.Store, ...string) inFlightCreate { return createCountedSpeech },
		twinErr: store.ErrConflict,
		ends:    []inFlightEnd{finishSpeech(store.SpeechCompleted), finishSpeech(store.SpeechFailed)},
		late:    []lateEnd{{rec: 0, end: 0, want: store.ErrLeaseLost}, {rec: 1, end: 0, want: store.ErrLeaseLost}},
		stored: func(ctx context.Context, s store.Store, k store.Key) (int, error) {
			got, err := s.SearchSpeeches(ctx, store.SpeechFilter{KeyID: k.ID, Page: store.Page{Limit: store.SearchMaxLimit}})
			return len(got), err
		},
	},
	{
		kind:    store.InFlightAssets,
		creator: assetCreator,
		twinErr: nil, // an asset not Processing has no ingestion to count
		ends: []inFlightEnd{
			finishAssetAs(store.AssetOutcome{Status: store.AssetActive, BlobKey: "assets/x.png"}),
			finishAssetAs(store.AssetOutcome{Status: store.AssetFailed, FailureCode: "source_unreachable"}),
			{name: "deleted while processing", write: func(ctx context.Context, tx store.Tx, r inFlightRecord) error {
				_, err := tx.DeleteAsset(ctx, r.id)
				return err
			}},
		},
		late: []lateEnd{
			{rec: 0, end: 1, want: store.ErrLeaseLost}, // a second finish
			{rec: 2, end: 0, want: store.ErrLeaseLost}, // a finish of a deleted asset
			{rec: 0, end: 2, want: nil},                // a delete of a finished asset
			{rec: 2, end: 2, want: store.ErrNotFound},  // a second delete
		},
		stored: func(ctx context.Context, s store.Store, k store.Key) (int, error) {
			got, err := s.SearchAssets(ctx, store.AssetFilter{KeyID: k.ID, Page: store.Page{Limit: store.SearchMaxLimit}})
			return len(got), err
		},
	},
}

// createCountedTask creates a queued task and its job, as the video service does.
func createCountedTask(ctx context.Context, tx store.Tx, k store.Key) (inFlightRecord, error) {
	task := newTask(k, fmt.Sprintf("req-%d", seq.Add(1)))
	if err := tx.CreateTask(ctx, task); err != nil {
		return inFlightRecord{}, err
	}
	err := tx.EnqueueJob(ctx, store.Job{ID: taskKind + ":" + task.ID, Kind: taskKind, Ref: task.ID, TenantID: task.TenantID,
		KeyID: task.KeyID, RunAt: task.CreatedAt, CreatedAt: task.CreatedAt})
	twin := task
	twin.ID = fmt.Sprintf("vid_%d", seq.Add(1))
	return inFlightRecord{id: task.ID, twin: func(ctx context.Context, tx store.Tx) error { return tx.CreateTask(ctx, twin) }}, err
}

func advanceTask(status string) inFlightEnd {
	return inFlightEnd{name: status, write: func(ctx context.Context, tx store.Tx, r inFlightRecord) error {
		a := store.Advance{ID: r.id, Status: status}
		if store.Terminal(status) {
			a.FinishedAt = time.Now()
		}
		return tx.AdvanceTask(ctx, a)
	}}
}

// createCountedSpeech creates a pending speech record.
func createCountedSpeech(ctx context.Context, tx store.Tx, k store.Key) (inFlightRecord, error) {
	sp := newSpeech(k, fmt.Sprintf("req-%d", seq.Add(1)), time.Now().Add(time.Minute))
	if err := tx.CreateSpeech(ctx, sp); err != nil {
		return inFlightRecord{}, err
	}
	twin := sp
	twin.ID, twin.AttemptToken = fmt.Sprintf("speech_%d", seq.Add(1)), fmt.Sprintf("att_%d", seq.Add(1))
	return inFlightRecord{id: sp.ID, token: sp.AttemptToken,
		twin: func(ctx context.Context, tx store.Tx) error { return tx.CreateSpeech(ctx, twin) }}, nil
}

func finishSpeech(status string) inFlightEnd {
	return inFlightEnd{name: status, write: func(ctx context.Context, tx store.Tx, r inFlightRecord) error {
		return tx.FinishSpeech(ctx, store.SpeechFinish{ID: r.id, Token: r.token, Status: status, FinishedAt: time.Now()})
	}}
}

// assetCreator makes an asset group for each tenant; a key's asset goes into its tenant's,
// Processing, with its ingestion job, as the asset service creates it.
func assetCreator(t *testing.T, s store.Store, tenants ...string) inFlightCreate {
	t.Helper()
	groups := map[string]store.AssetGroup{}
	for _, tenant := range tenants {
		groups[tenant] = newGroup(t, s, tenant, store.LibraryVirtual, store.GroupOriginTenant, time.Now())
	}
	return func(ctx context.Context, tx store.Tx, k store.Key) (inFlightRecord, error) {
		g, ok := groups[k.TenantID]
		if !ok {
			return inFlightRecord{}, fmt.Errorf("no asset group for tenant %s", k.TenantID)
		}
		now := time.Now()
		a := store.Asset{ID: fmt.Sprintf("asset_%d", seq.Add(1)), TenantID: g.TenantID, KeyID: k.ID, GroupID: g.ID,
			Library: g.Library, Name: "a", Type: "Image", SourceURL: "https://cdn.example.com/x",
			Status: store.AssetProcessing, CreatedAt: now, UpdatedAt: now}
		if err := tx.CreateAsset(ctx, a); err != nil {
			return inFlightRecord{}, err
		}
		err := tx.EnqueueJob(ctx, store.Job{ID: ingestKind + ":" + a.ID, Kind: ingestKind, Ref: a.ID,
			TenantID: a.TenantID, RunAt: now, CreatedAt: now})
		twin := a
		twin.ID, twin.Status = fmt.Sprintf("asset_%d", seq.Add(1)), store.AssetFailed
		return inFlightRecord{id: a.ID, twin: func(ctx context.Context, tx store.Tx) error { return tx.CreateAsset(ctx, twin) }}, err
	}
}

func finishAssetAs(o store.AssetOutcome) inFlightEnd {
	return inFlightEnd{name: o.Status, write: func(ctx context.Context, tx store.Tx, r inFlightRecord) error {
		o.ID, o.At = r.id, time.Now()
		return tx.FinishAsset(ctx, o)
	}}
}
