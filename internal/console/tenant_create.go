package console

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"mediagen/internal/apierr"
	"mediagen/internal/billing"
	"mediagen/internal/money"
	"mediagen/internal/speech"
)

// The create pages: GET /console/create shows the form of one route (?route=), POST
// /console/create/preview prices what the form would send without writing anything (the
// services' Quote), and POST /console/create sends it (the services' Create, under the
// public API's limits) and redirects to the new task.
//
// The form builds the contract's JSON body (tenant_create_form.go), so every rule is the
// service's own: a refusal comes back as an *apierr.Error whose Param names the field it is
// shown on. Every form carries a client_request_id made when it is first drawn, so posting
// it twice makes one task.

// createPage is the data of tenant_create.html.
type createPage struct {
	createOptions
	Values url.Values
	// Errors are the messages shown next to their fields, by form field name.
	Errors map[string]string
	// Problem is a message without a field, shown at the top of the form; Payment marks it as
	// the balance being too low.
	Problem string
	Payment bool
	// Notice is a remark about the form that is not a refusal.
	Notice string
	// Quote is the reservation the form's request makes, once previewed.
	Quote *createQuote
	// Balance is the key's balance when the reservation is shown (nil when it could not be read).
	Balance *balanceView
}

// Val is a field's value as sent (or its default).
func (p createPage) Val(name string) string { return p.Values.Get(name) }

// Err is the message of a field ("" when it has none).
func (p createPage) Err(name string) string { return p.Errors[name] }

// Is reports whether field name holds value v (a selected option, a checked box).
func (p createPage) Is(name, v string) bool { return p.Values.Get(name) == v }

// createQuote is a reservation and what it is made of.
type createQuote struct {
	Amount   money.Micros
	Currency string
	Parts    []quotePart
	// Digest names the request it priced: Create on a different form previews again.
	Digest string
	// Short marks a reservation above the available balance.
	Short bool
}

type quotePart struct{ Label, Value string }

type balanceView struct {
	Available string
	Unlimited bool
}

func (t *Tenant) createForm(w http.ResponseWriter, r *http.Request, s *Session) error {
	opts := t.createOptions(s, r.URL.Query().Get("route"))
	if opts.Route == "" {
		return apierr.New(apierr.KindPermission, "This account has no model alias to create with. Ask the operator for one.")
	}
	t.Render(w, r, s, "tenant_create", "Create", createPage{createOptions: opts, Values: opts.defaults(), Errors: map[string]string{}})
	return nil
}

// createPreview prices the form's request and shows the reservation with a Create button.
func (t *Tenant) createPreview(w http.ResponseWriter, r *http.Request, s *Session) error {
	p, body, ok := t.readCreate(r, s)
	if !ok {
		return apierr.Invalid("route", "There is no such create form for this account.")
	}
	return t.preview(w, r, s, p, body, "")
}

// preview renders the form with its reservation and notice, or with the refusal.
func (t *Tenant) preview(w http.ResponseWriter, r *http.Request, s *Session, p createPage, body []byte, notice string) error {
	// Pricing may measure input videos, as a create does: it is held to the same limits.
	end, err := t.admit(s.Caller)
	if err != nil {
		return t.createFailed(w, r, s, p, err)
	}
	q, err := t.quote(r, s, p.Route, body)
	end()
	if err != nil {
		return t.createFailed(w, r, s, p, err)
	}
	p.Notice = notice
	q.Digest = digest(body)
	if b, err := t.cfg.Store.Balance(r.Context(), s.Caller.Key.ID); err == nil {
		p.Balance = &balanceView{Available: displayMoney(b.Available), Unlimited: b.Unlimited}
		q.Short = !b.Unlimited && b.Available < q.Amount
	}
	p.Quote = q
	t.Render(w, r, s, "tenant_create", "Create", p)
	return nil
}

// createTask sends the form's request. A form changed since its reservation was shown is
// previewed again instead, so what is created is what was priced.
func (t *Tenant) createTask(w http.ResponseWriter, r *http.Request, s *Session) error {
	p, body, ok := t.readCreate(r, s)
	if !ok {
		return apierr.Invalid("route", "There is no such create form for this account.")
	}
	if r.PostForm.Get("quoted") != digest(body) {
		return t.preview(w, r, s, p, body, "The form changed since its reservation was shown. Check the reservation below, then send it.")
	}
	end, err := t.admit(s.Caller)
	if err != nil {
		return t.createFailed(w, r, s, p, err)
	}
	defer end()
	if p.Route == routeSpeech {
		res, err := t.cfg.Speech.Create(r.Context(), s.Caller, body)
		if err != nil {
			return t.createFailed(w, r, s, p, err)
		}
		http.Redirect(w, r, "/console/speech/"+url.PathEscape(res.ID), http.StatusSeeOther)
		return nil
	}
	task, _, err := t.cfg.Videos.Create(r.Context(), s.Caller, body)
	if err != nil {
		return t.createFailed(w, r, s, p, err)
	}
	http.Redirect(w, r, "/console/tasks/"+url.PathEscape(task.ID), http.StatusSeeOther)
	return nil
}

// quote asks the route's service for the reservation, writing nothing.
func (t *Tenant) quote(r *http.Request, s *Session, route string, body []byte) (*createQuote, error) {
	if route == routeSpeech {
		q, err := t.cfg.Speech.Quote(r.Context(), s.Caller, body)
		if err != nil {
			return nil, err
		}
		return speechQuote(q), nil
	}
	q, err := t.cfg.Videos.Quote(r.Context(), s.Caller, body)
	if err != nil {
		return nil, err
	}
	return videoQuote(q), nil
}

// createFailed re-renders the form with the refusal on its field, or at the top. Failures
// that are not the request's (the database, a bug) are the error page's, logged there.
func (t *Tenant) createFailed(w http.ResponseWriter, r *http.Request, s *Session, p createPage, err error) error {
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Kind == apierr.KindInternal {
		return err
	}
	if ae.Kind == apierr.KindUnavailable {
		t.Logger.WarnContext(r.Context(), "console create: service unavailable", "err", err)
	}
	p.Quote = nil
	if field := p.fieldOf(ae.Param); field != "" {
		p.Errors[field] = ae.Message
	} else {
		p.Problem = ae.Message
	}
	switch {
	case ae.Kind == apierr.KindInsufficientBalance:
		p.Payment = true
		p.Problem = ae.Message + " Your balance is on the Balance & usage page."
	case ae.Kind == apierr.KindIdempotency && ae.Code != speech.CodeInProgress:
		// The request ID was used for another request (the form was changed after a create):
		// a new ID makes the next send a new, deliberate task.
		p.Values.Set("client_request_id", newRequestID())
		p.Problem = ae.Message + " This form now has a new request ID: send it again to create a new task."
	}
	t.render(w, r, s, ae.Status(), "tenant_create", "Create", p)
	return nil
}

// readCreate reads a posted create form: its options (route from the form), values and body.
func (t *Tenant) readCreate(r *http.Request, s *Session) (createPage, []byte, bool) {
	route := r.PostForm.Get("route")
	opts := t.createOptions(s, route)
	if opts.Route != route {
		return createPage{}, nil, false
	}
	p := createPage{createOptions: opts, Values: opts.keep(r.PostForm), Errors: map[string]string{}}
	if p.Val("client_request_id") == "" {
		p.Values.Set("client_request_id", newRequestID())
	}
	return p, p.body(), true
}

func digest(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:12])
}

func videoQuote(q billing.Quote) *createQuote {
	out := &createQuote{Amount: q.Amount, Currency: q.Currency}
	add := func(label, value string) { out.Parts = append(out.Parts, quotePart{label, value}) }
	switch q.Route {
	case "native":
		add("Rate", q.Rate.String()+" "+q.Currency+" per million tokens")
		add("Tokens reserved", itoa64(q.EstimatedTokens))
		add("Computed from", fmt.Sprintf("the largest frame the ratio allows (%d pixels) over the longest output (%s, a margin included)", q.MaxPixels, seconds(q.BoundMicros)))
	case "production":
		add("Rate", q.Rate.String()+" "+q.Currency+" per chargeable second")
		add("Output", fmt.Sprintf("%d s requested; %d s reserved (a margin for the output running over, rounded up to a whole second)",
			q.RequestSeconds, wholeSeconds(int64(q.RequestSeconds)*1_000_000+billing.OutputSlackMicros)))
		if q.VideoInput {
			var sum int64
			for _, m := range q.InputMicros {
				sum += m
			}
			add("Input video", seconds(sum)+" measured, at the video-input rate")
		}
	case "enhancement":
		add("Rate", q.Rate.String()+" "+q.Currency+" per chargeable second")
		add("Tier and band", q.Tier+", "+q.Band)
		add("Source", fmt.Sprintf("%s; %d s reserved (with a margin, rounded up to a whole second)", seconds(q.SourceMicros), wholeSeconds(q.SourceMicros+billing.OutputSlackMicros)))
		add("FPS multiplier", fmt.Sprintf("× %d", q.Multiplier))
	}
	return out
}

func speechQuote(q speech.Quote) *createQuote {
	return &createQuote{Amount: q.Amount, Currency: q.Currency, Parts: []quotePart{
		{"Rate", q.Rate.String() + " " + q.Currency + " per second of audio"},
		{"Characters", itoa64(int64(q.Characters))},
		{"Audio seconds reserved", itoa64(q.EstimatedSeconds)},
	}}
}

// wholeSeconds rounds a length in microseconds up to whole seconds, as billing charges it.
func wholeSeconds(micros int64) int64 { return (micros + 999_999) / 1_000_000 }
