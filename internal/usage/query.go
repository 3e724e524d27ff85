// Package usage answers usage, revenue and cost reports from the usage rollups that every
// settlement maintains in its own transaction (billing.SettleUsage): the admin report
// (`mediagen admin usage`, GET /admin/v1/usage) and a key's own figures (GET
// /v1/billing/usage). Reports read hours, never tasks, so their cost depends on the range and
// the number of keys and aliases, not on how many tasks were settled.
package usage

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/store"
)

// Range bounds: a report of hours covers at most MaxHourRange, any other at most MaxRange.
// They bound what one request can make the database read (a year of days is 8,784 hours of
// rollups per key and alias), so a huge range is a clear 400, never a slow query.
const (
	MaxRange     = 366 * 24 * time.Hour
	MaxHourRange = 31 * 24 * time.Hour
)

// Dimensions, by the names the query takes.
var (
	// AdminGroups are what an operator may group by.
	AdminGroups = []string{store.UsageByTenant, store.UsageByKey, store.UsageByAlias, store.UsageByRoute,
		store.UsageByUpstream, store.UsageByDay, store.UsageByHour}
	// KeyGroups are what a key may group its own figures by: no tenant, key or upstream
	// account (upstream accounts are the operator's: a tenant sees its aliases, never
	// upstream names).
	KeyGroups = []string{store.UsageByAlias, store.UsageByRoute, store.UsageByDay, store.UsageByHour}
)

// Query selects a report.
type Query struct {
	From, To time.Time // [From, To), whole UTC hours
	GroupBy  []string  // at most one of day and hour; the rows are split by currency always
	Tenant   string    // "" for every tenant
	Key      string    // "" for every key
	// Cost adds the operator's cost and margin to the rows (Row.Cost): the operator's
	// reports only, never a tenant's (a tenant sees aliases, never upstream names). Not a
	// query parameter.
	Cost bool
}

// ParseQuery reads from, to and group_by (and, when filters is true, tenant and key) from a
// query string, allowing the groups in allowed. Errors are 400s naming the parameter.
//
// from and to are RFC 3339 times on a whole UTC hour ("2026-11-01T00:00:00Z") or dates
// ("2026-11-01"); a date in to includes that whole day. from is required; to defaults to the
// end of the current hour.
func ParseQuery(v url.Values, allowed []string, filters bool, now time.Time) (Query, error) {
	for name := range v {
		known := name == "from" || name == "to" || name == "group_by" ||
			filters && (name == "tenant" || name == "key" || name == "format")
		if !known {
			return Query{}, apierr.Invalid(name, fmt.Sprintf("Unknown query parameter %q.", name))
		}
		if len(v[name]) > 1 {
			return Query{}, apierr.Invalid(name, fmt.Sprintf("The query parameter %q is given more than once.", name))
		}
	}
	var q Query
	var err error
	if v.Get("from") == "" {
		return Query{}, apierr.Invalid("from", "from is required: an RFC 3339 time on a whole UTC hour or a date (2026-11-01).")
	}
	if q.From, err = parseTime(v.Get("from"), false); err != nil {
		return Query{}, apierr.Invalid("from", "from "+err.Error())
	}
	if s := v.Get("to"); s != "" {
		if q.To, err = parseTime(s, true); err != nil {
			return Query{}, apierr.Invalid("to", "to "+err.Error())
		}
	} else {
		q.To = now.UTC().Truncate(time.Hour).Add(time.Hour)
	}
	if !q.To.After(q.From) {
		return Query{}, apierr.Invalid("to", "to must be after from.")
	}
	if q.GroupBy, err = parseGroups(v.Get("group_by"), allowed); err != nil {
		return Query{}, err
	}
	limit, what := MaxRange, "366 days"
	if slices.Contains(q.GroupBy, store.UsageByHour) {
		limit, what = MaxHourRange, "31 days when grouped by hour"
	}
	if q.To.Sub(q.From) > limit {
		return Query{}, apierr.Invalid("to", "The range from from to to is longer than "+what+"; ask for a shorter one.")
	}
	if filters {
		q.Tenant, q.Key = v.Get("tenant"), v.Get("key")
	}
	return q, nil
}

// parseTime reads an RFC 3339 time on a whole hour, or a date (the start of that UTC day; the
// end of it when end is true).
func parseTime(s string, end bool) (time.Time, error) {
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		if end {
			d = d.Add(24 * time.Hour)
		}
		return d, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("must be an RFC 3339 time (2026-11-01T13:00:00Z) or a date (2026-11-01)")
	}
	t = t.UTC()
	if !t.Truncate(time.Hour).Equal(t) {
		return time.Time{}, fmt.Errorf("must be on a whole hour: the rollups count hours")
	}
	if t.Year() < 2000 || t.Year() > 9999 {
		return time.Time{}, fmt.Errorf("is out of range")
	}
	return t, nil
}

// parseGroups reads a comma-separated list of dimensions.
func parseGroups(s string, allowed []string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var out []string
	for _, g := range strings.Split(s, ",") {
		g = strings.TrimSpace(g)
		if !slices.Contains(allowed, g) {
			return nil, apierr.Invalid("group_by", fmt.Sprintf("Unknown group %q: group_by takes a comma-separated list of %s.", g, strings.Join(allowed, ", ")))
		}
		if slices.Contains(out, g) {
			return nil, apierr.Invalid("group_by", fmt.Sprintf("The group %q is given twice.", g))
		}
		out = append(out, g)
	}
	if slices.Contains(out, store.UsageByDay) && slices.Contains(out, store.UsageByHour) {
		return nil, apierr.Invalid("group_by", "group_by takes at most one of day and hour.")
	}
	return out, nil
}
