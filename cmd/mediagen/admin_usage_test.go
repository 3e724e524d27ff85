package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mediagen/internal/store"
	"mediagen/internal/store/sqlite"
)

// TestAdminUsageReportsAndNeutralisesCSV: `mediagen admin usage` reads the rollups in every
// format; a key name and aliases chosen as formulas come out neutralised in CSV; bad flags are
// usage errors naming the flag; `usage rebuild` recomputes the rollups from the (here
// missing) settled records, audited.
func TestAdminUsageReportsAndNeutralisesCSV(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256([]byte("secret"))
	hour := time.Date(2026, 11, 1, 13, 0, 0, 0, time.UTC)
	err = db.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateKey(ctx, store.Key{ID: "key_evil", TenantID: "demo", Name: `=HYPERLINK("http://x","y")`, Prefix: "mg_x", Hash: h[:], CreatedAt: hour}, "USD"); err != nil {
			return err
		}
		var ds []store.UsageDelta
		for i, alias := range []string{"+1", "@x", "-x", `a,"b"`} {
			ds = append(ds, store.UsageDelta{
				UsageKey:     store.UsageKey{Hour: hour.Add(time.Duration(i) * time.Minute), TenantID: "demo", KeyID: "key_evil", Alias: alias, Route: "native", Upstream: "sandbox", Currency: "USD", Outcome: store.OutcomeSucceeded},
				UsageFigures: store.UsageFigures{Count: 1, Reserved: 2_000_000, Charged: 1_500_000, Refunded: 500_000, Tokens: 10}})
		}
		return tx.AddUsage(ctx, ds...)
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Close()

	var out bytes.Buffer
	admin := func(args ...string) error {
		out.Reset()
		return runAdmin(ctx, append(args, "--db", "sqlite:"+path), env(nil), &out, io.Discard)
	}
	if err := admin("usage", "--from", "2026-11-01", "--to", "2026-11-01", "--group-by", "key,alias", "--format", "csv"); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(out.String())).ReadAll()
	if err != nil || len(recs) != 5 {
		t.Fatalf("csv %v: %q", err, out.String())
	}
	aliases := map[string]bool{}
	for _, r := range recs[1:] {
		if r[0] != "key_evil" || r[1] != `'=HYPERLINK("http://x","y")` || r[3] != "USD" || r[4] != "1" || r[12] != "1.5" {
			t.Errorf("row %q", r)
		}
		aliases[r[2]] = true
	}
	for _, want := range []string{"'+1", "'@x", "'-x", `a,"b"`} {
		if !aliases[want] {
			t.Errorf("alias %q missing from %v", want, aliases)
		}
	}
	if err := admin("usage", "--from", "2026-11-01", "--group-by", "day", "--format", "json"); err != nil ||
		!strings.Contains(out.String(), `"day":"2026-11-01"`) || !strings.Contains(out.String(), `"charged":6,`) {
		t.Errorf("json: %v %s", err, out.String())
	}
	if err := admin("usage", "--from", "2026-11-01", "--to", "2026-11-01", "--group-by", "tenant"); err != nil ||
		!strings.Contains(out.String(), "TENANT") || !strings.Contains(out.String(), "TOTAL") {
		t.Errorf("table: %v %s", err, out.String())
	}
	for _, bad := range [][]string{
		{"usage", "--from", "2026-11-01", "--group-by", "alias,week"},
		{"usage", "--from", "last week"},
		{"usage", "--from", "2026-11-01", "--format", "xml"},
	} {
		var ue usageError
		if err := admin(bad...); !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", bad, err)
		}
	}
	if err := admin("usage", "--from", "2026-11-01", "--group-by", "week"); err == nil || !strings.Contains(err.Error(), "--group-by") {
		t.Errorf("the error names the flag: %v", err)
	}
	if err := admin("usage", "rebuild"); err != nil || !strings.Contains(out.String(), "rebuilt") {
		t.Fatalf("rebuild: %v %s", err, out.String())
	}
	if err := admin("audit", "--action", "usage.rebuild"); err != nil || !strings.Contains(out.String(), "usage.rebuild") {
		t.Errorf("the rebuild is not in the audit log: %v %s", err, out.String())
	}
	if err := admin("usage", "--from", "2026-11-01", "--to", "2026-11-01"); err != nil || !strings.Contains(out.String(), "no settlements") {
		t.Errorf("after a rebuild without settled records: %v %s", err, out.String())
	}
}

// TestAdminUsageRebuildOfDaysLeavesTheOthers: `usage rebuild -from -to` rewrites those days
// alone (here from no settled records: they empty), audited; one bound alone is a usage error.
func TestAdminUsageRebuildOfDaysLeavesTheOthers(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 11, 1, 13, 0, 0, 0, time.UTC)
	err = db.Transact(ctx, func(tx store.Tx) error {
		var ds []store.UsageDelta
		for i := range 2 {
			ds = append(ds, store.UsageDelta{
				UsageKey:     store.UsageKey{Hour: day.AddDate(0, 0, i), TenantID: "demo", KeyID: "key_a", Alias: "a", Route: "native", Upstream: "sandbox", Currency: "USD", Outcome: store.OutcomeSucceeded},
				UsageFigures: store.UsageFigures{Count: 1, Reserved: 1_000_000, Charged: 1_000_000}})
		}
		return tx.AddUsage(ctx, ds...)
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	var out bytes.Buffer
	admin := func(args ...string) error {
		out.Reset()
		return runAdmin(ctx, append(args, "--db", "sqlite:"+path), env(nil), &out, io.Discard)
	}
	for _, bad := range [][]string{{"usage", "rebuild", "--from", "2026-11-02"}, {"usage", "rebuild", "--from", "2026-11-02", "--to", "yesterday"}} {
		var ue usageError
		if err := admin(bad...); !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", bad, err)
		}
	}
	if err := admin("usage", "rebuild", "--from", "2026-11-02", "--to", "2026-11-02"); err != nil || !strings.Contains(out.String(), "2026-11-02 to 2026-11-03") {
		t.Fatalf("rebuild of a day: %v %s", err, out.String())
	}
	if err := admin("usage", "--from", "2026-11-01", "--to", "2026-11-02", "--group-by", "day", "--format", "json"); err != nil ||
		!strings.Contains(out.String(), `"day":"2026-11-01"`) || strings.Contains(out.String(), `"day":"2026-11-02"`) {
		t.Errorf("after the rebuild of 2026-11-02: %v %s", err, out.String())
	}
	if err := admin("audit", "--action", "usage.rebuild"); err != nil || !strings.Contains(out.String(), "usage.rebuild") {
		t.Errorf("the rebuild is not in the audit log: %v %s", err, out.String())
	}
}
