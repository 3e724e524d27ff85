package money

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func TestAddReportsOverflowInsteadOfWrapping(t *testing.T) {
	tests := []struct {
		a, b Micros
		want Micros
		ok   bool
	}{
		{1, 2, 3, true},
		{-5, 3, -2, true},
		{math.MaxInt64, 0, math.MaxInt64, true},
		{math.MaxInt64, 1, 0, false},
		{math.MinInt64, -1, 0, false},
		{math.MinInt64, math.MaxInt64, -1, true},
		// The credit on a funding account already at -80 units: the sum wraps.
		{-9223372036774_775807, -80_000_002, 0, false},
		{MaxFunding, MaxAmount, MaxFunding + MaxAmount, true},
	}
	for _, tt := range tests {
		got, ok := Add(tt.a, tt.b)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("Add(%d, %d) = %d, %v; want %d, %v", tt.a, tt.b, got, ok, tt.want, tt.ok)
		}
	}
}

func TestMulReportsOverflowInsteadOfWrapping(t *testing.T) {
	tests := []struct {
		m    Micros
		n    int64
		want Micros
		ok   bool
	}{
		{3, 4, 12, true},
		{-3, 4, -12, true},
		{3, -4, -12, true},
		{math.MaxInt64, 1, math.MaxInt64, true},
		{math.MinInt64, 1, math.MinInt64, true},
		{math.MinInt64, -1, 0, false},
		{1 << 62, 2, 0, false},
		{-(1 << 62), 2, math.MinInt64, true},
		// The console's old grace: 18446744074 s × 1e9 wrapped to 0.29 s.
		{18446744074, 1_000_000_000, 0, false},
	}
	for _, tt := range tests {
		got, ok := Mul(tt.m, tt.n)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("Mul(%d, %d) = %d, %v; want %d, %v", tt.m, tt.n, got, ok, tt.want, tt.ok)
		}
	}
}

// TestCheckedArithmeticAgreesWithBigInts: Add and Mul answer exactly what arbitrary precision
// does, or refuse exactly when it does not fit.
func TestCheckedArithmeticAgreesWithBigInts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pick := func() int64 {
		switch r.IntN(4) {
		case 0:
			return r.Int64N(1000) - 500
		case 1:
			return math.MaxInt64 - r.Int64N(1000)
		case 2:
			return math.MinInt64 + r.Int64N(1000)
		}
		return int64(r.Uint64())
	}
	fits := func(b *big.Int) bool { return b.IsInt64() }
	for range 20000 {
		a, b := pick(), pick()
		sum := new(big.Int).Add(big.NewInt(a), big.NewInt(b))
		if got, ok := Add(Micros(a), Micros(b)); ok != fits(sum) || ok && int64(got) != sum.Int64() {
			t.Fatalf("Add(%d, %d) = %d, %v; exact %s", a, b, got, ok, sum)
		}
		prod := new(big.Int).Mul(big.NewInt(a), big.NewInt(b))
		if got, ok := Mul(Micros(a), b); ok != fits(prod) || ok && int64(got) != prod.Int64() {
			t.Fatalf("Mul(%d, %d) = %d, %v; exact %s", a, b, got, ok, prod)
		}
	}
}

func TestCeilingsLeaveRoomInInt64(t *testing.T) {
	// A posting of the largest amount on an account at its ceiling, either sign, must be
	// computable by the database without overflow: that is what makes a refusal possible.
	for _, c := range []Micros{MaxBalance, MaxFunding} {
		if _, ok := Add(c, MaxAmount); !ok {
			t.Errorf("ceiling %s + MaxAmount overflows", c)
		}
		if _, ok := Add(-c, -MaxAmount); !ok {
			t.Errorf("-ceiling %s - MaxAmount overflows", c)
		}
	}
}

func TestParseCapReadsNoneAndZeroApart(t *testing.T) {
	tests := []struct {
		in   string
		want Cap
		err  bool
	}{
		{"none", NoCap, false},
		{" NONE ", NoCap, false},
		{"0", CapOf(0), false},
		{"5.25", CapOf(5_250_000), false},
		{"1000000000000", CapOf(MaxAmount), false},
		{"1000000000000.000001", NoCap, true},
		{"-1", NoCap, true},
		{"", NoCap, true},
		{"nothing", NoCap, true},
	}
	for _, tt := range tests {
		got, err := ParseCap(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseCap(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.err)
		}
		if err != nil && !errors.Is(err, ErrCap) {
			t.Errorf("ParseCap(%q): %v is not ErrCap", tt.in, err)
		}
	}
	if NoCap.Set() || !CapOf(0).Set() || (Cap{}) != NoCap {
		t.Error("the zero Cap must be none, and a cap of 0 a cap")
	}
}
