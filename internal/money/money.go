// Package money holds amounts as int64 micro-units of a currency and converts them to and from
// decimal text exactly. Binary floats never touch an amount: a rate of 0.10 read as a float64
// is 0.1000000000000000055…, and a billion such additions drift.
package money

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Micros is an amount in millionths of a currency unit.
type Micros int64

// Scale is the number of micro-units in one currency unit.
const Scale = 1_000_000

// ErrSyntax reports decimal text that is not an amount.
var ErrSyntax = errors.New("not a decimal amount")

// Parse reads decimal text such as "12.50", "-3", "0.000001". More than six fractional digits,
// exponents, and values that overflow int64 micro-units are refused rather than rounded:
// an operator's typo should stop the load, not silently change a price.
func Parse(s string) (Micros, error) {
	t := strings.TrimSpace(s)
	neg := false
	if strings.HasPrefix(t, "-") {
		neg, t = true, t[1:]
	} else if strings.HasPrefix(t, "+") {
		t = t[1:]
	}
	whole, frac, hasDot := strings.Cut(t, ".")
	if whole == "" && frac == "" || (hasDot && frac == "" && whole == "") {
		return 0, fmt.Errorf("%q: %w", s, ErrSyntax)
	}
	if len(frac) > 6 {
		return 0, fmt.Errorf("%q: more than 6 decimal places: %w", s, ErrSyntax)
	}
	if !digits(whole) || !digits(frac) {
		return 0, fmt.Errorf("%q: %w", s, ErrSyntax)
	}
	var w uint64
	if whole != "" {
		var err error
		w, err = strconv.ParseUint(whole, 10, 63)
		if err != nil || w > math.MaxInt64/Scale {
			return 0, fmt.Errorf("%q: out of range: %w", s, ErrSyntax)
		}
	}
	f := uint64(0)
	if frac != "" {
		f, _ = strconv.ParseUint(frac+strings.Repeat("0", 6-len(frac)), 10, 63)
	}
	v := int64(w)*Scale + int64(f)
	if v < 0 {
		return 0, fmt.Errorf("%q: out of range: %w", s, ErrSyntax)
	}
	if neg {
		v = -v
	}
	return Micros(v), nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// String renders the amount as the shortest exact decimal: 12500000 → "12.5", 0 → "0".
func (m Micros) String() string {
	v := int64(m)
	sign := ""
	if v < 0 {
		sign = "-"
		if v == math.MinInt64 {
			return "-9223372036854.775808"
		}
		v = -v
	}
	whole, frac := v/Scale, v%Scale
	if frac == 0 {
		return sign + strconv.FormatInt(whole, 10)
	}
	fs := strings.TrimRight(fmt.Sprintf("%06d", frac), "0")
	return sign + strconv.FormatInt(whole, 10) + "." + fs
}

// MarshalJSON writes the amount as a JSON number in currency units, exactly.
func (m Micros) MarshalJSON() ([]byte, error) { return []byte(m.String()), nil }

// MulDiv returns m × num / den rounded half away from zero. The product is held in 128 bits
// (math/bits), so rate × tokens cannot overflow midway. It reports false when the result does
// not fit in int64 or den is not positive.
func MulDiv(m Micros, num, den int64) (Micros, bool) {
	if den <= 0 {
		return 0, false
	}
	neg := (m < 0) != (num < 0)
	hi, lo := bits.Mul64(abs(int64(m)), abs(num))
	if hi >= uint64(den) {
		return 0, false
	}
	q, r := bits.Div64(hi, lo, uint64(den))
	if 2*r >= uint64(den) {
		q++
	}
	if q > math.MaxInt64 {
		return 0, false
	}
	if neg {
		return Micros(-int64(q)), true
	}
	return Micros(q), true
}

func abs(a int64) uint64 {
	if a < 0 {
		return uint64(-a)
	}
	return uint64(a)
}

// UnmarshalJSON reads an amount written by MarshalJSON (a JSON number in currency units).
func (m *Micros) UnmarshalJSON(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}
