package main

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
	"github.com/minio/minio-go/v7"
	_ "modernc.org/sqlite" // the "sqlite" driver

	"mediagen/internal/provider/ark"
	pgstore "mediagen/internal/store/postgres"
	"mediagen/internal/store/sqlite"
)

// figures are what a run found; every one but the counts of work done must be 0 (or, for
// settlements, exactly one per ended task).
type figures struct {
	Mode            string         `json:"mode"`
	Seconds         float64        `json:"workload_seconds"`
	Kills           int            `json:"kills"`
	Outages         []string       `json:"outages"`
	Ops             map[string]int `json:"operations"`
	Refused         map[string]int `json:"refused,omitempty"`
	Retries         int64          `json:"retried_attempts"`
	Accepted        int            `json:"tasks_accepted"`
	Unknown         int            `json:"creates_outcome_unknown"`
	UnknownAccepted int            `json:"unknown_found_accepted"`
	ByStatus        map[string]int `json:"tasks_by_status"`
	Lost            int            `json:"tasks_lost"`
	NotTerminal     int            `json:"tasks_not_terminal"`
	NotTerminalIDs  []string       `json:"not_terminal_examples,omitempty"`
	DrainSeconds    float64        `json:"drain_seconds"`
	Settlements     map[int]int    `json:"settlements_per_ended_record"` // settlements → records
	BadSettlement   []string       `json:"bad_settlement_examples,omitempty"`
	LedgerOK        bool           `json:"ledger_invariants_hold"`
	LedgerErr       string         `json:"ledger_error,omitempty"`
	Completed       int            `json:"completed_results_checked"`
	Changed         int            `json:"results_changed"`
	Unreadable      int            `json:"completed_results_unreadable"`
	UnreadableErr   string         `json:"unreadable_example,omitempty"`
	Speeches        int            `json:"speeches"`
	SpeechChanged   int            `json:"speech_replays_changed"`
	// A replay that got no answer, or whose audio could not be read within the harness's
	// retry bounds, or whose first audio was never read: not "changed", each its own figure.
	SpeechUnanswered int            `json:"speech_replays_unanswered"`
	SpeechUnreadable int            `json:"speech_replays_unreadable"`
	SpeechUnseen     int            `json:"speech_first_audio_unread"`
	DownloadRefusals int64          `json:"downloads_refused_then_retried"` // 429/503 answers the harness waited out
	APIRefusals      int64          `json:"api_429s_waited_out"`            // API answers 429 the harness waited out
	NoRetryAfter     int64          `json:"refusals_without_retry_after"`
	Seen             []string       `json:"failures_seen,omitempty"` // what each failed check saw: status, hash
	Replays          int64          `json:"video_replays"`
	ReplayChanged    int64          `json:"video_replays_changed"`
	Objects          int            `json:"objects_in_store"`
	Orphans          int            `json:"orphan_objects"`
	OrphanExamples   []string       `json:"orphan_examples,omitempty"`
	ArkTasks         int            `json:"ark_tasks"`
	UpstreamJobs     map[int]int    `json:"upstream_jobs_per_ark_task"` // jobs → tasks
	CompletedNotOne  int            `json:"completed_ark_tasks_without_exactly_one_job"`
	ArkLostAnswers   int            `json:"ark_lost_answers"`
	ArkViolations    int            `json:"ark_wire_violations"`
	ReplicaRestarts  map[string]int `json:"replica_starts"`
	CheckedAt        time.Time      `json:"checked_at"`
	Failures         []string       `json:"failures"`
}

// openDB opens the service's database for the checks: the store (its own ledger check) and a
// plain handle for counting.
func openDB(ctx context.Context, dbURL string) (ledger func(context.Context) error, raw *sql.DB, closeFn func(), err error) {
	var st interface {
		CheckLedger(context.Context) error
		Close() error
	}
	if path, ok := strings.CutPrefix(dbURL, "sqlite:"); ok {
		st, err = sqlite.Open(ctx, path)
	} else {
		st, err = pgstore.Open(ctx, dbURL)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	raw, closeRaw, err := openRaw(dbURL)
	if err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	return st.CheckLedger, raw, func() { closeRaw(); st.Close() }, nil
}

// openRaw opens a plain handle on the database while the service runs (read-only on SQLite).
func openRaw(dbURL string) (*sql.DB, func(), error) {
	driver, dsn := "pgx", dbURL
	if path, ok := strings.CutPrefix(dbURL, "sqlite:"); ok {
		driver, dsn = "sqlite", "file:"+path+"?mode=ro"
	}
	raw, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, nil, err
	}
	return raw, func() { raw.Close() }, nil
}

// settlements counts, for every task and speech record that ended, the ledger transactions
// that settled it (settle or release; an overage is part of a settlement, not one).
func settlements(ctx context.Context, raw *sql.DB, f *figures) error {
	f.Settlements = map[int]int{}
	q := `SELECT r.id, r.status, (SELECT COUNT(*) FROM ledger_txns t WHERE t.ref = r.id AND t.kind IN ('settle', 'release')),
	             (SELECT COUNT(*) FROM ledger_txns t WHERE t.ref = r.id AND t.kind = 'reserve')
	      FROM (SELECT id, status FROM tasks UNION ALL SELECT id, status FROM speeches) r`
	rows, err := raw.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("settlements: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, status string
		var settled, reserved int
		if err := rows.Scan(&id, &status, &settled, &reserved); err != nil {
			return err
		}
		ended := status == "completed" || status == "failed"
		if !ended {
			if settled != 0 {
				f.BadSettlement = append(f.BadSettlement, fmt.Sprintf("%s %s settled %d times", id, status, settled))
			}
			continue
		}
		f.Settlements[settled]++
		if settled != 1 || reserved != 1 {
			if len(f.BadSettlement) < 10 {
				f.BadSettlement = append(f.BadSettlement, fmt.Sprintf("%s %s: %d reservations, %d settlements", id, status, reserved, settled))
			}
		}
	}
	return rows.Err()
}

// owners are the ids of every record that may own objects in the store.
func owners(ctx context.Context, raw *sql.DB) (map[string]bool, error) {
	ids := map[string]bool{}
	for _, q := range []string{"SELECT id FROM tasks", "SELECT id FROM speeches", "SELECT id FROM assets"} {
		rows, err := raw.QueryContext(ctx, q)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			ids[id] = true
		}
		rows.Close()
	}
	return ids, nil
}

// ownerOf is the record id in an object key: videos/<task>/…, speech/<id>/…, assets/<asset>/….
func ownerOf(key string) string {
	parts := strings.SplitN(key, "/", 3)
	if len(parts) < 3 {
		return ""
	}
	return parts[1]
}

// orphansS3 lists the bucket (under the cluster's prefix).
func orphansS3(ctx context.Context, c *minio.Client, bucket, prefix string, ids map[string]bool, f *figures) error {
	for o := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix + "/", Recursive: true}) {
		if o.Err != nil {
			return o.Err
		}
		f.Objects++
		key := strings.TrimPrefix(o.Key, prefix+"/")
		if !ids[ownerOf(key)] {
			f.Orphans++
			if len(f.OrphanExamples) < 10 {
				f.OrphanExamples = append(f.OrphanExamples, key)
			}
		}
	}
	return nil
}

// orphansFS walks the data directory's result and asset stores.
func orphansFS(dataDir string, ids map[string]bool, f *figures) error {
	for _, root := range []string{filepath.Join(dataDir, "blobs"), filepath.Join(dataDir, "assets")} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			if d.IsDir() || strings.HasPrefix(d.Name(), ".") {
				return nil
			}
			key, _ := filepath.Rel(root, p)
			f.Objects++
			if !ids[ownerOf(filepath.ToSlash(key))] {
				f.Orphans++
				if len(f.OrphanExamples) < 10 {
					f.OrphanExamples = append(f.OrphanExamples, key)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// upstreamJobs counts the fake Ark's paid jobs per task bound to it.
func upstreamJobs(w *workload, jobsFor func(tag string) int, f *figures) {
	f.UpstreamJobs = map[int]int{}
	for _, t := range w.tasks {
		if t.kind != "ark" {
			continue
		}
		f.ArkTasks++
		n := jobsFor(ark.Tag(t.id + ":gen"))
		f.UpstreamJobs[n]++
		if t.status == "completed" && n != 1 {
			f.CompletedNotOne++
		}
	}
}

// maxSeen bounds the lines of what failed checks saw, so a run that breaks everywhere still
// prints a readable report.
const maxSeen = 30

// seen notes what a failed check saw.
func (f *figures) seen(format string, args ...any) {
	if len(f.Seen) < maxSeen {
		f.Seen = append(f.Seen, fmt.Sprintf(format, args...))
	}
}

// verdict lists what broke.
func (f *figures) verdict(minKills int) {
	add := func(ok bool, format string, args ...any) {
		if !ok {
			f.Failures = append(f.Failures, fmt.Sprintf(format, args...))
		}
	}
	add(f.Kills >= minKills, "only %d kills (want %d)", f.Kills, minKills)
	add(f.Lost == 0, "%d accepted tasks lost", f.Lost)
	add(f.NotTerminal == 0, "%d tasks not terminal after the drain", f.NotTerminal)
	for n, c := range f.Settlements {
		add(n == 1, "%d ended records settled %d times", c, n)
	}
	add(len(f.BadSettlement) == 0, "settlement anomalies: %s", strings.Join(f.BadSettlement, "; "))
	add(f.LedgerOK, "ledger: %s", f.LedgerErr)
	add(f.Unreadable == 0, "%d completed results could not be downloaded: %s", f.Unreadable, f.UnreadableErr)
	add(f.Changed == 0, "%d completed results changed", f.Changed)
	add(f.SpeechChanged == 0, "%d speech replays answered other audio", f.SpeechChanged)
	add(f.SpeechUnanswered == 0, "%d speech replays got no answer", f.SpeechUnanswered)
	add(f.SpeechUnreadable == 0, "%d speech replays' audio could not be read", f.SpeechUnreadable)
	add(f.SpeechUnseen == 0, "%d speeches' first audio could not be read", f.SpeechUnseen)
	add(f.NoRetryAfter == 0, "%d file refusals (429) without Retry-After", f.NoRetryAfter)
	add(f.ReplayChanged == 0, "%d video replays answered another task", f.ReplayChanged)
	add(f.Orphans == 0, "%d orphan objects: %s", f.Orphans, strings.Join(f.OrphanExamples, ", "))
	for n, c := range f.UpstreamJobs {
		add(n <= 1, "%d ark tasks made %d upstream jobs", c, n)
	}
	add(f.CompletedNotOne == 0, "%d completed ark tasks without exactly one upstream job", f.CompletedNotOne)
	add(f.ArkViolations == 0, "%d requests broke Ark's wire format", f.ArkViolations)
	sort.Strings(f.Failures)
}
