package jobs_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/jobs"
	"mediagen/internal/media/budget"
	"mediagen/internal/store"
	"mediagen/internal/tenantctx"
	"mediagen/internal/testkit"
)

// A run carries its job's tenant and key (tenantctx), and a run that waits in the media
// budget for many leases keeps its job: the heartbeat renews the lease while it waits, so a
// second engine on the same database never takes it over and the job runs once.
func TestARunWaitingForAMediaSlotKeepsItsLeaseAndCarriesItsTenant(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	media := budget.New(budget.Config{Size: 1})
	hold, err := media.Acquire(tenantctx.With(context.Background(), "other", "key_o"), "ffmpeg")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var owners [][2]string
	h := &handler{run: func(ctx context.Context, j jobs.Job, _ jobs.Checkpoint) (jobs.Outcome, error) {
		tenant, key := tenantctx.From(ctx)
		mu.Lock()
		owners = append(owners, [2]string{tenant, key})
		mu.Unlock()
		release, err := media.Acquire(ctx, "ffmpeg")
		if err != nil {
			return jobs.Outcome{}, err
		}
		release()
		return jobs.Outcome{Done: true}, nil
	}}
	// A lease long enough that a heartbeat delayed by a loaded machine (CI beside other work)
	// still renews it in time: the test is about the wait outliving leases, not about speed.
	const lease = time.Second
	kind := jobs.Kind{Name: "k", Handler: h, Poll: 5 * time.Millisecond, Lease: lease, Timeout: time.Minute}
	enqueue(t, db, store.Job{ID: jobs.ID("k", "a"), Kind: "k", Ref: "a", TenantID: "acme", KeyID: "key_a"})
	start(t, db, time.Now, prometheus.NewRegistry(), kind)
	start(t, db, time.Now, prometheus.NewRegistry(), kind)
	testkit.WaitFor(t, 10*time.Second, "the run not waiting for the slot", func() bool { return media.Usage().Waiting == 1 })
	waited := time.Now()
	testkit.WaitEvery(t, lease/2, 30*time.Second, "the wait not past three leases", func() bool { return time.Since(waited) > 3*lease })
	hold()
	testkit.WaitFor(t, 10*time.Second, "the job not done", func() bool { return jobCount(t, db, "k") == 0 })
	mu.Lock()
	defer mu.Unlock()
	if len(owners) != 1 || owners[0] != [2]string{"acme", "key_a"} {
		t.Fatalf("runs saw owners %v; want one run, as acme's key_a", owners)
	}
}
