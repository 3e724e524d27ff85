package usage

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"

	"mediagen/internal/store"
)

// WriteCSV writes the report's rows as RFC 4180 CSV (CRLF line ends; fields with commas,
// quotes or line breaks quoted, quotes doubled), one header line first. Totals are not
// written: every column adds up.
//
// CSV injection: a spreadsheet runs a cell that starts with =, +, -, @, a tab or a carriage
// return as a formula, and key names and aliases are chosen by people other than the one
// opening the file. Every cell that starts with one of those is prefixed with a single quote
// (Neutralize). Numbers are never affected: every figure in a report is zero or positive
// (reserved, charged, overage and refunded are each ≥ 0 by construction), so none starts
// with '-'.
func WriteCSV(w io.Writer, rep Report) error {
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	var head []string
	dims := []struct {
		group, name string
		get         func(Row) string
	}{
		{store.UsageByDay, "day", func(r Row) string { return r.Day }},
		{store.UsageByHour, "hour", func(r Row) string { return r.Hour }},
		{store.UsageByTenant, "tenant", func(r Row) string { return r.Tenant }},
		{store.UsageByKey, "key", func(r Row) string { return r.Key }},
		{store.UsageByKey, "key_name", func(r Row) string { return r.KeyName }},
		{store.UsageByAlias, "alias", func(r Row) string { return r.Alias }},
		{store.UsageByRoute, "route", func(r Row) string { return r.Route }},
		{store.UsageByUpstream, "upstream", func(r Row) string { return r.Upstream }},
	}
	var cols []func(Row) string
	for _, d := range dims {
		if slices.Contains(rep.GroupBy, d.group) {
			head = append(head, d.name)
			cols = append(cols, d.get)
		}
	}
	head = append(head, "currency", "count", "succeeded", "failed", "expired", "seconds", "tokens", "characters",
		"reserved", "charged", "overage", "refunded")
	if err := cw.Write(head); err != nil {
		return fmt.Errorf("usage csv: %w", err)
	}
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, r := range rep.Data {
		rec := make([]string, 0, len(head))
		for _, get := range cols {
			rec = append(rec, get(r))
		}
		rec = append(rec, r.Currency, i64(r.Count), i64(r.Succeeded), i64(r.Failed), i64(r.Expired), r.Seconds.String(),
			i64(r.Tokens), i64(r.Characters), r.Reserved.String(), r.Charged.String(), r.Overage.String(), r.Refunded.String())
		for i := range rec {
			rec[i] = Neutralize(rec[i])
		}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("usage csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("usage csv: %w", err)
	}
	return nil
}

// Neutralize prefixes a single quote to a cell a spreadsheet would read as a formula: one
// that starts with =, +, -, @, a tab or a carriage return (OWASP's CSV injection advice).
func Neutralize(cell string) string {
	if cell == "" {
		return cell
	}
	switch cell[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + cell
	}
	return cell
}
