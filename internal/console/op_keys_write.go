package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/apierr"
	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

// The operator console's key writes (issue 27): create, rotate, revoke, update (expiry and
// caps), credit and debit. Each is a form, then a confirmation page restating what will happen
// (the write is tried in a transaction that is rolled back, so the service's own validation
// speaks before anyone confirms), then the post with confirm=yes that does it through
// admin.Service as the session's actor (audited with Via "console"). Only operators and owners
// see the buttons, and every post checks the role before anything else.
//
// Double submits: every form carries a random one-time form id; the confirmed post claims it in
// an in-memory set (forms, below) before writing and a second post of the same id is refused.
// A failed write gives the id back, so the corrected form can be sent again.

// keyActions are the writes on an existing key, by the path segment that names them.
var keyActions = map[string]string{
	"rotate": "Rotate key",
	"revoke": "Revoke key",
	"update": "Change expiry and caps",
	"credit": "Credit key",
	"debit":  "Debit key",
}

// keyFormFields are the fields of each write's form: a refusal about one is shown by it.
var keyFormFields = map[string][]string{
	"create": {"tenant", "name", "credit", "expires_at", "daily_cap", "monthly_cap"},
	"rotate": {"grace"},
	"update": {"expires_at", "daily_cap", "monthly_cap"},
	"credit": {"amount", "note", "force"},
	"debit":  {"amount", "note", "force"},
}

// keyForm is the page of one key write: its form, its confirmation or its result.
type keyForm struct {
	Action  string // create, rotate, revoke, update, credit, debit
	Key     *admin.Key
	FormID  string
	Values  url.Values
	Errs    fieldErrs
	Tenants []admin.Tenant
	Graces  []graceChoice
	// Confirm shows the confirmation step with Summary; Done shows the result.
	Confirm bool
	Summary []string
	Done    bool
	Result  string
	Secret  string // a new key's or a rotated key's secret, shown once
	Target  string // the key the result is about
}

type graceChoice struct{ Seconds, Label string }

var graces = []graceChoice{{"0", "none: the old secret stops now"}, {"3600", "1 hour"}, {"86400", "1 day"},
	{"604800", "7 days"}, {"2592000", "30 days"}}

// Val is a field's value as typed.
func (f keyForm) Val(name string) string { return f.Values.Get(name) }

// Err is a field's message.
func (f keyForm) Err(name string) string { return f.Errs[name] }

// Path is where the form posts.
func (f keyForm) Path() string {
	if f.Action == "create" {
		return "/console/keys/new"
	}
	return "/console/keys/" + url.PathEscape(f.Key.ID) + "/" + f.Action
}

// Danger marks a write that takes something away.
func (f keyForm) Danger() bool { return f.Action == "revoke" || f.Action == "debit" }

func (f keyForm) title() string {
	if f.Action == "create" {
		return "Create a key"
	}
	return keyActions[f.Action]
}

// needOperator refuses a session that may not write.
func needOperator(s *Session) error {
	if !s.Can(admin.RoleOperator) {
		return admin.Forbidden(s.Actor.Role, admin.RoleOperator)
	}
	return nil
}

// keyWriteForm shows an empty (create) or prefilled (update) form.
func (o *Operator) keyWriteForm(w http.ResponseWriter, r *http.Request, s *Session) error {
	if err := needOperator(s); err != nil {
		return err
	}
	f, err := o.newKeyForm(r, s)
	if err != nil {
		return err
	}
	f.FormID = randomToken()
	f.Values = url.Values{}
	if f.Action == "update" {
		if !f.Key.ExpiresAt.IsZero() {
			f.Values.Set("expires_at", f.Key.ExpiresAt.UTC().Format("2006-01-02T15:04"))
		}
		if c := f.Key.Caps; c != nil {
			if c.Daily != nil {
				f.Values.Set("daily_cap", c.Daily.String())
			}
			if c.Monthly != nil {
				f.Values.Set("monthly_cap", c.Monthly.String())
			}
		}
	}
	if f.Action == "rotate" {
		f.Values.Set("grace", "86400")
	}
	o.Render(w, r, s, "op_key_form", f.title(), f)
	return nil
}

// newKeyForm reads the action (and the key) a form is about.
func (o *Operator) newKeyForm(r *http.Request, s *Session) (keyForm, error) {
	f := keyForm{Action: "create", Graces: graces}
	if id := r.PathValue("id"); id != "" {
		f.Action = r.PathValue("action")
		if _, ok := keyActions[f.Action]; !ok {
			return f, apierr.New(apierr.KindNotFound, "There is no console page at this address.")
		}
		k, err := o.cfg.Admin.Key(r.Context(), s.Actor, id)
		if err != nil {
			return f, err
		}
		f.Key = &k
	} else if ts, err := o.cfg.Admin.Tenants(r.Context(), s.Actor); err == nil {
		f.Tenants = ts.Data
	}
	return f, nil
}

// keyWrite handles every post of a key write: .../confirm (or a post without confirm=yes)
// checks the input and shows the confirmation; confirm=yes does the write.
func (o *Operator) keyWrite(w http.ResponseWriter, r *http.Request, s *Session) error {
	if err := needOperator(s); err != nil {
		return err
	}
	f, err := o.newKeyForm(r, s)
	if err != nil {
		return err
	}
	f.Values = r.PostForm
	f.FormID = r.PostForm.Get("form_id")
	if f.FormID == "" || len(f.FormID) > 100 {
		return apierr.Invalid("form_id", "This form has no form id. Open the form again.")
	}
	plan, errs := planKeyWrite(f.Action, f.Key, r.PostForm)
	if len(errs) > 0 {
		f.Errs = errs
		o.render(w, r, s, http.StatusBadRequest, "op_key_form", f.title(), f)
		return nil
	}
	a := o.actor(r, s)
	if strings.HasSuffix(r.URL.Path, "/confirm") || r.PostForm.Get("confirm") != "yes" {
		// A dry run: the write and its audit entry are made and rolled back, so everything
		// the service checks (an expiry in the past, a debit above the balance) is said now.
		if _, err := plan.do(admin.WithAnswer(r.Context(), rollBack), o.cfg.Admin, a); !errors.Is(err, errDryRun) {
			return o.keyWriteFailed(w, r, s, f, err)
		}
		f.Confirm, f.Summary = true, plan.summary
		o.Render(w, r, s, "op_key_form", f.title()+": confirm", f)
		return nil
	}
	if !o.forms.claim(f.FormID, o.Now()) {
		return &apierr.Error{Kind: apierr.KindIdempotency, Code: "form_already_sent",
			Message: "This form was already sent and done; it was not done a second time. Open the key to see its state."}
	}
	res, err := plan.do(r.Context(), o.cfg.Admin, a)
	if err != nil {
		o.forms.release(f.FormID)
		return o.keyWriteFailed(w, r, s, f, err)
	}
	f.Done, f.Result, f.Secret, f.Target = true, res.message, res.secret, res.keyID
	o.Render(w, r, s, "op_key_form", f.title()+": done", f)
	return nil
}

// keyWriteFailed shows a refusal of the service next to its field, or as the error page.
func (o *Operator) keyWriteFailed(w http.ResponseWriter, r *http.Request, s *Session, f keyForm, err error) error {
	e := apierr.As(err)
	if e.Kind != apierr.KindInvalid {
		return err
	}
	f.Errs = fieldErrs{paramField(e.Param, nil, keyFormFields[f.Action]...): e.Message}
	f.Confirm = false
	o.render(w, r, s, http.StatusBadRequest, "op_key_form", f.title(), f)
	return nil
}

var errDryRun = errors.New("console: dry run")

func rollBack(context.Context, store.Tx, any) error { return errDryRun }

type keyResult struct {
	keyID, message, secret string
}

type keyPlan struct {
	summary []string
	do      func(ctx context.Context, svc *admin.Service, a admin.Actor) (keyResult, error)
}

// planKeyWrite reads a write's form into what it will do; errs are messages by field for what
// cannot even be read (an amount that is not a number, a date that is not one).
func planKeyWrite(action string, k *admin.Key, v url.Values) (keyPlan, fieldErrs) {
	errs := fieldErrs{}
	amount := func(name string, zeroOK bool) money.Micros {
		s := strings.TrimSpace(v.Get(name))
		if s == "" {
			if !zeroOK {
				errs[name] = "Enter an amount, like 12.50."
			}
			return 0
		}
		m, err := money.Parse(s)
		if err != nil {
			errs[name] = "Enter an amount as a decimal number with at most 6 decimal places, like 12.50."
		}
		return m
	}
	// capOf reads a cap field: empty or "none" is no cap, 0 a cap that lets nothing be spent,
	// as in the admin API, the CLI and the catalog (docs/billing.md, "Spend caps").
	capOf := func(name string) money.Cap {
		s := strings.TrimSpace(v.Get(name))
		if s == "" {
			return money.NoCap
		}
		c, err := money.ParseCap(s)
		if err != nil {
			errs[name] = fmt.Sprintf("Enter an amount from 0 to %s (0: nothing may be spent), or none (or nothing) for no cap.", money.MaxAmount)
		}
		return c
	}
	var p keyPlan
	switch action {
	case "create":
		in := admin.KeyInput{Tenant: v.Get("tenant"), Name: strings.TrimSpace(v.Get("name")), Unlimited: v.Get("unlimited") == "yes",
			Credit: amount("credit", true)}
		in.ExpiresAt = parseExpiry(v.Get("expires_at"), errs)
		in.Caps.Daily, in.Caps.Monthly = capOf("daily_cap"), capOf("monthly_cap")
		p.summary = []string{fmt.Sprintf("Create a key named %q for tenant %q.", in.Name, in.Tenant),
			limitText(in.Unlimited), expiryText(in.ExpiresAt), capsText(in.Caps.Daily, in.Caps.Monthly)}
		if in.Credit != 0 {
			p.summary = append(p.summary, "Credit it "+displayMoney(in.Credit)+" in the tenant's currency.")
		}
		p.summary = append(p.summary, "Its secret is shown once, on the next page.")
		p.do = func(ctx context.Context, svc *admin.Service, a admin.Actor) (keyResult, error) {
			made, err := svc.CreateKey(ctx, a, in)
			return keyResult{keyID: made.ID, message: "Key " + made.ID + " was created.", secret: made.Secret}, err
		}
	case "rotate":
		grace, ok := graceOf(v.Get("grace"))
		if !ok {
			errs["grace"] = fmt.Sprintf("Choose how long the old secret keeps working: 0 to %d seconds (%d days).",
				int64(keys.MaxGrace/time.Second), int64(keys.MaxGrace/(24*time.Hour)))
		}
		when := "stops working at once"
		if grace > 0 {
			when = "keeps working for " + grace.String()
		}
		p.summary = []string{"Give key " + k.ID + " a new secret; the current one " + when + ".", "The new secret is shown once, on the next page."}
		p.do = func(ctx context.Context, svc *admin.Service, a admin.Actor) (keyResult, error) {
			out, err := svc.RotateKey(ctx, a, k.ID, grace)
			return keyResult{keyID: k.ID, message: "Key " + k.ID + " has a new secret.", secret: out.Secret}, err
		}
	case "revoke":
		p.summary = []string{"Revoke key " + k.ID + " (" + k.Name + "): it stops working for good, and its console sessions end."}
		p.do = func(ctx context.Context, svc *admin.Service, a admin.Actor) (keyResult, error) {
			_, err := svc.RevokeKey(ctx, a, k.ID)
			return keyResult{keyID: k.ID, message: "Key " + k.ID + " is revoked."}, err
		}
	case "update":
		exp := parseExpiry(v.Get("expires_at"), errs)
		daily, monthly := capOf("daily_cap"), capOf("monthly_cap")
		in := admin.KeyUpdate{ExpiresAt: &exp, Daily: &daily, Monthly: &monthly}
		p.summary = []string{"Change key " + k.ID + ":", expiryText(exp), capsText(daily, monthly)}
		p.do = func(ctx context.Context, svc *admin.Service, a admin.Actor) (keyResult, error) {
			_, err := svc.UpdateKey(ctx, a, k.ID, in)
			return keyResult{keyID: k.ID, message: "Key " + k.ID + " was changed."}, err
		}
	case "credit", "debit":
		amt := amount("amount", false)
		note := strings.TrimSpace(v.Get("note"))
		force := v.Get("force") == "yes"
		cur := ""
		if k.Balance != nil {
			cur = " " + k.Balance.Currency
		}
		verb, prep := "Credit", "to"
		if action == "debit" {
			verb, prep = "Debit", "from"
		}
		p.summary = []string{fmt.Sprintf("%s %s%s %s key %s.", verb, displayMoney(amt), cur, prep, k.ID)}
		if force {
			p.summary = append(p.summary, "The key is revoked: this "+action+" is forced, and the audit log records it with the note.")
		}
		if note != "" {
			p.summary = append(p.summary, "Note: "+note)
		}
		p.do = func(ctx context.Context, svc *admin.Service, a admin.Actor) (keyResult, error) {
			var err error
			if action == "credit" {
				_, err = svc.Credit(ctx, a, k.ID, admin.CreditInput{Amount: amt, Note: note, Force: force})
			} else {
				_, err = svc.Debit(ctx, a, k.ID, admin.DebitInput{Amount: amt, Note: note, Force: force})
			}
			return keyResult{keyID: k.ID, message: fmt.Sprintf("%sed %s%s.", verb, displayMoney(amt), cur)}, err
		}
	}
	return p, errs
}

// parseExpiry reads an expiry as a browser's datetime-local (taken as UTC), RFC 3339 or a date.
func parseExpiry(s string, errs fieldErrs) time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339, time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UTC()
		}
	}
	errs["expires_at"] = "Enter a date and time in UTC, like 2027-01-31T18:00, or leave it empty for never."
	return time.Time{}
}

func limitText(unlimited bool) string {
	if unlimited {
		return "It is unlimited: it may spend beyond its balance."
	}
	return "It spends only its balance."
}

func expiryText(t time.Time) string {
	if t.IsZero() {
		return "It never expires."
	}
	return "It expires at " + formatTime(t) + "."
}

func capsText(daily, monthly money.Cap) string {
	if !daily.Set() && !monthly.Set() {
		return "No spend caps."
	}
	show := func(c money.Cap) string {
		m, ok := c.Get()
		switch {
		case !ok:
			return "none"
		case m == 0:
			return "0 (nothing may be spent)"
		}
		return displayMoney(m)
	}
	return "Spend caps: daily " + show(daily) + ", monthly " + show(monthly) + "."
}

// graceOf reads the rotation form's grace in seconds, within [0, keys.MaxGrace]. The bound is
// checked on the seconds before they become a Duration: 18446744074 s times 10^9 wraps int64
// to 0.29 s, which the service's own bound would then accept.
func graceOf(s string) (time.Duration, bool) {
	secs, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || secs < 0 || secs > int64(keys.MaxGrace/time.Second) {
		return 0, false
	}
	d, ok := money.MulInt(secs, int64(time.Second))
	return time.Duration(d), ok
}

// onceSet is the one-time form ids already used, each kept for formIDTTL.
type onceSet struct {
	mu   sync.Mutex
	used map[string]time.Time
}

const formIDTTL = 24 * time.Hour

func newOnceSet() *onceSet { return &onceSet{used: map[string]time.Time{}} }

// claim marks id used and reports whether it was free.
func (o *onceSet) claim(id string, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, at := range o.used {
		if now.Sub(at) > formIDTTL {
			delete(o.used, k)
		}
	}
	if _, ok := o.used[id]; ok {
		return false
	}
	o.used[id] = now
	return true
}

func (o *onceSet) release(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.used, id)
}
