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
