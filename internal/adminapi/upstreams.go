package adminapi

import (
	"context"

	"mediagen/internal/admin"
)

// UpstreamLocal is this process's own view of one upstream account: its circuit breaker
// (0 closed, 1 open, 2 half-open, as the mediagen_upstream_breaker_state gauge) and whether
// its credentials were refused (mediagen_upstream_account_broken).
type UpstreamLocal struct {
	Account string
	Breaker int
	Broken  bool
}

// Upstream is one account of GET /admin/v1/upstreams: its slots as the store counts them
// over every replica, and this process's breaker state and broken flag (absent when the
// process runs no pipeline, an api-only replica).
type Upstream struct {
	Object      string `json:"object"` // "upstream"
	Name        string `json:"name"`
	Kind        string `json:"kind,omitempty"`
	MaxInFlight int    `json:"max_in_flight"`
	InFlight    int    `json:"in_flight"`
	Waiting     int    `json:"waiting"`
	Breaker     string `json:"breaker,omitempty"` // closed, open, half_open
	Broken      *bool  `json:"broken,omitempty"`
}

var breakerStates = []string{"closed", "open", "half_open"}

// UpstreamRoutes adds GET /admin/v1/upstreams (viewer): every upstream account of the catalog
// in force with its slots, and local's figures of this process (nil: none known here).
func (s *Server) UpstreamRoutes(local func(context.Context) ([]UpstreamLocal, error)) {
	svc := s.svc
	s.Read("GET /admin/v1/upstreams", admin.RoleViewer, func(r *Request) (any, error) {
		if _, err := r.Query(); err != nil {
			return nil, err
		}
		slots, err := svc.UpstreamSlotList(r.Context(), r.Actor)
		if err != nil {
			return nil, err
		}
		here := map[string]UpstreamLocal{}
		if local != nil {
			ls, err := local(r.Context())
			if err != nil {
				return nil, err
			}
			for _, l := range ls {
				here[l.Account] = l
			}
		}
		out := admin.List[Upstream]{Object: "list", Data: make([]Upstream, 0, len(slots))}
		for _, u := range slots {
			v := Upstream{Object: "upstream", Name: u.Account, Kind: u.Kind, MaxInFlight: u.MaxInFlight, InFlight: u.InFlight, Waiting: u.Waiting}
			if local != nil {
				l := here[u.Account] // an account not called yet: closed, not broken
				if l.Breaker >= 0 && l.Breaker < len(breakerStates) {
					v.Breaker = breakerStates[l.Breaker]
				}
				broken := l.Broken
				v.Broken = &broken
			}
			out.Data = append(out.Data, v)
		}
		return out, nil
	})
}
