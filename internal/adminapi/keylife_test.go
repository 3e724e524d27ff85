package adminapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"mediagen/internal/keys"
	"mediagen/internal/store"
)

// Key lifecycle writes (PATCH /keys/{id}, /rotate, /debits) need the operator: a viewer is
// refused with nothing written, whatever the body.
func TestKeyLifecycleWritesRefusedForAViewer(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		key := e.makeKey(false)
		before, _ := e.st.Key(context.Background(), key)
		snap := e.snap()
		for _, c := range []struct{ method, path, body string }{
			{"PATCH", "/admin/v1/keys/" + key, `{"name":"x"}`},
			{"POST", "/admin/v1/keys/" + key + "/rotate", `{"grace":60}`},
			{"POST", "/admin/v1/keys/" + key + "/debits", `{"amount":1,"note":"x"}`},
			{"POST", "/admin/v1/keys", `{"tenant":"demo","credit":5,"daily_cap":1}`},
		} {
			for _, body := range []string{c.body, `{"garbage":`} {
				r := e.do(c.method, c.path, e.viewer, newIdem(), body)
				if code, _ := r.errCodeParam(t); r.status != http.StatusForbidden || code != "insufficient_role" {
					t.Errorf("%s %s as viewer: %d %s", c.method, c.path, r.status, r.body)
				}
			}
		}
		if after := e.snap(); after != snap {
			t.Errorf("refused writes changed the store: %+v → %+v", snap, after)
		}
		if after, _ := e.st.Key(context.Background(), key); after.Name != before.Name || string(after.Hash) != string(before.Hash) {
			t.Errorf("the key changed: %+v", after)
		}
	})
}

// The whole lifecycle through the API: create with expiry, caps and credit; update; rotate
// with grace; debit; each audited with before and after, and the ledger balanced.
func TestKeyLifecycleThroughTheAdminAPI(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		expires := e.clock.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
		r := e.write("/admin/v1/keys", e.oper, `{"tenant":"demo","name":"ci","expires_at":"`+expires+`","daily_cap":5,"monthly_cap":100.5,"credit":10}`)
		if r.status != http.StatusCreated {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		m := r.json(t)
		id, secret := m["id"].(string), m["secret"].(string)
		caps, _ := m["caps"].(map[string]any)
		bal, _ := m["balance"].(map[string]any)
		ic, _ := m["initial_credit"].(map[string]any)
		if m["expires_at"] != expires || caps["daily"] != 5.0 || caps["monthly"] != 100.5 || caps["spent_today"] != 0.0 ||
			bal["available"] != 10.0 || ic["amount"] != 10.0 || !keys.WellFormed(secret) {
			t.Fatalf("create answer %s", r.body)
		}
		if b, _ := e.st.Balance(ctx, id); b.Available != 10_000_000 {
			t.Fatalf("balance after create %+v", b)
		}

		r = e.do("PATCH", "/admin/v1/keys/"+id, e.oper, newIdem(), `{"name":"ci (old)","expires_at":"","daily_cap":"none","monthly_cap":7}`)
		m = r.json(t)
		if r.status != 200 || m["name"] != "ci (old)" || m["expires_at"] != nil || m["caps"].(map[string]any)["monthly"] != 7.0 || m["caps"].(map[string]any)["daily"] != nil {
			t.Fatalf("update: %d %s", r.status, r.body)
		}

		r = e.write("/admin/v1/keys/"+id+"/rotate", e.oper, `{"grace":3600}`)
		m = r.json(t)
		fresh, _ := m["secret"].(string)
		if r.status != 200 || !keys.WellFormed(fresh) || fresh == secret || m["previous_secret_valid_until"] == nil {
			t.Fatalf("rotate: %d %s", r.status, r.body)
		}
		for _, s := range []string{secret, fresh} {
			k, err := e.st.KeyByHash(ctx, keys.Hash(s))
			if err != nil || k.ID != id || keys.Usable(k, keys.Hash(s), e.clock.Now()) != nil {
				t.Errorf("secret %s… after rotation: %+v %v", s[:8], k, err)
			}
		}
		if k, _ := e.st.KeyByHash(ctx, keys.Hash(secret)); keys.Usable(k, keys.Hash(secret), e.clock.Now().Add(time.Hour)) == nil {
			t.Error("the old secret still works after its grace")
		}

		r = e.write("/admin/v1/keys/"+id+"/debits", e.oper, `{"amount":2.5,"note":"duplicate top-up"}`)
		if m := r.json(t); r.status != 201 || m["amount"] != 2.5 || m["object"] != "debit" {
			t.Fatalf("debit: %d %s", r.status, r.body)
		}
		before := e.snap()
		r = e.write("/admin/v1/keys/"+id+"/debits", e.oper, `{"amount":7.500001,"note":"too much"}`)
		if _, param := r.errCodeParam(t); r.status != 400 || param != "amount" || !strings.Contains(string(r.body), "below zero") {
			t.Fatalf("debit below zero: %d %s", r.status, r.body)
		}
		if after := e.snap(); after != before {
			t.Errorf("a refused debit wrote: %+v → %+v", before, after)
		}
		if b, _ := e.st.Balance(ctx, id); b.Available != 7_500_000 {
			t.Errorf("available %s, want 7.5", b.Available)
		}
		list, err := e.st.Audit(ctx, store.AuditQuery{TargetID: id, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		actions := map[string]store.AuditEntry{}
		for _, a := range list {
			actions[a.Action] = a
		}
		for _, a := range []string{"key.create", "key.update", "key.rotate", "debit.create"} {
			en, ok := actions[a]
			if !ok {
				t.Errorf("no %s audit entry", a)
				continue
			}
			if strings.Contains(string(en.After), secret[len(keys.Prefix):]) || strings.Contains(string(en.After), fresh[len(keys.Prefix):]) {
				t.Errorf("%s audit entry holds a secret: %s", a, en.After)
			}
			if (a == "key.update" || a == "key.rotate") && len(en.Before) == 0 {
				t.Errorf("%s audit entry without before", a)
			}
		}
		if err := e.st.CheckLedger(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// A debit replayed concurrently with one Idempotency-Key moves money once.
func TestDebitReplayedConcurrentlyMovesMoneyOnce(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		id := e.makeKey(false)
		if r := e.write("/admin/v1/keys/"+id+"/credits", e.oper, `{"amount":10}`); r.status != 201 {
			t.Fatalf("credit: %d %s", r.status, r.body)
		}
		idem := newIdem()
		var wg sync.WaitGroup
		bodies := make([]string, 10)
		for i := range bodies {
			wg.Go(func() {
				r := e.do("POST", "/admin/v1/keys/"+id+"/debits", e.oper, idem, `{"amount":1.5,"note":"fix"}`)
				if r.status != 201 {
					t.Errorf("replay %d: %d %s", i, r.status, r.body)
				}
				bodies[i] = string(r.body)
			})
		}
		wg.Wait()
		for i := range bodies {
			if bodies[i] != bodies[0] {
				t.Errorf("answer %d differs: %s vs %s", i, bodies[i], bodies[0])
			}
		}
		if b, _ := e.st.Balance(context.Background(), id); b.Available != 8_500_000 {
			t.Errorf("available %s after 10 replays of one debit of 1.5, want 8.5", b.Available)
		}
	})
}

// Bad input to the lifecycle endpoints is a 400 naming the member, with nothing written.
func TestKeyLifecycleBadInputIs400WithParam(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		key := e.makeKey(false)
		revoked := e.makeKey(false)
		if r := e.write("/admin/v1/keys/"+revoked+"/revoke", e.oper, `{}`); r.status != 200 {
			t.Fatal(r.status)
		}
		past := e.clock.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		for _, c := range []struct{ method, path, body, param string }{
			{"POST", "/admin/v1/keys", `{"tenant":"demo","expires_at":"` + past + `"}`, "expires_at"},
			{"POST", "/admin/v1/keys", `{"tenant":"demo","expires_at":"tomorrow"}`, "expires_at"},
			{"POST", "/admin/v1/keys", `{"tenant":"demo","daily_cap":-1}`, "daily_cap"},
			{"POST", "/admin/v1/keys", `{"tenant":"demo","credit":0}`, "credit"},
			{"POST", "/admin/v1/keys", `{"tenant":"demo","monthly_cap":"5"}`, "monthly_cap"},
			{"PATCH", "/admin/v1/keys/" + key, `{"colour":"red"}`, "colour"},
			{"PATCH", "/admin/v1/keys/" + key, `{"expires_at":"` + past + `"}`, "expires_at"},
			{"PATCH", "/admin/v1/keys/" + key, `{"monthly_cap":-2}`, "monthly_cap"},
			{"PATCH", "/admin/v1/keys/" + key, `{"daily_cap":null}`, "daily_cap"},
			{"PATCH", "/admin/v1/keys/" + key, `{}`, ""},
			{"PATCH", "/admin/v1/keys/" + revoked, `{"name":"x"}`, ""},
			{"POST", "/admin/v1/keys/" + key + "/rotate", `{"grace":-1}`, "grace"},
			{"POST", "/admin/v1/keys/" + key + "/rotate", `{"grace":7776001}`, "grace"},
			{"POST", "/admin/v1/keys/" + key + "/rotate", `{"grace":1.5}`, "grace"},
			{"POST", "/admin/v1/keys/" + revoked + "/rotate", ``, ""},
			{"POST", "/admin/v1/keys/" + key + "/debits", `{"amount":1}`, "note"},
			{"POST", "/admin/v1/keys/" + key + "/debits", `{"amount":-1,"note":"x"}`, "amount"},
			{"POST", "/admin/v1/keys/" + key + "/debits", `{"amount":1e2,"note":"x"}`, "amount"},
			{"POST", "/admin/v1/keys/" + key + "/debits", `{"amount":1,"note":" "}`, "note"},
		} {
			before := e.snap()
			k0, _ := e.st.Key(context.Background(), key)
			r := e.do(c.method, c.path, e.oper, newIdem(), c.body)
			_, param := r.errCodeParam(t)
			if r.status != 400 || param != c.param {
				t.Errorf("%s %s %s: %d %s, want 400 on %q", c.method, c.path, c.body, r.status, r.body, c.param)
			}
			if after := e.snap(); after != before {
				t.Errorf("%s %s %s wrote: %+v → %+v", c.method, c.path, c.body, before, after)
			}
			if k1, _ := e.st.Key(context.Background(), key); fmt.Sprint(k1) != fmt.Sprint(k0) {
				t.Errorf("%s %s %s changed the key", c.method, c.path, c.body)
			}
		}
		for _, path := range []string{"/admin/v1/keys/key_none/rotate", "/admin/v1/keys/key_none/debits"} {
			if r := e.write(path, e.oper, `{"amount":1,"note":"x"}`); r.status != 404 && r.status != 400 {
				t.Errorf("%s: %d %s", path, r.status, r.body)
			}
		}
		if r := e.write("/admin/v1/keys/key_none/rotate", e.oper, ``); r.status != 404 {
			t.Errorf("rotate unknown key: %d %s", r.status, r.body)
		}
		if r := e.do("PATCH", "/admin/v1/keys/key_none", e.oper, newIdem(), `{"name":"x"}`); r.status != 404 {
			t.Errorf("update unknown key: %d %s", r.status, r.body)
		}
	})
}

// A key past its expiry reads as "expired" (until revoked) and the listing's state filter
// follows the clock: the same key is active one second before.
func TestExpiredKeysShowAndFilterAsExpired(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		expires := e.clock.Now().Add(time.Hour).UTC().Truncate(time.Second)
		r := e.write("/admin/v1/keys", e.oper, `{"tenant":"demo","name":"short-lived","expires_at":"`+expires.Format(time.RFC3339)+`"}`)
		if r.status != http.StatusCreated {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		id := r.json(t)["id"].(string)
		listed := func(state string) bool {
			t.Helper()
			page := e.do("GET", "/admin/v1/keys?name_prefix=short-lived&state="+state, e.viewer, "", "").json(t)
			for _, k := range page["data"].([]any) {
				if k.(map[string]any)["id"] == id {
					return true
				}
			}
			return false
		}
		if !listed("active") || listed("expired") {
			t.Fatal("a key before its expiry is not listed as active only")
		}
		e.clock.Advance(time.Hour)
		if got := e.do("GET", "/admin/v1/keys/"+id, e.viewer, "", "").json(t)["state"]; got != "expired" {
			t.Errorf("state at the expiry %v, want expired", got)
		}
		if listed("active") || !listed("expired") {
			t.Error("a key at its expiry is not listed as expired only")
		}
		e.write("/admin/v1/keys/"+id+"/revoke", e.oper, `{}`)
		if got := e.do("GET", "/admin/v1/keys/"+id, e.viewer, "", "").json(t)["state"]; got != "revoked" {
			t.Errorf("state after revoking %v, want revoked", got)
		}
	})
}
