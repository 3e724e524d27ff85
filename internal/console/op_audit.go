package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/apierr"
)

// auditPage is GET /console/audit: the audit log, newest first, filtered, a page at a time.
type auditPage struct {
	Form    auditForm
	Errors  map[string]string // field → message
	Entries []auditRow
	Next    string // the next page's URL ("" on the last page)
	Paged   bool   // this is not the first page
}

// auditForm is the filters as typed, kept for the form.
type auditForm struct {
	Actor, Action, TargetType, TargetID, Since, Until string
}

// auditRow is an entry with its before and after shown as indented JSON.
type auditRow struct {
	admin.AuditEntry
	BeforeText, AfterText string
}

// Err is a field's message, for the template.
func (p auditPage) Err(field string) string { return p.Errors[field] }

// auditInput is one filter field of the form: its value as typed and its error.
type auditInput struct{ Name, Label, Value, Err string }

// Field is the form's field name, for the template.
func (p auditPage) Field(name, label string) auditInput {
	v := map[string]string{"actor": p.Form.Actor, "action": p.Form.Action, "target_type": p.Form.TargetType,
		"target_id": p.Form.TargetID, "since": p.Form.Since, "until": p.Form.Until}[name]
	return auditInput{Name: name, Label: label, Value: v, Err: p.Errors[name]}
}

// auditFields are the form's fields, by the admin service's parameter names they answer.
var auditFields = map[string]string{"actor": "actor", "action": "action", "target": "target_id", "since": "since", "until": "until"}

func (o *Operator) audit(w http.ResponseWriter, r *http.Request, s *Session) error {
	q := r.URL.Query()
	p := auditPage{Errors: map[string]string{}, Form: auditForm{
		Actor: strings.TrimSpace(q.Get("actor")), Action: strings.TrimSpace(q.Get("action")),
		TargetType: strings.TrimSpace(q.Get("target_type")), TargetID: strings.TrimSpace(q.Get("target_id")),
		Since: strings.TrimSpace(q.Get("since")), Until: strings.TrimSpace(q.Get("until")),
	}}
	f := admin.AuditFilter{Actor: p.Form.Actor, Action: p.Form.Action, Cursor: q.Get("cursor"), Limit: PageSize}
	switch {
	case p.Form.TargetType != "":
		f.Target = p.Form.TargetType + ":" + p.Form.TargetID
	default:
		f.Target = p.Form.TargetID
	}
	if strings.Contains(p.Form.TargetType, ":") {
		p.Errors["target_type"] = "A target type has no colon."
	}
	var err error
	if f.Since, err = parseFilterTime(p.Form.Since, false); err != nil {
		p.Errors["since"] = "Since " + err.Error() + "."
	}
	if f.Until, err = parseFilterTime(p.Form.Until, true); err != nil {
		p.Errors["until"] = "Until " + err.Error() + "."
	}
	p.Paged = f.Cursor != ""
	if len(p.Errors) == 0 {
		list, err := o.cfg.Admin.Audit(r.Context(), o.actor(r, s), f)
		var ae *apierr.Error
		switch {
		case errors.As(err, &ae) && ae.Kind == apierr.KindInvalid:
			field, ok := auditFields[ae.Param]
			if !ok {
				return err // a cursor we did not hand out: the error page
			}
			p.Errors[field] = ae.Message
		case err != nil:
			return err
		default:
			for _, e := range list.Data {
				p.Entries = append(p.Entries, auditRow{AuditEntry: e, BeforeText: indentJSON(e.Before), AfterText: indentJSON(e.After)})
			}
			if list.HasMore {
				v := url.Values{}
				for name, val := range map[string]string{"actor": p.Form.Actor, "action": p.Form.Action, "target_type": p.Form.TargetType,
					"target_id": p.Form.TargetID, "since": p.Form.Since, "until": p.Form.Until} {
					if val != "" {
						v.Set(name, val)
					}
				}
				v.Set("cursor", list.NextCursor)
				p.Next = "/console/audit?" + v.Encode()
			}
		}
	}
	status := http.StatusOK
	if len(p.Errors) > 0 {
		status = http.StatusBadRequest
	}
	o.render(w, r, s, status, "op_audit", "Audit log", p)
	return nil
}

// parseFilterTime reads a date (2026-11-01: the start of that UTC day, the end of it when
// end is true), a datetime-local value (2026-11-01T13:05, UTC) or an RFC 3339 time.
func parseFilterTime(s string, end bool) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		if end {
			d = d.Add(24 * time.Hour)
		}
		return d, nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errors.New("must be a date (2026-11-01) or a UTC time (2026-11-01T13:05)")
}

// indentJSON shows a JSON value indented ("" for none); the template escapes it.
func indentJSON(v []byte) string {
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, v, "", "  "); err != nil {
		return string(v)
	}
	return buf.String()
}
