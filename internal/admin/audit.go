package admin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"mediagen/internal/idgen"
	"mediagen/internal/store"
)

// AuditFilter selects audit entries. Target is "TYPE:ID" or an id alone.
type AuditFilter struct {
	Actor  string // a token id, or "cli"
	Action string
	Target string
	Since  time.Time
	Until  time.Time
	Cursor string
	Limit  int
}

// Audit lists audit entries, newest first.
func (s *Service) Audit(ctx context.Context, a Actor, f AuditFilter) (List[AuditEntry], error) {
	if err := Need(a, RoleViewer); err != nil {
		return List[AuditEntry]{}, err
	}
	for _, p := range []struct{ name, v string }{{"actor", f.Actor}, {"action", f.Action}, {"target", f.Target}} {
		if err := checkText(p.name, p.v, 2*MaxNameChars, false); err != nil {
			return List[AuditEntry]{}, err
		}
	}
	if f.Cursor != "" && !idgen.Plausible(f.Cursor) {
		return List[AuditEntry]{}, invalidf("cursor", "cursor is not one this service handed out.")
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return List[AuditEntry]{}, invalidf("until", "until must be after since.")
	}
	limit, err := pageSize("limit", f.Limit)
	if err != nil {
		return List[AuditEntry]{}, err
	}
	q := store.AuditQuery{ActorID: f.Actor, Action: f.Action, Since: f.Since, Until: f.Until, Before: f.Cursor, Limit: limit + 1}
	if typ, id, ok := strings.Cut(f.Target, ":"); ok {
		q.TargetType, q.TargetID = typ, id
	} else {
		q.TargetID = f.Target
	}
	entries, err := s.st.Audit(ctx, q)
	if err != nil {
		return List[AuditEntry]{}, fmt.Errorf("audit: %w", err)
	}
	more := len(entries) > limit
	entries = entries[:min(len(entries), limit)]
	out := make([]AuditEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, auditView(e))
	}
	next := ""
	if len(entries) > 0 {
		next = entries[len(entries)-1].ID
	}
	return newList(out, more, next), nil
}

// Tenants lists the tenants of the catalog in force.
func (s *Service) Tenants(ctx context.Context, a Actor) (List[Tenant], error) {
	if err := Need(a, RoleViewer); err != nil {
		return List[Tenant]{}, err
	}
	var out []Tenant
	for _, t := range s.catalog().Tenants {
		aliases := make([]string, 0, len(t.Aliases))
		for _, al := range t.Aliases {
			aliases = append(aliases, al.Name)
		}
		out = append(out, Tenant{Object: "tenant", ID: t.ID, Name: t.Name, Currency: t.Currency, Aliases: aliases})
	}
	return newList(out, false, ""), nil
}
