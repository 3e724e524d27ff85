package usage

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode"

	"mediagen/internal/store"
)

// dims are the dimension columns, in the order reports show them.
var dims = []struct {
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

// figureColumns are the columns after the dimensions.
var figureColumns = []string{"currency", "count", "succeeded", "failed", "expired", "seconds", "tokens", "characters",
	"reserved", "charged", "overage", "refunded"}

// costColumns follow the figures in the operator's reports (Report.Columns): the cost's
// currency, the cost and the margin; "unknown" where the cost is unknown (never 0), and
// margin "" where the cost is in another currency than the charge.
var costColumns = []string{"cost_currency", "cost", "margin"}

// Columns names the columns of a report grouped by groupBy: its dimensions, then the figures.
func Columns(groupBy []string) []string {
	var out []string
	for _, d := range dims {
		if slices.Contains(groupBy, d.group) {
			out = append(out, d.name)
		}
	}
	return append(out, figureColumns...)
}

// Cells are a row's values in the order of Columns(groupBy), as text.
func Cells(groupBy []string, r Row) []string {
	var out []string
	for _, d := range dims {
		if slices.Contains(groupBy, d.group) {
			out = append(out, d.get(r))
		}
	}
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	out = append(out, r.Currency, i64(r.Count), i64(r.Succeeded), i64(r.Failed), i64(r.Expired), r.Seconds.String(),
		i64(r.Tokens), i64(r.Characters), r.Reserved.String(), r.Charged.String(), r.Overage.String(), r.Refunded.String())
	if c := r.Cost; c != nil {
		if !c.Known {
			return append(out, "", "unknown", "unknown")
		}
		cost, margin := "0", ""
		if c.Amount != nil {
			cost = c.Amount.String()
		}
		if c.Margin != nil {
			margin = c.Margin.String()
		}
		out = append(out, c.Currency, cost, margin)
	}
	return out
}

// WriteCSV writes the report's rows as RFC 4180 CSV (CRLF line ends; fields with commas,
// quotes or line breaks quoted, quotes doubled), one header line first. Totals are not
// written: every column adds up.
//
// CSV injection: a spreadsheet runs a cell that starts with =, +, -, @, a tab or a carriage
// return as a formula — also after leading spaces or invisible characters — and key names and
// aliases are chosen by people other than the one opening the file. Every such cell is
// prefixed with a single quote (Neutralize). Only the dimension cells (names) are neutralised: the figures are numbers
// this service writes, and a margin below zero must stay a number a spreadsheet adds up.
func WriteCSV(w io.Writer, rep Report) error {
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	if err := cw.Write(rep.Columns()); err != nil {
		return fmt.Errorf("usage csv: %w", err)
	}
	ndims := len(Columns(rep.GroupBy)) - len(figureColumns)
	for _, r := range rep.Data {
		rec := Cells(rep.GroupBy, r)
		for i := range rec[:ndims] {
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
// that starts with =, +, -, @, a tab or a carriage return (OWASP's CSV injection advice), and
// one where such a sign follows characters a spreadsheet skips or a reader does not see —
// spaces, no-break spaces and the other Unicode spaces (Zs), zero-width and other format
// characters (Cf: U+200B, U+FEFF, the bidi marks), and control characters — or is the
// full-width form of one (＝ ＋ － ＠), which some spreadsheets take for the sign.
func Neutralize(cell string) string {
	if cell == "" {
		return cell
	}
	if cell[0] == '\t' || cell[0] == '\r' {
		return "'" + cell
	}
	for _, r := range cell {
		if skipped(r) {
			continue
		}
		if formulaSign(r) {
			return "'" + cell
		}
		break
	}
	return cell
}

// skipped reports a rune that may stand before a formula's sign unseen: white space,
// Unicode space separators, format characters and control characters.
func skipped(r rune) bool {
	return unicode.IsSpace(r) || unicode.Is(unicode.Zs, r) || unicode.Is(unicode.Cf, r) || unicode.IsControl(r)
}

func formulaSign(r rune) bool {
	switch r {
	case '=', '+', '-', '@', '\uFF1D', '\uFF0B', '\uFF0D', '\uFF20':
		return true
	}
	return false
}
