package postgres_test

import (
	"context"
	"testing"

	"mediagen/internal/store"
	"mediagen/internal/store/postgres"
	"mediagen/internal/store/postgres/pgtest"
	"mediagen/internal/store/storetest"
)

func TestConformancePostgres(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		db, err := postgres.Open(context.Background(), pgtest.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}

func TestConcurrentMigratorsApplyOnce(t *testing.T) {
	url := pgtest.URL(t)
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() {
			db, err := postgres.Open(context.Background(), url)
			if err == nil {
				_ = db.Close()
			}
			errs <- err
		}()
	}
	for i := 0; i < 3; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// Two store handles on one database are two replicas: the in-flight limit holds across them
// because the count lives in the database, locked by each create until it commits.
func TestInFlightLimitHoldsAcrossTwoReplicas(t *testing.T) {
	url := pgtest.URL(t)
	var handles []store.Store
	for i := 0; i < 2; i++ {
		db, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		handles = append(handles, db)
	}
	storetest.InFlightLimitHolds(t, handles, 7, 60)
}
