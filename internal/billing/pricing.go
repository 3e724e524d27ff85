package billing

import (
	"errors"
	"fmt"
	"math"

	"github.com/go-json-experiment/json"

	"mediagen/internal/catalog"
	"mediagen/internal/contract"
	"mediagen/internal/money"
)

// The numbers a reservation is computed with. Every reservation is an upper bound of the
// final charge (docs/billing.md): where the request leaves a number to the model, the
// reservation takes the largest value the model can choose.
const (
	// NativeFPS is the frame rate the token formula assumes (and the sandbox renders at).
	NativeFPS = 24
	// TokenDivisor is the pixel-frames per completion token: tokens = w × h × fps × s / 1024.
	TokenDivisor = 1024
	// OutputSlackMicros is how far a finished video may run past the length it was asked
	// for (or past its source, for enhancement): containers end on whole video frames and
	// audio packets, so a 5 s request measures 5.042 s with audio. 0.25 s is six frames at
	// 24 fps and well above the most the property test (billing_property_test.go in
	// internal/httpapi) has measured on the sandbox; see docs/billing.md.
	OutputSlackMicros = 250_000
	// microsPerSecond converts seconds to the integer microseconds used for billable time.
	microsPerSecond = 1_000_000
)

// ErrNoRate reports a price the tenant's rate card lacks (the catalog check prevents it).
var ErrNoRate = errors.New("no rate for this product")

// Quote is a priced request: the reservation and everything settlement needs, frozen at
// acceptance and stored with the task.
type Quote struct {
	Route    string       `json:"route"`
	Currency string       `json:"currency"`
	Rate     money.Micros `json:"rate"` // per million tokens (native) or per chargeable second
	Amount   money.Micros `json:"amount"`

	// native
	EstimatedTokens int64 `json:"estimated_tokens,omitempty"`
	// MaxPixels is the largest frame the ratio allows (w × h) and BoundMicros the longest
	// output (the requested or the family's longest length + OutputSlackMicros): with
	// NativeFPS, what EstimatedTokens was computed from, and what a result's tokens are
	// capped at before billing (Final).
	MaxPixels   int64 `json:"max_pixels,omitempty"`
	BoundMicros int64 `json:"bound_micros,omitempty"`

	// production
	VideoInput     bool    `json:"video_input,omitempty"`
	InputMicros    []int64 `json:"input_micros,omitempty"` // each measured input video, in µs
	RequestSeconds int     `json:"request_seconds,omitempty"`

	// enhancement
	Tier       string `json:"tier,omitempty"` // lite, standard, professional
	Band       string `json:"band,omitempty"`
	Multiplier int    `json:"multiplier,omitempty"`
	// SourceMicros is the source length reserved for: max(declared, measured).
	SourceMicros int64 `json:"source_micros,omitempty"`
}

// QuoteCurrency reads the currency of a stored quote ("" when it cannot be read).
func QuoteCurrency(pricing []byte) string {
	var q struct {
		Currency string `json:"currency"`
	}
	if err := json.Unmarshal(pricing, &q); err != nil {
		return ""
	}
	return q.Currency
}

// NativeTokens is the documented token formula. A measured video can claim any size, so the
// float is converted with saturation (saturate), never by Go's undefined conversion of an
// out-of-range float: a result at maxQuantity then fails the checked price, not wraps.
func NativeTokens(width, height int, fps float64, seconds float64) int64 {
	return saturate(math.Round(float64(width) * float64(height) * fps * seconds / TokenDivisor))
}

// maxQuantity bounds every quantity a price multiplies (tokens, microseconds): any positive
// rate times it overflows the checked price (MulDiv), which refuses it as an error instead of
// charging a wrapped amount. 2^62 leaves room to add two of them without int64 overflow.
const maxQuantity = 1 << 62

// saturate converts a float quantity to int64, clamped to [-maxQuantity, maxQuantity]; NaN is
// maxQuantity (refused downstream, never free).
func saturate(f float64) int64 {
	switch {
	case math.IsNaN(f) || f >= maxQuantity:
		return maxQuantity
	case f <= -maxQuantity:
		return -maxQuantity
	}
	return int64(f)
}

// addQuantity adds two quantities, saturating at ±maxQuantity.
func addQuantity(a, b int64) int64 {
	s, ok := money.AddInt(a, b)
	if !ok || s > maxQuantity {
		return maxQuantity
	}
	return max(s, -maxQuantity)
}

// MaxUsagePercent bounds an upstream's reported completion tokens against the tokens of the
// video as measured: 125%, room for the upstream counting frames or padding a little
// differently from the probe, never for a different video.
const MaxUsagePercent = 125

// UsageLimit is the most completion tokens billed for a video measured at measured tokens.
func UsageLimit(measured int64) int64 {
	v, ok := money.MulInt(measured, MaxUsagePercent)
	if !ok {
		return maxQuantity
	}
	return min(v/100, maxQuantity)
}

// TokenCost prices completion tokens at a per-million rate.
func TokenCost(rate money.Micros, tokens int64) (money.Micros, error) {
	v, ok := money.MulDiv(rate, tokens, 1_000_000)
	if !ok {
		return 0, fmt.Errorf("token cost overflows")
	}
	return v, nil
}

// SecondsCost prices billable time given in microseconds at a per-second rate.
func SecondsCost(rate money.Micros, micros int64) (money.Micros, error) {
	v, ok := money.MulDiv(rate, micros, microsPerSecond)
	if !ok {
		return 0, fmt.Errorf("seconds cost overflows")
	}
	return v, nil
}

// EstimateNative reserves for the most tokens the requested output can take: the largest
// frame the ratio allows (adaptive: any ratio), the requested length or, for -1, the longest
// the family produces, plus OutputSlackMicros.
func EstimateNative(t *catalog.Tenant, a *catalog.Alias, p *contract.NativeParams) (Quote, error) {
	rate, ok := t.Rates.NativeRate(a.Name)
	if !ok {
		return Quote{}, fmt.Errorf("native %s: %w", a.Name, ErrNoRate)
	}
	w, h := contract.MaxDimensions(p.Resolution, p.Ratio)
	secs := p.Duration
	if secs <= 0 {
		secs = contract.NativeMaxSeconds(contract.Family(a.Family))
	}
	bound := addQuantity(int64(secs)*microsPerSecond, OutputSlackMicros)
	tokens := NativeTokens(w, h, NativeFPS, float64(bound)/microsPerSecond)
	amount, err := TokenCost(rate, tokens)
	if err != nil {
		return Quote{}, err
	}
	return Quote{Route: string(contract.RouteNative), Currency: t.Currency, Rate: rate, Amount: amount, EstimatedTokens: tokens,
		MaxPixels: int64(w) * int64(h), BoundMicros: bound}, nil
}

// SecondsToMicros turns measured seconds into integer microseconds, rounding to the nearest:
// media durations are exact in their timescale, and a float like 2.125 must stay 2125000.
func SecondsToMicros(s float64) int64 { return saturate(math.Round(s * microsPerSecond)) }

// ceilSeconds rounds a measured duration up to whole seconds, from integer microseconds so
// that 5.000000 measured as 4.9999999999 or 5.0000000001 still counts as 5.
func ceilSeconds(us int64) int64 { return addQuantity(us, microsPerSecond-1) / microsPerSecond }

// EstimateProduction reserves for the measured input videos plus the longest output the
// request can end with: the requested length (for -1, the longest production length) plus
// OutputSlackMicros, rounded up to whole seconds as the final charge is.
func EstimateProduction(t *catalog.Tenant, p *contract.ProductionParams, inputSeconds []float64) (Quote, error) {
	videoInput := len(inputSeconds) > 0 || p.HasVideoInput
	rate, ok := t.Rates.ProductionRate(catalog.Tier(p.Tier), catalog.Resolution(p.Resolution), videoInput)
	if !ok {
		return Quote{}, fmt.Errorf("production %s %s: %w", p.Tier, p.Resolution, ErrNoRate)
	}
	secs := p.Duration
	if secs <= 0 {
		secs = contract.ProductionMaxSeconds
	}
	q := Quote{Route: string(contract.RouteProduction), Currency: t.Currency, Rate: rate, VideoInput: videoInput, RequestSeconds: secs}
	for _, s := range inputSeconds {
		q.InputMicros = append(q.InputMicros, SecondsToMicros(s))
	}
	amount, err := SecondsCost(rate, productionMicros(q.InputMicros, addQuantity(int64(secs)*microsPerSecond, OutputSlackMicros)))
	if err != nil {
		return Quote{}, err
	}
	q.Amount = amount
	return q, nil
}

// productionMicros is the contract's chargeable time: every measured input video (fractions
// kept, repeats counted) plus the output rounded up to a whole second.
//
// The sum saturates at maxQuantity (checked additions): a sum that would wrap is then refused
// by the checked price instead of becoming a small or negative charge.
func productionMicros(inputs []int64, outputMicros int64) int64 {
	total, ok := money.MulInt(ceilSeconds(outputMicros), microsPerSecond)
	if !ok {
		total = maxQuantity
	}
	for _, in := range inputs {
		total = addQuantity(total, in)
	}
	return total
}

// ProductionChargeable is the chargeable seconds (as µs) of a finished production task.
func ProductionChargeable(q Quote, outputSeconds float64) int64 {
	return productionMicros(q.InputMicros, SecondsToMicros(outputSeconds))
}

// FPSMultiplier is the enhancement FPS band: up to 30 → 1, up to 60 → 2, above → 4.
func FPSMultiplier(fps float64) int {
	switch {
	case fps <= 30:
		return 1
	case fps <= 60:
		return 2
	default:
		return 4
	}
}

// EnhancementTier names the rate-card tier of an enhancement request.
func EnhancementTier(route contract.EnhRoute, toolVersion string) string {
	if route == contract.EnhLite {
		return "lite"
	}
	if toolVersion == contract.ToolProfessional {
		return "professional"
	}
	return "standard"
}

// EstimateEnhancement reserves for the source length — the larger of the declared and the
// measured duration, so a declared number can raise the reservation but never lower it —
// plus OutputSlackMicros, rounded up, at the band rate, times the multiplier of the explicit
// fps, or 4 when fps is omitted, since the output fps is unknown until the output exists.
func EstimateEnhancement(t *catalog.Tenant, route contract.EnhRoute, p *contract.EnhancementParams, measuredSeconds float64) (Quote, error) {
	tier := EnhancementTier(route, p.ToolVersion)
	rate, ok := t.Rates.EnhancementRate(tier, p.Band)
	if !ok {
		return Quote{}, fmt.Errorf("enhancement %s %s: %w", tier, p.Band, ErrNoRate)
	}
	mult := 4
	if p.FPS != nil {
		mult = FPSMultiplier(float64(*p.FPS))
	}
	q := Quote{Route: string(contract.RouteEnhancement), Currency: t.Currency, Rate: rate, Tier: tier, Band: p.Band, Multiplier: mult,
		SourceMicros: SecondsToMicros(max(p.Duration, measuredSeconds))}
	amount, err := enhancementCost(rate, addQuantity(q.SourceMicros, OutputSlackMicros), mult)
	if err != nil {
		return Quote{}, err
	}
	q.Amount = amount
	return q, nil
}

func enhancementCost(rate money.Micros, durationMicros int64, mult int) (money.Micros, error) {
	units, ok := money.MulInt(ceilSeconds(durationMicros), int64(mult))
	if !ok {
		return 0, fmt.Errorf("enhancement cost overflows")
	}
	v, ok := money.MulDiv(rate, units, 1)
	if !ok {
		return 0, fmt.Errorf("enhancement cost overflows")
	}
	return v, nil
}

// Measured is what a completed task's result measures, for SettleAmount.
type Measured struct {
	OutputSeconds    float64 // ffprobe of the final output
	OutputFPS        float64 // ffprobe of the final output (enhancement band)
	CompletionTokens int64   // native usage
}

// SettleAmount prices measured values under a frozen quote with no bound: what the result
// would cost if the request had asked for exactly it. A task's charge is Final, which bounds
// this by the request both ways.
func SettleAmount(q Quote, m Measured) (money.Micros, error) {
	switch q.Route {
	case string(contract.RouteNative):
		return TokenCost(q.Rate, m.CompletionTokens)
	case string(contract.RouteProduction):
		return SecondsCost(q.Rate, ProductionChargeable(q, m.OutputSeconds))
	case string(contract.RouteEnhancement):
		return enhancementCost(q.Rate, SecondsToMicros(m.OutputSeconds), FPSMultiplier(m.OutputFPS))
	}
	return 0, fmt.Errorf("settle: unknown route %q", q.Route)
}
