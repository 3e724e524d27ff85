package adminapi

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// metricValue is the value of the series of name with exactly the labels given, and the
// number of series of name.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (float64, int) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		var v float64
		for _, m := range mf.GetMetric() {
			match := len(m.GetLabel()) == len(labels)
			for _, l := range m.GetLabel() {
				match = match && labels[l.GetName()] == l.GetValue()
			}
			if match {
				v = m.GetCounter().GetValue()
			}
		}
		return v, len(mf.GetMetric())
	}
	return 0, 0
}

// TestMetricsCountRequestsByRouteAndAuditEntriesByAction: the admin API's series count
// requests by the route pattern (never the raw path, so ids do not grow the label set) and
// status, and audit entries by action.
func TestMetricsCountRequestsByRouteAndAuditEntriesByAction(t *testing.T) {
	e := newEnv(t, "sqlite")
	key := e.makeKey(false) // through the service: one key.create entry
	e.do("GET", "/admin/v1/keys/"+key, e.viewer, "", "")
	e.do("GET", "/admin/v1/keys/key_other", e.viewer, "", "")
	e.write("/admin/v1/keys/"+key+"/credits", e.oper, `{"amount":1}`)
	e.write("/admin/v1/keys/"+key+"/credits", e.viewer, `{"amount":1}`)
	e.do("GET", "/admin/v1/no/such/"+key, e.viewer, "", "")
	for _, tc := range []struct {
		route, status string
		want          float64
	}{
		{"GET /admin/v1/keys/{id}", "200", 1},
		{"GET /admin/v1/keys/{id}", "404", 1},
		{"POST /admin/v1/keys/{id}/credits", "201", 1},
		{"POST /admin/v1/keys/{id}/credits", "403", 1},
		{"unmatched", "404", 1},
	} {
		if got, _ := metricValue(t, e.reg, "mediagen_admin_requests_total", map[string]string{"route": tc.route, "status": tc.status}); got != tc.want {
			t.Errorf("mediagen_admin_requests_total{route=%q,status=%q} = %v, want %v", tc.route, tc.status, got, tc.want)
		}
	}
	if _, n := metricValue(t, e.reg, "mediagen_admin_requests_total", nil); n != 5 {
		t.Errorf("%d request series, want 5", n)
	}
	// newEnv made 3 tokens through the service; then one key and one credit.
	for action, want := range map[string]float64{"token.create": 3, "key.create": 1, "credit.create": 1} {
		if got, _ := metricValue(t, e.reg, "mediagen_admin_audit_entries_total", map[string]string{"action": action}); got != want {
			t.Errorf("mediagen_admin_audit_entries_total{action=%q} = %v, want %v", action, got, want)
		}
	}
}
