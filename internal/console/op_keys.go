package console

import (
	"net/http"
	"net/url"

	"mediagen/internal/admin"
	"mediagen/internal/apierr"
)

// The operator console's Keys list (issue 27): keys of every tenant, searched by tenant,
// state and name prefix, a page at a time (admin.Service.Keys).

type opKeysPage struct {
	Filter  url.Values
	Errs    fieldErrs
	Tenants []admin.Tenant
	States  []string
	Keys    []admin.Key
	Next    string // the next page's URL, "" on the last
}

// Val is a filter's value as typed.
func (p opKeysPage) Val(name string) string { return p.Filter.Get(name) }

func (o *Operator) keysList(w http.ResponseWriter, r *http.Request, s *Session) error {
	q := r.URL.Query()
	f := admin.KeyFilter{Tenant: q.Get("tenant"), State: q.Get("state"), NamePrefix: q.Get("name"), Cursor: q.Get("cursor"), Limit: PageSize}
	p := opKeysPage{Filter: q, States: []string{"active", "expired", "revoked"}}
	if ts, err := o.cfg.Admin.Tenants(r.Context(), s.Actor); err == nil {
		p.Tenants = ts.Data
	}
	list, err := o.cfg.Admin.Keys(r.Context(), s.Actor, f)
	if err != nil {
		e := apierr.As(err)
		if e.Kind != apierr.KindInvalid {
			return err
		}
		p.Errs = fieldErrs{paramField(e.Param, map[string]string{"name_prefix": "name"}, "state", "name", "cursor"): e.Message}
		o.render(w, r, s, http.StatusBadRequest, "op_keys", "Keys", p)
		return nil
	}
	p.Keys = list.Data
	if list.HasMore {
		p.Next = nextPage(r.URL, list.NextCursor)
	}
	o.Render(w, r, s, "op_keys", "Keys", p)
	return nil
}

// nextPage is u with its cursor replaced.
func nextPage(u *url.URL, cursor string) string {
	q := u.Query()
	q.Set("cursor", cursor)
	return u.Path + "?" + q.Encode()
}

// fieldErrs are a form's messages by field name.
type fieldErrs map[string]string

// paramField maps a service error's param to the form field it is about (renamed by names);
// a param that is no field of the form (known) is the form's own message, "".
func paramField(param string, names map[string]string, known ...string) string {
	if n, ok := names[param]; ok {
		param = n
	}
	for _, k := range known {
		if k == param {
			return param
		}
	}
	return ""
}
