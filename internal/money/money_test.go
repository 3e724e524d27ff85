package money

import (
	"errors"
	"testing"
)

func TestParseAndString(t *testing.T) {
	tests := []struct {
		in   string
		want Micros
		out  string
	}{
		{"12.50", 12_500_000, "12.5"},
		{"0", 0, "0"},
		{"0.000001", 1, "0.000001"},
		{"-3", -3_000_000, "-3"},
		{"+7.25", 7_250_000, "7.25"},
		{".5", 500_000, "0.5"},
		{"5.", 5_000_000, "5"},
		{"9223372036854.775807", 9223372036854775807, "9223372036854.775807"},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.in, err)
		}
		if got != tt.want || got.String() != tt.out {
			t.Errorf("Parse(%q) = %d (%s), want %d (%s)", tt.in, got, got, tt.want, tt.out)
		}
	}
}

func TestParseRejectsNonAmounts(t *testing.T) {
	for _, in := range []string{"", ".", "-", "1e3", "0.0000001", "abc", "1.2.3", "1,5", "99999999999999", " - 1", "NaN"} {
		if _, err := Parse(in); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) err = %v, want ErrSyntax", in, err)
		}
	}
}

func TestMulDivRoundsHalfAwayFromZero(t *testing.T) {
	tests := []struct {
		m        Micros
		num, den int64
		want     Micros
	}{
		{2_500_000, 1_000_000, 1_000_000, 2_500_000},
		{3, 1, 2, 2},   // 1.5 → 2
		{-3, 1, 2, -2}, // -1.5 → -2
		{1, 1, 3, 0},
		{2, 1, 3, 1},
		{9_000_000_000_000, 9_000_000, 1_000_000, 81_000_000_000_000}, // product overflows int64 midway
	}
	for _, tt := range tests {
		got, ok := MulDiv(tt.m, tt.num, tt.den)
		if !ok || got != tt.want {
			t.Errorf("MulDiv(%d,%d,%d) = %d,%v want %d", tt.m, tt.num, tt.den, got, ok, tt.want)
		}
	}
	if _, ok := MulDiv(1<<62, 1<<62, 1); ok {
		t.Error("MulDiv overflow not reported")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"1", "12.50", "-0.000001", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := Parse(s)
		if err != nil {
			return
		}
		back, err := Parse(m.String())
		if err != nil || back != m {
			t.Fatalf("round trip %q → %s → %d, %v", s, m, back, err)
		}
	})
}

func TestJSONRoundTrip(t *testing.T) {
	for _, m := range []Micros{0, 1, 129_600, -5_000_000, 12_500_000} {
		b, _ := m.MarshalJSON()
		var back Micros
		if err := back.UnmarshalJSON(b); err != nil || back != m {
			t.Errorf("%d → %s → %d, %v", m, b, back, err)
		}
	}
}
