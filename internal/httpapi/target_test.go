package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// A request target longer than the bound is refused with a 414 envelope before any route
// runs, authenticated or not.
func TestOverlongRequestTargetsAreRefusedWith414(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	long := strings.Repeat("a", MaxRequestTarget)
	tests := []struct {
		name, path string
		status     int
	}{
		{"task path", "/v1/videos/" + long, http.StatusRequestURITooLong},
		{"file link", "/v1/files/videos/x.mp4?expires=1&sig=" + long, http.StatusRequestURITooLong},
		{"unknown path", "/" + long, http.StatusRequestURITooLong},
		{"health with a long query", "/healthz?" + long, http.StatusRequestURITooLong},
		{"just under the bound", "/healthz?" + long[:MaxRequestTarget-len("/healthz?")], http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do("GET", tt.path, nil, "")
			if tt.status == http.StatusOK {
				if r.status != http.StatusOK {
					t.Fatalf("status %d, want 200: %s", r.status, r.body)
				}
				return
			}
			checkEnvelope(t, r, tt.status, "invalid_request_error", "uri_too_long")
		})
	}
}
