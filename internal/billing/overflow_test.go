package billing

import (
	"math"
	"testing"

	"mediagen/internal/catalog"
	"mediagen/internal/money"
)

// TestHugeMeasuredQuantitiesAreRefusedNotWrapped: a measured duration or token count that a
// header can claim (any float) never wraps into a small or negative charge; the checked price
// refuses it. Before, int64(float) of 1e300 was the int64 minimum and 2^62 µs + slack wrapped.
func TestHugeMeasuredQuantitiesAreRefusedNotWrapped(t *testing.T) {
	t.Parallel()
	rate := money.Micros(catalog.MaxRate)
	for _, secs := range []float64{1e300, math.Inf(1), math.NaN(), 9.3e12} {
		if us := SecondsToMicros(secs); us <= 0 {
			t.Errorf("SecondsToMicros(%g) = %d, want a large positive quantity", secs, us)
		}
		q := Quote{Route: "production", Rate: rate, InputMicros: []int64{SecondsToMicros(secs), SecondsToMicros(secs)}}
		if v, err := SettleAmount(q, Measured{OutputSeconds: secs}); err == nil {
			t.Errorf("production of %g s priced at %s, want an overflow error", secs, v)
		}
		q = Quote{Route: "enhancement", Rate: rate}
		if v, err := SettleAmount(q, Measured{OutputSeconds: secs, OutputFPS: 120}); err == nil {
			t.Errorf("enhancement of %g s priced at %s, want an overflow error", secs, v)
		}
	}
	if tok := NativeTokens(1<<30, 1<<30, 1e9, 1e9); tok != maxQuantity {
		t.Errorf("NativeTokens of an absurd video = %d, want the saturated %d", tok, int64(maxQuantity))
	}
	if l := UsageLimit(math.MaxInt64 / 2); l != maxQuantity {
		t.Errorf("UsageLimit of a huge count = %d, want %d", l, int64(maxQuantity))
	}
	// The largest rate times the longest real request stays far below the ceiling of one amount.
	v, err := SecondsCost(rate, productionMicros([]int64{30e6, 30e6, 30e6, 30e6, 30e6, 30e6, 30e6, 30e6, 30e6, 30e6}, 30e6+OutputSlackMicros))
	if err != nil || v > money.MaxAmount/1000 {
		t.Errorf("largest real production at the rate ceiling: %s, %v", v, err)
	}
}
