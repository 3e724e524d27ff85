package postgres_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/store"
	"mediagen/internal/store/postgres"
	"mediagen/internal/store/postgres/pgtest"
)

var benchSeq atomic.Int64

// BenchmarkCreateTaskOneKey creates tasks of one key from 32 goroutines: the hot create path's
// database part (task insert, in-flight counters, reservation), marked as the API marks it
// (store.ShareCommit), so concurrent creates share commits.
func BenchmarkCreateTaskOneKey(b *testing.B) {
	ctx := context.Background()
	db, err := postgres.Open(ctx, pgtest.URL(b))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	h := sha256.Sum256([]byte("bench"))
	k := store.Key{ID: "key_bench", TenantID: "acme", Name: "k", Prefix: "p", Hash: h[:], Unlimited: true, CreatedAt: time.Now()}
	if err := db.Transact(ctx, func(tx store.Tx) error { return tx.CreateKey(ctx, k, "USD") }); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := benchSeq.Add(1)
			now := time.Now().UTC()
			task := store.Task{ID: fmt.Sprintf("vid_%d", n), KeyID: k.ID, TenantID: k.TenantID, Route: "native", Model: "m",
				Status: store.StatusQueued, PayloadHash: []byte{1}, Request: []byte(`{}`), Pricing: []byte(`{}`), Reserved: 10,
				CreatedAt: now, UpdatedAt: now}
			err := db.Transact(store.ShareCommit(ctx, k.TenantID, k.ID), func(tx store.Tx) error {
				if err := tx.CreateTask(ctx, task); err != nil {
					return err
				}
				if _, err := tx.InFlight(ctx, store.InFlightTasks, k.ID, k.TenantID); err != nil {
					return err
				}
				return tx.Post(ctx, store.Txn{ID: fmt.Sprintf("txn_%d", n), Kind: "reserve", Ref: task.ID, CreatedAt: now,
					Entries: []store.Entry{{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: -10},
						{Account: store.AccountID(k.ID, store.AccountReserved), Amount: 10}}})
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}
