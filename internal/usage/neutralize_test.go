package usage

import (
	"strings"
	"testing"
	"unicode"
)

func TestNeutralizeQuotesEveryFormulaASpreadsheetWouldRun(t *testing.T) {
	for _, c := range []struct {
		cell        string
		neutralised bool
	}{
		{"=1+1", true},
		{"+1", true},
		{"-1", true},
		{"@SUM(A1)", true},
		{"\tTAB", true},
		{"\rCR", true},
		{" =1+1", true},                   // a space
		{"   @x", true},                   // spaces
		{"\u00a0=1+1", true},              // NBSP
		{"\u200b=1+1", true},              // zero-width space
		{"\ufeff+1", true},                // BOM / zero-width no-break space
		{"\u200e\u202e-1", true},          // bidi marks
		{"\u3000=x", true},                // ideographic space
		{"\n=x", true},                    // a line break
		{"\x0b@x", true},                  // vertical tab
		{"\uff1dcmd|' /C calc'!A0", true}, // full-width =
		{"\uff20x", true},                 // full-width @
		{"plain", false},
		{" plain", false},
		{"\u00a0plain", false},
		{"a=b", false},
		{"'=already quoted", false},
		{"", false},
		{"\u00a0", false},
		{"\xff=x", false}, // invalid UTF-8 is a character a spreadsheet shows, not skips
	} {
		got := Neutralize(c.cell)
		want := c.cell
		if c.neutralised {
			want = "'" + c.cell
		}
		if got != want {
			t.Errorf("Neutralize(%q) = %q, want %q", c.cell, got, want)
		}
	}
}

// FuzzNeutralize: whatever a tenant names a key or an alias, the cell either starts with the
// quote or its first character a reader sees is no formula sign; the text itself is kept.
func FuzzNeutralize(f *testing.F) {
	for _, s := range []string{"=1", " =1", "\u00a0+1", "\u200b@x", "plain", "\t-1", "\uff1d1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cell string) {
		got := Neutralize(cell)
		if got != cell && got != "'"+cell {
			t.Fatalf("Neutralize(%q) = %q: changed the text", cell, got)
		}
		if strings.HasPrefix(got, "'") && got != cell {
			return
		}
		for _, r := range got {
			if unicode.IsSpace(r) || unicode.In(r, unicode.Zs, unicode.Cf, unicode.Cc) {
				continue
			}
			if strings.ContainsRune("=+-@\uff1d\uff0b\uff0d\uff20", r) {
				t.Fatalf("Neutralize(%q) = %q: a formula sign after skippable characters", cell, got)
			}
			break
		}
	})
}
