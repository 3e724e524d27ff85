package billing

import (
	"fmt"
	"math"

	"mediagen/internal/contract"
	"mediagen/internal/money"
)

// The charge is bounded both ways (docs/billing.md): above by what the request
// could legitimately produce — the reservation's bound — and below by what the measured
// result implies. What an upstream does beyond the request is recorded as upstream excess
// (the operator's), never charged to the tenant.

// Kinds of upstream excess: a closed set, the kind label of the excess metrics.
const (
	// ExcessDuration: the result ran longer than the request's bound; the stored result was
	// cut to the bound. Claimed is the price of the whole result, Amount the part beyond the
	// stored one.
	ExcessDuration = "duration"
	// ExcessOverRequest: the stored result is larger than the request asked for — a higher
	// frame rate, a larger frame, a higher enhancement FPS band — or still longer than the
	// bound. Claimed is its price as measured, Amount what lies above the request's bound.
	ExcessOverRequest = "over_request"
	// ExcessUsageOver: the upstream reported more usage than is billed (the ceiling: the
	// reservation's tokens, or 125% of the measured ones). Amount is the report above the
	// charge.
	ExcessUsageOver = "usage_over"
	// ExcessUsageUnder: the upstream reported less usage than its stored result implies (by
	// more than UnderReportTolerancePercent); the measured tokens are billed. Amount is the
	// charge above the report.
	ExcessUsageUnder = "usage_under"
	// ExcessLostCreate: a create's answer was lost on an upstream that can neither be asked
	// whether it made a job nor be given the same create safely (minimax: no idempotency key,
	// no search; dashscope: a task list whose tasks carry nothing of ours, when it shows a
	// task that may be the lost one). The task failed, refunded, rather than risk a second
	// paid job; the job the lost create may have made is the operator's possible loss. Claimed
	// and Amount are the task's reservation: the most such a job could have been billed. The
	// only kind a failed task records.
	ExcessLostCreate = "lost_create"
)

// ExcessKinds lists every kind, in the order reports show them.
var ExcessKinds = []string{ExcessDuration, ExcessOverRequest, ExcessUsageOver, ExcessUsageUnder, ExcessLostCreate}

// Excess is one thing an upstream did beyond (or below) a request, priced in the tenant's
// currency. It is kept in a task's state until the settlement records it.
type Excess struct {
	Kind     string       `json:"kind"`
	Upstream string       `json:"upstream"` // the catalog account
	Claimed  money.Micros `json:"claimed"`  // what the upstream's claim would have charged
	Amount   money.Micros `json:"amount"`   // the operator's part: see the kinds
	Detail   string       `json:"detail,omitempty"`
}

// LengthBound is the longest a task's result may measure under its request (µs; 0 when the
// quote predates the bound): the requested length, or the longest its family or the
// production makes for -1, or an enhancement's reserved source length — plus
// OutputSlackMicros. The reservation is computed from exactly this length, so a result within
// it never charges past its reservation; a result beyond it is cut to it.
func (q Quote) LengthBound() int64 {
	switch q.Route {
	case string(contract.RouteNative):
		return q.BoundMicros
	case string(contract.RouteProduction):
		if q.RequestSeconds > 0 {
			return int64(q.RequestSeconds)*microsPerSecond + OutputSlackMicros
		}
	case string(contract.RouteEnhancement):
		if q.SourceMicros > 0 {
			return q.SourceMicros + OutputSlackMicros
		}
	}
	return 0
}

// Delivered is a finished video task's result as stored (after any cut) and measured, and
// what its upstream reported.
type Delivered struct {
	Micros         int64 // length: the longer of the container's and the streams' (and samples')
	FPS            float64
	Width, Height  int
	ReportedTokens int64 // native: the upstream's usage; 0 when it reports none
}

// measured is the unbounded measure of d, as SettleAmount prices it.
func (d Delivered) measured() Measured {
	return Measured{OutputSeconds: float64(d.Micros) / microsPerSecond, OutputFPS: d.FPS,
		CompletionTokens: NativeTokens(d.Width, d.Height, d.FPS, float64(d.Micros)/microsPerSecond)}
}

// Claim is the unbounded price of a delivered result: what it would cost if the request had
// asked for exactly it. It prices the excess of results that ran past their request.
func Claim(q Quote, d Delivered) (money.Micros, error) { return SettleAmount(q, d.measured()) }

// Settlement is a completed task's bounded charge and what its upstream did beyond it.
type Settlement struct {
	Charge money.Micros
	Tokens int64    // native: the completion tokens billed (the task's usage)
	Excess []Excess // over_request, usage_over, usage_under; Upstream left for the caller
}

// Final is the charge of a completed video task:
//
//	charge = min(max(computed, floor), reservation)
//
// where the floor is the stored result measured with every factor capped at what the request
// allows (length at LengthBound, frame rate at the request's, frame at the ratio's largest,
// FPS band at the reserved one) — what the result legitimately implies — and computed is the
// upstream's reported usage for native (else the floor). Native usage is also held to 125% of
// the floor (MaxUsagePercent). Whatever the result measured above the request, and usage
// reported outside [floor, ceiling], comes back as Excess.
func Final(q Quote, d Delivered) (Settlement, error) {
	switch q.Route {
	case string(contract.RouteNative):
		return finalNative(q, d)
	case string(contract.RouteProduction), string(contract.RouteEnhancement):
		raw, err := Claim(q, d)
		if err != nil {
			return Settlement{}, err
		}
		capped := d
		if b := q.LengthBound(); b > 0 {
			capped.Micros = min(d.Micros, b)
		}
		var legit money.Micros
		if q.Route == string(contract.RouteProduction) {
			legit, err = SecondsCost(q.Rate, productionMicros(q.InputMicros, capped.Micros))
		} else {
			mult := FPSMultiplier(d.FPS)
			if q.Multiplier > 0 {
				mult = min(mult, q.Multiplier)
			}
			legit, err = enhancementCost(q.Rate, capped.Micros, mult)
		}
		if err != nil {
			return Settlement{}, err
		}
		s := Settlement{Charge: min(legit, q.Amount)}
		if raw > s.Charge {
			s.Excess = append(s.Excess, Excess{Kind: ExcessOverRequest, Claimed: raw, Amount: raw - s.Charge,
				Detail: fmt.Sprintf("result %.3f s at %.3f fps, above what the request allows", float64(d.Micros)/microsPerSecond, d.FPS)})
		}
		return s, nil
	}
	return Settlement{}, fmt.Errorf("settle: unknown route %q", q.Route)
}

// finalNative bounds the completion tokens billed: clamp(reported, floor, ceiling), where
// the floor is the stored video's tokens at no more than the request's frame, frame rate and
// length, and the ceiling is the reservation's tokens, or 125% of the floor when lower.
func finalNative(q Quote, d Delivered) (Settlement, error) {
	secs := float64(d.Micros) / microsPerSecond
	measured := NativeTokens(d.Width, d.Height, d.FPS, secs)
	floor := measured
	if q.MaxPixels > 0 && q.BoundMicros > 0 {
		px := min(int64(d.Width)*int64(d.Height), q.MaxPixels)
		floor = nativeTokensPx(px, min(d.FPS, NativeFPS), float64(min(d.Micros, q.BoundMicros))/microsPerSecond)
	}
	floor = min(floor, q.EstimatedTokens)
	ceiling := min(q.EstimatedTokens, max(UsageLimit(floor), floor))
	billed := floor
	if d.ReportedTokens > 0 {
		billed = min(max(d.ReportedTokens, floor), ceiling)
	}
	cost := func(tokens int64) money.Micros {
		c, _ := TokenCost(q.Rate, tokens) // the reservation's tokens priced without overflow, and every count here is at most that or a report
		return c
	}
	charge, err := TokenCost(q.Rate, billed)
	if err != nil {
		return Settlement{}, err
	}
	s := Settlement{Charge: min(charge, q.Amount), Tokens: billed}
	if measured > floor {
		s.Excess = append(s.Excess, Excess{Kind: ExcessOverRequest, Claimed: cost(measured), Amount: cost(measured) - cost(floor),
			Detail: fmt.Sprintf("result %dx%d at %.3f fps for %.3f s: %d tokens, %d within the request", d.Width, d.Height, d.FPS, secs, measured, floor)})
	}
	switch r := d.ReportedTokens; {
	case r > ceiling:
		s.Excess = append(s.Excess, Excess{Kind: ExcessUsageOver, Claimed: cost(r), Amount: cost(r) - s.Charge,
			Detail: fmt.Sprintf("reported %d tokens, billed %d (the stored video implies %d)", r, billed, floor)})
	case r > 0 && r < floor-floor*UnderReportTolerancePercent/100:
		s.Excess = append(s.Excess, Excess{Kind: ExcessUsageUnder, Claimed: cost(r), Amount: s.Charge - cost(r),
			Detail: fmt.Sprintf("reported %d tokens, billed the %d the stored video implies", r, billed)})
	}
	return s, nil
}

// UnderReportTolerancePercent is how far below the measured tokens a reported usage may be
// before it is recorded as usage_under: 1%, the difference an honest upstream's own count
// makes (a container rounded to the millisecond, a last frame counted or not). The measured
// tokens are billed either way; this only keeps such rounding out of the operator's records.
const UnderReportTolerancePercent = 1

// nativeTokensPx is NativeTokens of a frame of px pixels.
func nativeTokensPx(px int64, fps, seconds float64) int64 {
	return int64(math.Round(float64(px) * fps * seconds / TokenDivisor))
}

// SpeechBound is the longest a speech record's audio may measure (µs): the engine's measured
// bound for its text, frozen in the quote, or for a quote that predates it the reserved
// whole seconds.
func (q SpeechQuote) SpeechBound() int64 {
	if q.BoundMicros > 0 {
		return q.BoundMicros
	}
	return q.EstimatedSeconds * microsPerSecond
}

// SpeechFinal is the charge of a completed speech: the stored audio's measured duration ×
// rate, never above the reservation; audio measuring past the bound (which should have been
// cut) is over_request.
func SpeechFinal(q SpeechQuote, storedMicros int64) (money.Micros, []Excess, error) {
	raw, err := SpeechCharge(q, storedMicros)
	if err != nil {
		return 0, nil, err
	}
	legit, err := SpeechCharge(q, min(storedMicros, q.SpeechBound()))
	if err != nil {
		return 0, nil, err
	}
	charge := min(legit, q.Amount)
	if raw > charge {
		return charge, []Excess{{Kind: ExcessOverRequest, Claimed: raw, Amount: raw - charge,
			Detail: fmt.Sprintf("audio %.3f s, past the bound of %.3f s", float64(storedMicros)/microsPerSecond, float64(q.SpeechBound())/microsPerSecond)}}, nil
	}
	return charge, nil, nil
}
