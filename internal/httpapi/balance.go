package httpapi

import (
	"net/http"

	"mediagen/internal/money"
)

type balanceResponse struct {
	Object    string        `json:"object"`
	Currency  string        `json:"currency"`
	Balance   balanceAmount `json:"balance"`
	UpdatedAt int64         `json:"updated_at"`
}

type balanceAmount struct {
	Available money.Micros `json:"available"`
	Used      money.Micros `json:"used"`
	Unlimited bool         `json:"unlimited"`
}

// getBalance answers GET /v1/billing/balance for the calling key. Amounts are exact decimal
// renderings of the micro-unit integers (12500000 → 12.5).
func (s *Server) getBalance(w http.ResponseWriter, r *http.Request) error {
	p, _ := CallerFrom(r.Context())
	b, err := s.store.Balance(r.Context(), p.Key.ID)
	if err != nil {
		return err
	}
	updated := b.UpdatedAt
	if updated.IsZero() {
		updated = p.Key.CreatedAt
	}
	writeJSON(w, http.StatusOK, balanceResponse{
		Object:    "billing.balance",
		Currency:  b.Currency,
		Balance:   balanceAmount{Available: b.Available, Used: b.Used, Unlimited: b.Unlimited},
		UpdatedAt: updated.Unix(),
	})
	return nil
}
