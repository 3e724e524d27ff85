package httpapi

import (
	"net/http"

	"mediagen/internal/usage"
)

// getUsage answers GET /v1/billing/usage: the calling key's own settled usage from the usage
// rollups (docs/billing.md, "Usage reports"), grouped by day or hour, alias and route. The
// key filter comes from the credential, never from the query, so no other key's figures can
// be asked for; tenant, key and upstream groups are not offered (a tenant sees its aliases,
// never upstream names).
func (s *Server) getUsage(w http.ResponseWriter, r *http.Request) error {
	p, _ := CallerFrom(r.Context())
	q, err := usage.ParseQuery(r.URL.Query(), usage.KeyGroups, false, s.now())
	if err != nil {
		return err
	}
	q.Key = p.Key.ID
	rep, err := usage.Run(r.Context(), s.store, q, nil)
	if err != nil {
		return err
	}
	rep.Object = "billing.usage"
	writeJSON(w, http.StatusOK, rep)
	return nil
}
