package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TempGrace is how long a temporary file may go unwritten before the Sweeper treats it as
// abandoned by a crashed write and removes it. A write in progress keeps touching its file.
const TempGrace = time.Hour

// readDirBatch bounds the directory entries held in memory at once.
const readDirBatch = 256

// Sweeper deletes objects older than the retention period. Several processes may sweep the
// same root; deletions are idempotent. It has no loop of its own: Sweep is the handler of a
// periodic job.
type Sweeper struct {
	Store *FS
	// Objects is the store to sweep when it is not a filesystem (S3): its objects are listed
	// and deleted by key. Set Store or Objects.
	Objects   Lister
	Retention time.Duration // objects whose ModTime is older than now-Retention are deleted; must be > 0
	Prefixes  []string      // key prefixes (directories) to sweep; the whole store when empty
	Logger    *slog.Logger  // optional
	Metrics   prometheus.Registerer

	metricsOnce sync.Once
	files       prometheus.Counter
	bytes       prometheus.Counter
	sweeps      *prometheus.CounterVec
}

// Sweep is one pass over the store at the current time, logged: the handler of the periodic
// retention job (the job engine runs it every hour in one process per disk).
func (sw *Sweeper) Sweep(ctx context.Context) error {
	n, err := sw.SweepOnce(ctx, time.Now())
	switch {
	case err != nil:
		return fmt.Errorf("blob sweep (deleted %d): %w", n, err)
	case n > 0:
		sw.logger().InfoContext(ctx, "blob sweep", "deleted", n)
	}
	return nil
}

// Lister is a store whose objects can be listed: what the Sweeper needs of a store that is
// not a filesystem.
type Lister interface {
	List(ctx context.Context, prefix string, fn func(Info) error) error
	Delete(ctx context.Context, key string) error
}

func (sw *Sweeper) check() error {
	if (sw.Store == nil) == (sw.Objects == nil) {
		return errors.New("blob: a sweeper needs one store: Store or Objects")
	}
	if sw.Retention <= 0 {
		return errors.New("blob: sweeper retention must be positive")
	}
	for _, p := range sw.Prefixes {
		if err := ValidateKey(strings.TrimSuffix(p, "/")); err != nil {
			return err
		}
	}
	return nil
}

func (sw *Sweeper) logger() *slog.Logger {
	if sw.Logger != nil {
		return sw.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// RegisterMetrics registers the sweeper's series on Metrics now rather than at the first
// sweep, so that they are scraped (at 0) from the start: an alert on failed sweeps needs
// the series before the first failure.
func (sw *Sweeper) RegisterMetrics() { sw.initMetrics() }

// Outcome labels of mediagen_blob_sweeps_total: ok, or failed (an object could not be
// listed or deleted, or the sweep was cut short); a failed sweep deleted what it could.
var sweepOutcomes = []string{"ok", "failed"}

func (sw *Sweeper) initMetrics() {
	sw.metricsOnce.Do(func() {
		if sw.Metrics == nil {
			return
		}
		sw.files = registerShared(sw.Metrics, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mediagen_blob_swept_files_total",
			Help: "Stored objects deleted by the retention sweeper.",
		}))
		sw.bytes = registerShared(sw.Metrics, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mediagen_blob_swept_bytes_total",
			Help: "Bytes of stored objects deleted by the retention sweeper.",
		}))
		sw.sweeps = registerShared(sw.Metrics, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mediagen_blob_sweeps_total",
			Help: "Retention sweeps by outcome: ok, or failed (some objects could not be listed or deleted; see the error log).",
		}, []string{"outcome"}))
		if sw.sweeps != nil {
			for _, o := range sweepOutcomes {
				sw.sweeps.WithLabelValues(o)
			}
		}
	})
}

// registerShared registers c, or returns the collector already registered under its name
// (two sweepers on one registry share it); nil when neither is possible.
func registerShared[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		var zero C
		return zero
	}
	return c
}

// sweep is the state of one SweepOnce.
type sweep struct {
	ctx        context.Context
	cutoff     time.Time // objects modified before are deleted
	tempCutoff time.Time // temporary files modified before are deleted
	deleted    int
	bytes      int64
	temps      int
	errs       []error // the first maxSweepErrors
	dropped    int     // errors beyond those
}

const maxSweepErrors = 10

func (st *sweep) fail(err error) {
	if len(st.errs) < maxSweepErrors {
		st.errs = append(st.errs, err)
	} else {
		st.dropped++
	}
}

// SweepOnce deletes the objects (under Prefixes, or everywhere) whose ModTime is before
// now-Retention, removes temporary files not written for TempGrace, and removes directories
// left empty (never the root or a prefix directory itself). Hidden names other than temporary
// files, and names that could not be keys, are left alone. It returns the number of objects
// deleted; errors on single entries do not stop the sweep and are joined in err.
func (sw *Sweeper) SweepOnce(ctx context.Context, now time.Time) (deleted int, err error) {
	if err := sw.check(); err != nil {
		return 0, err
	}
	sw.initMetrics()
	st := &sweep{ctx: ctx, cutoff: now.Add(-sw.Retention), tempCutoff: now.Add(-TempGrace)}
	if sw.Objects != nil {
		sw.listed(st)
	} else {
		sw.walk(st)
	}
	if sw.files != nil {
		sw.files.Add(float64(st.deleted))
	}
	if sw.bytes != nil {
		sw.bytes.Add(float64(st.bytes))
	}
	if st.temps > 0 {
		sw.logger().InfoContext(ctx, "blob sweep removed abandoned temporary files", "count", st.temps)
	}
	if st.dropped > 0 {
		st.errs = append(st.errs, fmt.Errorf("blob: sweep: %d more errors", st.dropped))
	}
	if err := ctx.Err(); err != nil {
		st.errs = append(st.errs, err)
	}
	err = errors.Join(st.errs...)
	if sw.sweeps != nil {
		outcome := "ok"
		if err != nil {
			outcome = "failed"
		}
		sw.sweeps.WithLabelValues(outcome).Inc()
	}
	return st.deleted, err
}

// listed sweeps a store by listing its objects (S3: there are no temporary files, as an
// object exists only once its upload completed, and no directories).
func (sw *Sweeper) listed(st *sweep) {
	prefixes := sw.Prefixes
	if len(prefixes) == 0 {
		prefixes = []string{""}
	}
	for _, p := range prefixes {
		err := sw.Objects.List(st.ctx, p, func(o Info) error {
			if !o.ModTime.Before(st.cutoff) {
				return st.ctx.Err()
			}
			if err := sw.Objects.Delete(st.ctx, o.Key); err != nil {
				st.fail(err)
				return st.ctx.Err()
			}
			st.deleted++
			st.bytes += o.Size
			return st.ctx.Err()
		})
		if err != nil {
			st.fail(err)
		}
	}
}

// walk sweeps the filesystem store.
func (sw *Sweeper) walk(st *sweep) {
	ctx := st.ctx
	var roots []string
	if len(sw.Prefixes) == 0 {
		roots = []string{sw.Store.root}
	}
	for _, p := range sw.Prefixes {
		roots = append(roots, sw.Store.path(strings.TrimSuffix(p, "/")))
	}
	for _, root := range roots {
		if ctx.Err() != nil {
			break
		}
		st.dir(root, true)
	}
}

// dir sweeps one directory, depth first, reading it in batches so that memory does not grow
// with the directory's size. It reports whether the directory still exists afterwards.
func (st *sweep) dir(dir string, top bool) (exists bool) {
	f, err := os.Open(dir)
	if err != nil {
		if notFound(err) {
			return false
		}
		st.fail(err)
		return true
	}
	defer f.Close()
	kept := false
	for st.ctx.Err() == nil {
		ents, err := f.ReadDir(readDirBatch)
		for _, e := range ents {
			if st.ctx.Err() != nil {
				return true
			}
			if st.entry(dir, e) {
				kept = true
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			st.fail(err)
			return true
		}
	}
	if top || kept || st.ctx.Err() != nil {
		return true
	}
	// Fails harmlessly (ENOTEMPTY) if a writer has just put something in it.
	return os.Remove(dir) != nil
}

// entry handles one directory entry, reporting whether it is kept.
func (st *sweep) entry(dir string, e fs.DirEntry) (kept bool) {
	name := e.Name()
	full := filepath.Join(dir, name)
	switch {
	case strings.HasPrefix(name, tempPrefix) && e.Type().IsRegular():
		return !st.remove(full, st.tempCutoff, func(int64) { st.temps++ })
	case validSegment(name) != nil:
		return true // hidden or foreign: not ours
	case e.IsDir():
		return st.dir(full, false)
	case e.Type().IsRegular():
		return !st.remove(full, st.cutoff, func(size int64) { st.deleted++; st.bytes += size })
	default:
		return true // symlinks, devices: not objects
	}
}

// remove deletes the file when it was modified before cutoff, reporting whether it is gone.
func (st *sweep) remove(path string, cutoff time.Time, counted func(size int64)) bool {
	fi, err := os.Lstat(path)
	if err != nil {
		if notFound(err) {
			return true
		}
		st.fail(err)
		return false
	}
	if !fi.ModTime().Before(cutoff) {
		return false
	}
	if err := os.Remove(path); err != nil {
		if notFound(err) {
			return true
		}
		st.fail(err)
		return false
	}
	counted(fi.Size())
	return true
}
