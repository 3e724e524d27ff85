package adminapi

import (
	"bytes"
	"net/http"

	"mediagen/internal/admin"
	"mediagen/internal/usage"
)

// usageRoutes: the usage, revenue and cost report (docs/admin.md, "Usage and cost reports"),
// as JSON or as CSV for a spreadsheet (cells neutralised against formula injection:
// usage.WriteCSV), and its rebuild.
func (s *Server) usageRoutes() {
	svc := s.svc
	s.ReadRaw("GET /admin/v1/usage", admin.RoleViewer, func(w http.ResponseWriter, r *Request) error {
		v := r.URL.Query()
		format := v.Get("format")
		if format != "" && format != "json" && format != "csv" {
			return invalid("format", "format is json or csv.")
		}
		q, err := usage.ParseQuery(v, usage.AdminGroups, true, svc.Now())
		if err != nil {
			return err
		}
		rep, err := svc.Usage(r.Context(), r.Actor, q)
		if err != nil {
			return err
		}
		if format != "csv" {
			body, err := marshal(rep)
			if err != nil {
				return err
			}
			writeBody(w, http.StatusOK, body)
			return nil
		}
		// Written whole before the status, so that a failure is still an error envelope.
		var buf bytes.Buffer
		if err := usage.WriteCSV(&buf, rep); err != nil {
			return err
		}
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="usage.csv"`)
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(buf.Bytes())
		return nil
	})
	s.Write("POST /admin/v1/usage/rebuild", admin.RoleOwner, http.StatusOK, func(r *Request) (any, error) {
		if _, err := r.Decode(); err != nil {
			return nil, err
		}
		return svc.RebuildUsage(r.Context(), r.Actor)
	})
}
