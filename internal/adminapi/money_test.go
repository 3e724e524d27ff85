package adminapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/billing"
	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

// ledgerSnap is what a refused write must leave unchanged: the audit log and every ledger entry
// of the currency's funding account.
type ledgerSnap struct{ audit, funding int }

func (e *env) ledgerSnap() ledgerSnap {
	e.t.Helper()
	es, err := e.st.Entries(context.Background(), store.FundingAccountID("USD"))
	if err != nil {
		e.t.Fatal(err)
	}
	return ledgerSnap{audit: e.auditCount(), funding: len(es)}
}

// refused checks a 400 naming param with a message holding want, and that nothing was written.
func (e *env) refused(t *testing.T, what string, r resp, before ledgerSnap, param, want string) {
	t.Helper()
	code, got := r.errCodeParam(t)
	if r.status != http.StatusBadRequest || code != "invalid_request_error" || got != param || !strings.Contains(string(r.body), want) {
		t.Errorf("%s: %d %s, want 400 on %q saying %q", what, r.status, r.body, param, want)
	}
	if after := e.ledgerSnap(); after != before {
		t.Errorf("%s: refused but wrote: %+v → %+v", what, before, after)
	}
	if err := e.st.CheckLedger(context.Background()); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

func TestAmountsPastTheirCeilingRefusedNamingFieldAndCeiling(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		key := e.makeKey(false)
		credit := func(id, amount string) resp {
			return e.write("/admin/v1/keys/"+id+"/credits", e.oper, `{"amount":`+amount+`}`)
		}
		ceiling := money.MaxAmount.String()

		// The credit: once 201, pushing the funding account to the int64 floor.
		b := e.ledgerSnap()
		e.refused(t, "the issue's credit", credit(key, "9223372036774.775807"), b, "amount", ceiling)
		if r := credit(key, "1"); r.status != http.StatusCreated {
			t.Fatalf("an ordinary credit after it: %d %s", r.status, r.body)
		}
		b = e.ledgerSnap()
		e.refused(t, "credit one micro-unit above the ceiling", credit(key, "1000000000000.000001"), b, "amount", ceiling)
		e.refused(t, "debit above the ceiling", e.write("/admin/v1/keys/"+key+"/debits", e.oper,
			`{"amount":1000000000001,"note":"x"}`), b, "amount", ceiling)
		e.refused(t, "initial credit above the ceiling", e.write("/admin/v1/keys", e.oper,
			`{"tenant":"demo","credit":1000000000001}`), b, "credit", ceiling)
		for _, f := range []string{"daily_cap", "monthly_cap"} {
			e.refused(t, f+" above the ceiling", e.write("/admin/v1/keys", e.oper,
				`{"tenant":"demo","`+f+`":1000000000000.5}`), b, f, ceiling)
			e.refused(t, f+" negative", e.do("PATCH", "/admin/v1/keys/"+key, e.oper, newIdem(), `{"`+f+`":-1}`), b, f, ceiling)
		}

		// A key's available balance: the credit that would pass it is refused.
		if r := credit(key, "999999999999"); r.status != http.StatusCreated {
			t.Fatalf("credit to the key's ceiling: %d %s", r.status, r.body)
		}
		b = e.ledgerSnap()
		e.refused(t, "credit past the key's balance ceiling", credit(key, "0.000001"), b, "amount", "available balance")

		// The funding total: four keys at their ceiling fill it (the first is already).
		for range 3 {
			if r := e.write("/admin/v1/keys", e.oper, `{"tenant":"demo","credit":1000000000000}`); r.status != http.StatusCreated {
				t.Fatalf("key with credit at the ceiling: %d %s", r.status, r.body)
			}
		}
		fresh := e.makeKey(false)
		b = e.ledgerSnap()
		e.refused(t, "credit past the funding ceiling", credit(fresh, "1"), b, "amount", money.MaxFunding.String())
		keysBefore := e.snap().keys
		e.refused(t, "key with credit past the funding ceiling", e.write("/admin/v1/keys", e.oper,
			`{"tenant":"demo","credit":1}`), b, "credit", money.MaxFunding.String())
		if e.snap().keys != keysBefore {
			t.Error("a key whose initial credit was refused was made anyway")
		}
		// A debit makes room; then the same credit lands.
		if r := e.write("/admin/v1/keys/"+key+"/debits", e.oper, `{"amount":5,"note":"room"}`); r.status != http.StatusCreated {
			t.Fatalf("debit: %d %s", r.status, r.body)
		}
		if r := credit(fresh, "1"); r.status != http.StatusCreated {
			t.Fatalf("credit after the debit made room: %d %s", r.status, r.body)
		}
	})
}

func TestRevokedKeysRefuseCreditsAndDebitsUnlessForcedWithANote(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		key := e.makeKey(false)
		if r := e.write("/admin/v1/keys/"+key+"/credits", e.oper, `{"amount":10}`); r.status != http.StatusCreated {
			t.Fatal(r.status, string(r.body))
		}
		if r := e.write("/admin/v1/keys/"+key+"/revoke", e.oper, `{}`); r.status != http.StatusOK {
			t.Fatal(r.status, string(r.body))
		}
		b := e.ledgerSnap()
		e.refused(t, "credit of a revoked key", e.write("/admin/v1/keys/"+key+"/credits", e.oper, `{"amount":1}`), b, "", "revoked")
		e.refused(t, "debit of a revoked key", e.write("/admin/v1/keys/"+key+"/debits", e.oper, `{"amount":1,"note":"x"}`), b, "", "revoked")
		e.refused(t, "forced credit without a note", e.write("/admin/v1/keys/"+key+"/credits", e.oper, `{"amount":1,"force":true}`), b, "note", "note")

		for _, w := range []struct{ path, body, action string }{
			{"/credits", `{"amount":2,"note":"refund owed before revocation","force":true}`, "credit.create"},
			{"/debits", `{"amount":1,"note":"duplicate top-up","force":true}`, "debit.create"},
		} {
			r := e.write("/admin/v1/keys/"+key+w.path, e.oper, w.body)
			if r.status != http.StatusCreated || r.json(t)["forced"] != true {
				t.Fatalf("forced %s: %d %s", w.action, r.status, r.body)
			}
			list, err := e.st.Audit(context.Background(), store.AuditQuery{Action: w.action, Limit: 1})
			if err != nil || len(list) != 1 || !strings.Contains(string(list[0].After), `"forced":true`) ||
				!strings.Contains(string(list[0].Before), `"state":"revoked"`) {
				t.Fatalf("forced %s audit: %v %+v", w.action, err, list)
			}
		}
		if bal, _ := e.st.Balance(context.Background(), key); bal.Available != 11_000_000 {
			t.Errorf("available %s, want 11", bal.Available)
		}
		// An active key needs no force, and force on it is not recorded as forced.
		live := e.makeKey(false)
		if r := e.write("/admin/v1/keys/"+live+"/credits", e.oper, `{"amount":1,"note":"n","force":true}`); r.status != http.StatusCreated || r.json(t)["forced"] != nil {
			t.Errorf("force on an active key: %d %s", r.status, r.body)
		}
	})
}

// TestCapZeroLetsNothingBeSpentAndNoneRemovesIt: one meaning of 0 in the API, the CLI, the
// console and the catalog. Before, daily_cap 0 through the API removed the cap.
func TestCapZeroLetsNothingBeSpentAndNoneRemovesIt(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		r := e.write("/admin/v1/keys", e.oper, `{"tenant":"demo","credit":10,"daily_cap":0}`)
		m := r.json(t)
		id, _ := m["id"].(string)
		caps, _ := m["caps"].(map[string]any)
		if r.status != http.StatusCreated || caps["daily"] != 0.0 || caps["monthly"] != nil {
			t.Fatalf("create with daily_cap 0: %d %s", r.status, r.body)
		}
		reserve := func(ref string) error {
			k, err := e.st.Key(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return e.st.Transact(ctx, func(tx store.Tx) error {
				return billing.Reserve(ctx, tx, keys.Caller{Key: k}, ref, 1, time.Now())
			})
		}
		if err := reserve("task_zero_1"); !billing.IsCapRefusal(err) {
			t.Fatalf("reservation under a cap of 0: %v, want a spend cap refusal", err)
		}
		r = e.do("PATCH", "/admin/v1/keys/"+id, e.oper, newIdem(), `{"daily_cap":"none","monthly_cap":0}`)
		if caps, _ := r.json(t)["caps"].(map[string]any); r.status != http.StatusOK || caps["daily"] != nil || caps["monthly"] != 0.0 {
			t.Fatalf("update to none and 0: %d %s", r.status, r.body)
		}
		r = e.do("PATCH", "/admin/v1/keys/"+id, e.oper, newIdem(), `{"monthly_cap":"none"}`)
		if r.status != http.StatusOK || r.json(t)["caps"] != nil {
			t.Fatalf("update to no caps: %d %s", r.status, r.body)
		}
		if err := reserve("task_zero_2"); err != nil {
			t.Fatalf("reservation without caps: %v", err)
		}
		b := e.ledgerSnap()
		e.refused(t, "a cap that is neither an amount nor none", e.do("PATCH", "/admin/v1/keys/"+id, e.oper, newIdem(), `{"daily_cap":"0"}`), b, "daily_cap", `or \"none\" for no cap`)
	})
}

// TestServiceKeepsZeroCapApartFromNone: what the CLI's parser reads ("0", "none") is stored
// apart on both stores.
func TestServiceKeepsZeroCapApartFromNone(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		zero, _ := keys.ParseCap("0")
		none, _ := keys.ParseCap("none")
		k, err := e.svc.CreateKey(context.Background(), admin.CLIActor("t"), admin.KeyInput{Tenant: "demo", Caps: store.Caps{Daily: zero, Monthly: none}})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := e.st.Key(context.Background(), k.ID)
		if got.Caps.Daily != money.CapOf(0) || got.Caps.Monthly.Set() {
			t.Errorf("stored caps %v, %v; want 0 and none", got.Caps.Daily, got.Caps.Monthly)
		}
	})
}
