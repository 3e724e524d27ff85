package console

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/money"
)

var (
	formIDField = regexp.MustCompile(`name="form_id" value="([^"]+)"`)
	secretCode  = regexp.MustCompile(`<code id="secret" class="secret">([^<]+)</code>`)
)

// opBrowser signs in with secret.
func (e *opEnv) browser(t *testing.T, secret string) *browser {
	t.Helper()
	b := newBrowser(t, e.ts.URL)
	b.signIn(secret)
	return b
}

// openForm reads a write form's csrf and one-time form id.
func (b *browser) openForm(path string) url.Values {
	b.t.Helper()
	p := b.get(path)
	c, f := csrfField.FindStringSubmatch(p.body), formIDField.FindStringSubmatch(p.body)
	if p.status != http.StatusOK || c == nil || f == nil {
		b.t.Fatalf("form %s: %d\n%s", path, p.status, p.body)
	}
	return url.Values{"csrf": {c[1]}, "form_id": {f[1]}}
}

func (e *opEnv) auditCount(t *testing.T) int {
	t.Helper()
	l, err := e.svc.Audit(context.Background(), admin.CLIActor("t"), admin.AuditFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range l.Data {
		if !strings.HasPrefix(a.Action, "token.") {
			n++
		}
	}
	return n
}

func (e *opEnv) newKey(t *testing.T, credit money.Micros) admin.KeyCreated {
	t.Helper()
	k, err := e.svc.CreateKey(context.Background(), admin.CLIActor("t"), admin.KeyInput{Tenant: "demo", Name: "seed", Credit: credit})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (e *opEnv) balance(t *testing.T, id string) money.Micros {
	t.Helper()
	k, err := e.svc.Key(context.Background(), admin.CLIActor("t"), id)
	if err != nil {
		t.Fatal(err)
	}
	return k.Balance.Available
}

func TestCreateKeyShowsTheSecretOnceAfterConfirmationAndIsAuditedViaConsole(t *testing.T) {
	e := newOpEnv(t)
	b := e.browser(t, e.oper)
	f := with(b.openForm("/console/keys/new"), "tenant", "demo", "name", "web shop", "credit", "12.5", "daily_cap", "3")

	p := b.post("/console/keys/new/confirm", f)
	if p.status != http.StatusOK || !strings.Contains(p.body, "Yes, do it") || !strings.Contains(p.body, "web shop") {
		t.Fatalf("confirmation: %d\n%s", p.status, p.body)
	}
	if n := e.auditCount(t); n != 0 {
		t.Fatalf("the confirmation step wrote %d audited changes", n)
	}
	list, _ := e.svc.Keys(context.Background(), admin.CLIActor("t"), admin.KeyFilter{})
	if len(list.Data) != 0 {
		t.Fatalf("the confirmation step made a key: %+v", list.Data)
	}

	p = b.post("/console/keys/new", with(f, "confirm", "yes"))
	m := secretCode.FindStringSubmatch(p.body)
	if p.status != http.StatusOK || m == nil || !strings.Contains(p.body, `<button type="button" data-copy="secret">Copy</button>`) {
		t.Fatalf("result: %d\n%s", p.status, p.body)
	}
	secret := m[1]
	list, _ = e.svc.Keys(context.Background(), admin.CLIActor("t"), admin.KeyFilter{})
	if len(list.Data) != 1 || list.Data[0].Name != "web shop" || list.Data[0].Balance.Available != 12_500_000 || list.Data[0].Caps == nil {
		t.Fatalf("keys after create: %+v", list.Data)
	}
	id := list.Data[0].ID
	aud, _ := e.svc.Audit(context.Background(), admin.CLIActor("t"), admin.AuditFilter{Action: "key.create"})
	if len(aud.Data) != 1 || aud.Data[0].Actor.Via != admin.ViaConsole || aud.Data[0].Actor.ID != e.operID || aud.Data[0].Target.ID != id {
		t.Fatalf("audit: %+v", aud.Data)
	}
	if strings.Contains(string(aud.Data[0].After), secret) {
		t.Error("the audit entry holds the secret")
	}

	for _, path := range []string{"/console/keys/" + id, "/console/keys"} {
		p = b.get(path)
		if p.status != http.StatusOK || strings.Contains(p.body, secret) || !strings.Contains(p.body, id) {
			t.Errorf("%s: %d, shows the secret again: %v", path, p.status, strings.Contains(p.body, secret))
		}
	}

	// The same form sent again does nothing a second time.
	p = b.post("/console/keys/new", with(f, "confirm", "yes"))
	if p.status != http.StatusConflict {
		t.Errorf("second post of the form: %d; want 409", p.status)
	}
	list, _ = e.svc.Keys(context.Background(), admin.CLIActor("t"), admin.KeyFilter{})
	if len(list.Data) != 1 {
		t.Errorf("a double submit made %d keys", len(list.Data))
	}
}

func TestViewerSeesNoWriteButtonsAndIsRefusedWithoutAWrite(t *testing.T) {
	e := newOpEnv(t)
	k := e.newKey(t, 5_000_000)
	op := e.browser(t, e.oper)
	if p := op.get("/console/keys/" + k.ID); !strings.Contains(p.body, "/credit") || !strings.Contains(p.body, "/revoke") {
		t.Fatalf("an operator sees no write buttons:\n%s", p.body)
	}
	form := op.openForm("/console/keys/" + k.ID + "/credit")

	v := e.browser(t, e.viewer)
	for _, path := range []string{"/console/keys", "/console/keys/" + k.ID} {
		p := v.get(path)
		if p.status != http.StatusOK {
			t.Fatalf("viewer %s: %d", path, p.status)
		}
		for _, button := range []string{"/console/keys/new", "/credit", "/debit", "/rotate", "/revoke", "/update"} {
			if strings.Contains(p.body, `href="/console/keys/`+k.ID+button+`"`) || strings.Contains(p.body, `href="`+button+`"`) {
				t.Errorf("viewer sees %s on %s", button, path)
			}
		}
	}
	if p := v.get("/console/keys/new"); p.status != http.StatusForbidden {
		t.Errorf("viewer opens the create form: %d; want 403", p.status)
	}
	csrf := v.csrf("/console/keys")
	for _, path := range []string{"/console/keys/" + k.ID + "/credit", "/console/keys/" + k.ID + "/credit/confirm", "/console/keys/new", "/console/keys/" + k.ID + "/revoke"} {
		p := v.post(path, url.Values{"csrf": {csrf}, "form_id": form["form_id"], "amount": {"1"}, "tenant": {"demo"}, "name": {"x"}, "confirm": {"yes"}})
		if p.status != http.StatusForbidden {
			t.Errorf("viewer posts %s: %d; want 403", path, p.status)
		}
	}
	if got := e.balance(t, k.ID); got != 5_000_000 {
		t.Errorf("balance after the viewer's posts: %s", got)
	}
	if n := e.auditCount(t); n != 1 { // the seed key's creation
		t.Errorf("audited changes: %d; want 1", n)
	}
}

func TestCreditThenDebitChangeTheBalanceOnlyWhenConfirmed(t *testing.T) {
	e := newOpEnv(t)
	k := e.newKey(t, 10_000_000)
	b := e.browser(t, e.oper)
	for _, step := range []struct {
		action, amount, note string
		want                 money.Micros
	}{
		{"credit", "2.5", "goodwill", 12_500_000},
		{"debit", "0.5", "refund correction", 12_000_000},
	} {
		path := "/console/keys/" + k.ID + "/" + step.action
		f := with(b.openForm(path), "amount", step.amount, "note", step.note)
		before := e.balance(t, k.ID)
		if p := b.post(path+"/confirm", f); p.status != http.StatusOK || !strings.Contains(p.body, "Yes, do it") {
			t.Fatalf("%s confirm: %d\n%s", step.action, p.status, p.body)
		}
		if p := b.post(path, f); p.status != http.StatusOK || !strings.Contains(p.body, "Yes, do it") {
			t.Fatalf("%s without confirm=yes: %d", step.action, p.status)
		}
		if got := e.balance(t, k.ID); got != before {
			t.Fatalf("%s before confirming: balance %s; want %s", step.action, got, before)
		}
		if p := b.post(path, with(f, "confirm", "yes")); p.status != http.StatusOK {
			t.Fatalf("%s: %d\n%s", step.action, p.status, p.body)
		}
		if got := e.balance(t, k.ID); got != step.want {
			t.Errorf("after %s: balance %s; want %s", step.action, got, step.want)
		}
	}
	p := b.get("/console/keys/" + k.ID)
	for _, want := range []string{`id="balance-available">` + money.Micros(12_000_000).String(), "goodwill", "refund correction", `id="ledger"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("key page lacks %q", want)
		}
	}
}

func TestRotateShowsANewSecretAndRevokeRevokes(t *testing.T) {
	e := newOpEnv(t)
	k := e.newKey(t, 0)
	b := e.browser(t, e.oper)
	path := "/console/keys/" + k.ID + "/rotate"
	p := b.post(path, with(b.openForm(path), "grace", "3600", "confirm", "yes"))
	m := secretCode.FindStringSubmatch(p.body)
	if p.status != http.StatusOK || m == nil || m[1] == k.Secret {
		t.Fatalf("rotate: %d\n%s", p.status, p.body)
	}
	if strings.Contains(b.get("/console/keys/"+k.ID).body, m[1]) {
		t.Error("the key page shows the rotated secret")
	}
	path = "/console/keys/" + k.ID + "/revoke"
	if p := b.post(path, with(b.openForm(path), "confirm", "yes")); p.status != http.StatusOK {
		t.Fatalf("revoke: %d\n%s", p.status, p.body)
	}
	got, _ := e.svc.Key(context.Background(), admin.CLIActor("t"), k.ID)
	if got.State != "revoked" {
		t.Errorf("state after revoke: %s", got.State)
	}
	if p := b.get("/console/keys/" + k.ID); !strings.Contains(p.body, `badge revoked`) || strings.Contains(p.body, "/revoke\"") {
		t.Errorf("key page of a revoked key:\n%s", p.body)
	}
}

func TestInvalidKeyInputIsShownByItsFieldAndWritesNothing(t *testing.T) {
	e := newOpEnv(t)
	k := e.newKey(t, 1_000_000)
	b := e.browser(t, e.oper)
	past := e.clock.Now().Add(-48 * time.Hour).UTC().Format("2006-01-02T15:04")
	for _, tc := range []struct {
		name, path, field string
		form              []string
	}{
		{"negative credit", "/console/keys/" + k.ID + "/credit", "amount", []string{"amount", "-5"}},
		{"credit not a number", "/console/keys/" + k.ID + "/credit", "amount", []string{"amount", "lots"}},
		{"debit above the balance", "/console/keys/" + k.ID + "/debit", "amount", []string{"amount", "9", "note", "oops"}},
		{"debit without a note", "/console/keys/" + k.ID + "/debit", "note", []string{"amount", "0.1"}},
		{"bad expiry", "/console/keys/" + k.ID + "/update", "expires_at", []string{"expires_at", "next tuesday"}},
		{"past expiry", "/console/keys/" + k.ID + "/update", "expires_at", []string{"expires_at", past}},
		{"negative initial credit", "/console/keys/new", "credit", []string{"tenant", "demo", "name", "n", "credit", "-1"}},
		{"unknown tenant", "/console/keys/new", "tenant", []string{"tenant", "nobody", "name", "n"}},
		// 18446744074 s × 10^9 used to wrap int64 to 0.29 s, which the service then accepted.
		{"grace that wrapped", "/console/keys/" + k.ID + "/rotate", "grace", []string{"grace", "18446744074"}},
		{"grace above 90 days", "/console/keys/" + k.ID + "/rotate", "grace", []string{"grace", "7776001"}},
		{"credit above the ceiling", "/console/keys/" + k.ID + "/credit", "amount", []string{"amount", "1000000000000.000001"}},
		{"the issue's credit", "/console/keys/" + k.ID + "/credit", "amount", []string{"amount", "9223372036774.775807"}},
		{"cap that is no amount", "/console/keys/" + k.ID + "/update", "daily_cap", []string{"daily_cap", "lots"}},
		{"cap above the ceiling", "/console/keys/" + k.ID + "/update", "monthly_cap", []string{"monthly_cap", "1000000000001"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := b.openForm(strings.TrimSuffix(tc.path, "/confirm"))
			for _, send := range []url.Values{with(form, tc.form...), with(form, append(tc.form, "confirm", "yes")...)} {
				p := b.post(tc.path, send)
				if p.status != http.StatusBadRequest || !strings.Contains(p.body, `id="`+tc.field+`-error"`) ||
					!strings.Contains(p.body, `aria-describedby="`+tc.field+`-error"`) {
					t.Fatalf("%d; want 400 with the message by %s\n%s", p.status, tc.field, p.body)
				}
			}
			if got := e.balance(t, k.ID); got != 1_000_000 {
				t.Errorf("balance %s", got)
			}
			if n := e.auditCount(t); n != 1 {
				t.Errorf("audited changes: %d; want 1", n)
			}
		})
	}
}

func TestKeysListFiltersAndPagesEachKeyOnce(t *testing.T) {
	e := newOpEnv(t)
	for i := 0; i < PageSize+5; i++ {
		e.newKey(t, 0)
	}
	b := e.browser(t, e.viewer)
	seen := map[string]bool{}
	next := "/console/keys?tenant=demo&state=active"
	for pages := 0; next != ""; pages++ {
		if pages > 3 {
			t.Fatal("too many pages")
		}
		p := b.get(next)
		if p.status != http.StatusOK {
			t.Fatalf("%s: %d", next, p.status)
		}
		for _, m := range regexp.MustCompile(`href="/console/keys/(key_[^"]+)"`).FindAllStringSubmatch(p.body, -1) {
			if seen[m[1]] {
				t.Errorf("%s listed twice", m[1])
			}
			seen[m[1]] = true
		}
		next = ""
		if m := regexp.MustCompile(`<a href="([^"]+)" rel="next">`).FindStringSubmatch(p.body); m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	if len(seen) != PageSize+5 {
		t.Errorf("listed %d keys; want %d", len(seen), PageSize+5)
	}
	if p := b.get("/console/keys?state=sideways"); p.status != http.StatusBadRequest || !strings.Contains(p.body, `id="state-error"`) {
		t.Errorf("bad state: %d", p.status)
	}
}

func TestUpdateSetsExpiryAndCapsAfterConfirmation(t *testing.T) {
	e := newOpEnv(t)
	k := e.newKey(t, 0)
	b := e.browser(t, e.oper)
	path := "/console/keys/" + k.ID + "/update"
	exp := e.clock.Now().Add(72 * time.Hour).UTC().Truncate(time.Minute)
	f := with(b.openForm(path), "expires_at", exp.Format("2006-01-02T15:04"), "daily_cap", "2", "monthly_cap", "30")
	if p := b.post(path+"/confirm", f); p.status != http.StatusOK || !strings.Contains(p.body, formatTime(exp)) {
		t.Fatalf("confirm: %d\n%s", p.status, p.body)
	}
	if p := b.post(path, with(f, "confirm", "yes")); p.status != http.StatusOK {
		t.Fatalf("update: %d\n%s", p.status, p.body)
	}
	got, _ := e.svc.Key(context.Background(), admin.CLIActor("t"), k.ID)
	if !got.ExpiresAt.Equal(exp) || got.Caps == nil || got.Caps.Daily == nil || *got.Caps.Daily != 2_000_000 ||
		got.Caps.Monthly == nil || *got.Caps.Monthly != 30_000_000 {
		t.Errorf("key after update: expires %v, caps %+v", got.ExpiresAt, got.Caps)
	}
	// The form opens with the key's values.
	if p := b.get(path); !strings.Contains(p.body, `value="`+exp.Format("2006-01-02T15:04")+`"`) {
		t.Errorf("update form lacks the current expiry:\n%s", p.body)
	}
}

func TestRevokedKeyCreditNeedsForceWithANoteInTheConsole(t *testing.T) {
	e := newOpEnv(t)
	k := e.newKey(t, 1_000_000)
	b := e.browser(t, e.oper)
	path := "/console/keys/" + k.ID + "/revoke"
	if p := b.post(path, with(b.openForm(path), "confirm", "yes")); p.status != http.StatusOK {
		t.Fatalf("revoke: %d\n%s", p.status, p.body)
	}
	path = "/console/keys/" + k.ID + "/credit"
	form := b.openForm(path)
	if !strings.Contains(b.get(path).body, `name="force"`) {
		t.Error("the credit form of a revoked key offers no force")
	}
	for _, tc := range []struct {
		name string
		form []string
		want string
	}{
		{"without force", []string{"amount", "2"}, "revoked"},
		{"forced without a note", []string{"amount", "2", "force", "yes"}, "needs a note"},
	} {
		if p := b.post(path, with(form, append(tc.form, "confirm", "yes")...)); p.status != http.StatusBadRequest || !strings.Contains(p.body, tc.want) {
			t.Errorf("%s: %d; want 400 saying %q\n%s", tc.name, p.status, tc.want, p.body)
		}
	}
	if got := e.balance(t, k.ID); got != 1_000_000 {
		t.Fatalf("balance %s after refusals", got)
	}
	if p := b.post(path, with(form, "amount", "2", "force", "yes", "note", "refund owed", "confirm", "yes")); p.status != http.StatusOK {
		t.Fatalf("forced credit: %d\n%s", p.status, p.body)
	}
	if got := e.balance(t, k.ID); got != 3_000_000 {
		t.Errorf("balance %s after the forced credit; want 3", got)
	}
}

func TestConsoleCapZeroIsACapAndEmptyIsNone(t *testing.T) {
	e := newOpEnv(t)
	k := e.newKey(t, 0)
	b := e.browser(t, e.oper)
	path := "/console/keys/" + k.ID + "/update"
	f := with(b.openForm(path), "daily_cap", "0", "monthly_cap", "")
	if p := b.post(path+"/confirm", f); p.status != http.StatusOK || !strings.Contains(p.body, "nothing may be spent") {
		t.Fatalf("confirm: %d\n%s", p.status, p.body)
	}
	if p := b.post(path, with(f, "confirm", "yes")); p.status != http.StatusOK {
		t.Fatalf("update: %d\n%s", p.status, p.body)
	}
	got, _ := e.svc.Key(context.Background(), admin.CLIActor("t"), k.ID)
	if got.Caps == nil || got.Caps.Daily == nil || *got.Caps.Daily != 0 || got.Caps.Monthly != nil {
		t.Fatalf("caps after daily 0 and monthly empty: %+v", got.Caps)
	}
	// The form opens with the cap of 0 shown as 0, not as empty (which would remove it).
	if p := b.get(path); !strings.Contains(p.body, `name="daily_cap" type="text" inputmode="decimal" value="0"`) {
		t.Errorf("the form does not show the cap of 0:\n%s", p.body)
	}
	if p := b.post(path, with(b.openForm(path), "daily_cap", "none", "confirm", "yes")); p.status != http.StatusOK {
		t.Fatalf("update to none: %d\n%s", p.status, p.body)
	}
	if got, _ := e.svc.Key(context.Background(), admin.CLIActor("t"), k.ID); got.Caps != nil {
		t.Errorf("caps after none: %+v", got.Caps)
	}
}
