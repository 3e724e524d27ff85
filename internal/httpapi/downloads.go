package httpapi

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/apierr"
	"mediagen/internal/limits"
)

// download bounds the file route, which needs no key (the link's signature is the
// credential), so no key or tenant limit applies: the client address's request rate, then
// the downloads running per client address, per file and in all. A refusal is a 429 with
// Retry-After that closes its connection, so the refused client holds nothing. The answer
// itself is bounded like every other (DefaultWriteStall): a client that stops reading a
// download loses it.
func (s *Server) download(serve handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		end, err := s.downloads.Begin(s.proxies.ClientOfRequest(r), r.PathValue("key"))
		if err != nil {
			w.Header().Set("Connection", "close")
			return err
		}
		defer end()
		return serve(w, r)
	}
}

// perClient bounds a route that needs no key by its client address's request rate: each
// request of the verification page reads the database for its token, and no key bucket
// applies.
func (s *Server) perClient(rates *limits.ClientRates, next handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := rates.Allow(s.proxies.ClientOfRequest(r)); err != nil {
			return err
		}
		return next(w, r)
	}
}

// edgeMetrics are the series of the edge's own bounds.
type edgeMetrics struct {
	stalled prometheus.Counter
}

func newEdgeMetrics(reg *prometheus.Registry, d *limits.Downloads) edgeMetrics {
	m := edgeMetrics{stalled: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mediagen_http_responses_stalled_total",
		Help: "Responses cut off because the client took none of the answer within the write stall time (10 s per 16 KiB).",
	})}
	reg.MustRegister(m.stalled, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "mediagen_file_downloads",
		Help: "File link requests (GET /v1/files) being served.",
	}, func() float64 { return float64(d.InFlight()) }))
	return m
}

func apiErrURITooLong() *apierr.Error {
	return apierr.New(apierr.KindURITooLong, "The request target (path and query) is longer than the limit of "+
		humanBytes(MaxRequestTarget)+". Use the paths and links exactly as the API reference and the API give them.")
}
