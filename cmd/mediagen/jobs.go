package main

import (
	"fmt"
	"os"
	"time"

	"mediagen/internal/asset"
	"mediagen/internal/blob"
	"mediagen/internal/jobs"
	"mediagen/internal/speech"
	"mediagen/internal/video"
	"mediagen/internal/webhook"
)

// Job kinds this binary registers that live in no service: they are wiring of a handler that
// exists elsewhere (blob.Sweeper.Sweep).
const retentionKind = "blob.retention"

// registerJobs registers the job kinds this process's role runs on its engine. Each service
// exports its kinds (Kinds()), configured by the service itself; the role only chooses which
// of them run here: asset work in every role (an asset's copy is stored on the disk of the
// process that fetched it, or in the cluster's bucket), speech generation in every role that
// serves the API (a request's generation starts at once in the process that accepted it),
// video tasks and the retention sweep in the worker role.
func (m *Main) registerJobs(e *jobs.Engine, assets *asset.Service, tasks *video.Tasks, speechSvc *speech.Service, hooks *webhook.Service) error {
	c := &m.Config
	// Webhook deliveries run in every role: an event is due the moment its outcome commits,
	// whichever process committed it.
	kinds := append(assets.Kinds(), hooks.Kinds()...)
	if c.Role != "worker" {
		kinds = append(kinds, speechSvc.Kinds()...)
	}
	if c.Role != "api" {
		kinds = append(kinds, tasks.Kinds()...)
		if c.Retention > 0 {
			sw, scope := m.retentionSweeper(c.Retention)
			kinds = append(kinds, jobs.Kind{Name: retentionKind, Queue: scope,
				Handler: jobs.Periodic(sw.Sweep), Every: time.Hour, Workers: 1, Timeout: 30 * time.Minute})
		}
	}
	for _, k := range kinds {
		if k.Lease == 0 {
			k.Lease = c.JobLease
		}
		if err := e.Register(k); err != nil {
			return fmt.Errorf("job engine: %w", err)
		}
	}
	return nil
}

// retentionSweeper deletes results older than retention, and says the queue its periodic
// job runs on: one per disk, or one per bucket.
func (m *Main) retentionSweeper(retention time.Duration) (*blob.Sweeper, string) {
	sw := &blob.Sweeper{Retention: retention, Logger: m.log, Metrics: m.reg}
	var scope string
	switch s := m.blobs.(type) {
	case *blob.FS:
		// The results live on this process's disk, so each process sweeps its own:
		// the queue is the disk's scope, and one process per disk runs it at a time.
		sw.Store, scope = s, diskScope(s.Root())
	case *blob.S3:
		// One bucket for every replica: one retention job for all of them. Asset copies
		// share the bucket (under asset.KeyPrefix) and are not results: only the results'
		// prefixes are swept.
		sw.Objects, scope, sw.Prefixes = s, s.Scope(), resultPrefixes
	}
	sw.RegisterMetrics() // the failed-sweeps alert needs its series before the first sweep
	return sw, scope
}

// resultPrefixes are the key prefixes of what the retention sweep deletes in a shared bucket:
// video results (with their last frames and production intermediates) and speech audio.
var resultPrefixes = []string{video.KeyPrefix, speech.KeyPrefix}

// diskScope names a directory on this machine, for work that belongs to one disk.
func diskScope(dir string) string {
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	return host + ":" + dir
}
