package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/store"
)

func newTask(k store.Key, crid string) store.Task {
	now := time.Now().UTC()
	return store.Task{
		ID: fmt.Sprintf("vid_%d", seq.Add(1)), KeyID: k.ID, TenantID: k.TenantID, Route: "native", Model: "alias-a",
		Status: store.StatusQueued, ClientRequestID: crid, PayloadHash: []byte{1, 2, 3},
		Request: []byte(`{"a":1}`), Pricing: []byte(`{"rate":1}`), Reserved: 1234,
		CreatedAt: now, UpdatedAt: now,
	}
}

func testTaskCreateAndRead(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	task := newTask(k, "req-1")
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateTask(ctx, task) }); err != nil {
		t.Fatal(err)
	}
	got, err := s.Task(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != task.ID || got.KeyID != k.ID || got.Status != store.StatusQueued || got.Reserved != 1234 ||
		len(got.Request) != 0 || !bytes.Equal(got.PayloadHash, task.PayloadHash) ||
		got.Result != nil || got.CreatedAt.UnixMicro() != task.CreatedAt.UnixMicro() || !got.FinishedAt.IsZero() {
		t.Fatalf("read back %+v", got)
	}
	byReq, err := s.TaskByRequestID(ctx, k.ID, "req-1")
	if err != nil || byReq.ID != task.ID {
		t.Fatalf("by request id: %+v %v", byReq, err)
	}
	if _, err := s.Task(ctx, "vid_missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing task: %v", err)
	}
	other := newKey(t, s, "acme", false)
	if _, err := s.TaskByRequestID(ctx, other.ID, "req-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("request id leaked across keys: %v", err)
	}
	// Tasks without a client_request_id never collide with each other.
	for i := 0; i < 2; i++ {
		if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateTask(ctx, newTask(k, "")) }); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.TaskByRequestID(ctx, k.ID, ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("empty request id found a task: %v", err)
	}
}

func testTaskRequestIDUnique(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	other := newKey(t, s, "acme", false)
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateTask(ctx, newTask(other, "same")) }); err != nil {
		t.Fatal(err)
	}
	const n = 20
	var created, conflicts atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateTask(ctx, newTask(k, "same")) })
			switch {
			case err == nil:
				created.Add(1)
			case errors.Is(err, store.ErrConflict):
				conflicts.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if created.Load() != 1 || conflicts.Load() != n-1 {
		t.Fatalf("created %d, conflicts %d", created.Load(), conflicts.Load())
	}
}
