package money

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"
)

// Ceilings (docs/limits.md, "Money"; docs/billing.md, "Ceilings"). An int64 of micro-units
// holds ±9,223,372,036,854 currency units; an amount that reaches the database unchecked can
// push a sum past that and make every later statement on the same row fail. So every amount a
// person states and every balance the ledger keeps has a ceiling far below the type's limit,
// checked before anything is written, and the arithmetic on amounts is checked (Add, Mul).

const (
	// MaxAmount is the ceiling of every amount an operator or a tenant can state: a credit, a
	// debit, an initial credit, a spend cap. One trillion units is far above any real top-up
	// (even in a currency of small units: 10^12 IDR is about 60 million US dollars), and at
	// 10^18 micro-units it leaves int64 room for nine such amounts in one sum.
	MaxAmount Micros = 1_000_000_000_000 * Scale

	// MaxBalance is the ceiling of a key's available and reserved balances, either sign: no
	// credit, debit or reservation may move one past it. The same trillion units: a key that
	// holds more was not topped up by a person.
	MaxBalance Micros = MaxAmount

	// MaxFunding is the ceiling of a currency's funding account, either sign: what was credited
	// to all keys in that currency, less what was debited, over the life of the database.
	// Four trillion units: it sums many keys, so it gets room above one key's ceiling, and at
	// 4×10^18 micro-units a posting of MaxAmount on it still cannot overflow int64.
	MaxFunding Micros = 4 * MaxAmount
)

// ErrOverflow reports arithmetic on amounts whose result would not fit the type.
var ErrOverflow = errors.New("amount arithmetic overflows")

// Add returns a + b, reporting false when the sum does not fit in int64.
func Add(a, b Micros) (Micros, bool) {
	s := a + b
	// Overflow happened iff both operands have the same sign and the sum's sign differs.
	if (a >= 0) == (b >= 0) && (s >= 0) != (a >= 0) {
		return 0, false
	}
	return s, true
}

// Sum adds amounts with Add, reporting false at the first overflow.
func Sum(ms ...Micros) (Micros, bool) {
	var s Micros
	for _, m := range ms {
		var ok bool
		if s, ok = Add(s, m); !ok {
			return 0, false
		}
	}
	return s, true
}

// Mul returns m × n, reporting false when the product does not fit in int64.
func Mul(m Micros, n int64) (Micros, bool) {
	neg := (m < 0) != (n < 0)
	hi, lo := bits.Mul64(abs(int64(m)), abs(n))
	if hi != 0 || lo > math.MaxInt64+boolU64(neg) {
		return 0, false
	}
	if neg {
		return Micros(-int64(lo-1) - 1), true // lo may be 2^63: negate without overflowing
	}
	return Micros(lo), true
}

func boolU64(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// MulInt returns a × b for plain int64 quantities (seconds in micro-units times a multiplier),
// reporting false when the product does not fit.
func MulInt(a, b int64) (int64, bool) {
	v, ok := Mul(Micros(a), b)
	return int64(v), ok
}

// AddInt returns a + b for plain int64 quantities, reporting false when the sum does not fit.
func AddInt(a, b int64) (int64, bool) {
	v, ok := Add(Micros(a), Micros(b))
	return int64(v), ok
}

// Cap is an optional spend cap: none, or an amount, 0 included (a cap of 0 lets nothing be
// spent). The zero Cap is none, so a key or tenant made without caps has none. One meaning
// everywhere (docs/billing.md, "Spend caps"): the API, the CLI, the console and the catalog
// read "none" as no cap and 0 as a cap of zero.
type Cap struct {
	amount Micros
	set    bool
}

// NoCap is the absence of a cap.
var NoCap = Cap{}

// CapOf is a cap of m (m ≥ 0; callers check the range with CheckCap).
func CapOf(m Micros) Cap { return Cap{amount: m, set: true} }

// Get returns the cap's amount and whether there is a cap.
func (c Cap) Get() (Micros, bool) { return c.amount, c.set }

// Set reports whether there is a cap.
func (c Cap) Set() bool { return c.set }

// Amount is the cap's amount (0 when there is none: ask Set first).
func (c Cap) Amount() Micros { return c.amount }

// String is the amount, or "none".
func (c Cap) String() string {
	if !c.set {
		return "none"
	}
	return c.amount.String()
}

// MarshalJSON writes the amount as a number, or "none".
func (c Cap) MarshalJSON() ([]byte, error) {
	if !c.set {
		return []byte(`"none"`), nil
	}
	return c.amount.MarshalJSON()
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Cap) UnmarshalJSON(b []byte) error {
	if string(b) == `"none"` {
		*c = NoCap
		return nil
	}
	var m Micros
	if err := m.UnmarshalJSON(b); err != nil {
		return err
	}
	*c = CapOf(m)
	return nil
}

// ErrCap reports text that is not a cap.
var ErrCap = fmt.Errorf("a cap must be an amount from 0 to %s (0: nothing may be spent), or none for no cap", MaxAmount)

// ParseCap reads a cap as people write it: "none" (any case) for no cap, else a decimal amount
// from 0 to MaxAmount.
func ParseCap(s string) (Cap, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "none") {
		return NoCap, nil
	}
	m, err := Parse(s)
	if err != nil || m < 0 || m > MaxAmount {
		return NoCap, ErrCap
	}
	return CapOf(m), nil
}
