package video

import (
	"fmt"

	"mediagen/internal/billing"
	"mediagen/internal/money"
)

// secondsOver is the excess of an upstream that reports the seconds it bills (DashScope's
// usage.video_duration) beyond what the request could produce (the quote's length bound):
// usage_over, the report priced as tokens of the stored frame at the request's frame rate
// (billing.NativeFPS at most) against the charge. nil when the report is within the bound,
// absent, or the quote predates the bound. Reported seconds never change the charge: the
// tenant pays for the measured result, held within the reservation.
func secondsOver(q billing.Quote, reported float64, width, height int, fps float64, charge money.Micros) *billing.Excess {
	bound := q.LengthBound()
	if reported <= 0 || bound <= 0 || billing.SecondsToMicros(reported) <= bound {
		return nil
	}
	tokens := billing.NativeTokens(width, height, min(fps, billing.NativeFPS), reported)
	claimed, err := billing.TokenCost(q.Rate, tokens)
	if err != nil {
		return nil
	}
	return &billing.Excess{Kind: billing.ExcessUsageOver, Claimed: claimed, Amount: max(claimed-charge, 0),
		Detail: fmt.Sprintf("usage reported %.3f s of output for a request of at most %.3f s", reported, float64(bound)/1e6)}
}
