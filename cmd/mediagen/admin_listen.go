package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	opadmin "mediagen/internal/admin"
	"mediagen/internal/adminapi"
	"mediagen/internal/console"
	"mediagen/internal/httpapi"
	"mediagen/internal/netlimit"
	"mediagen/internal/tracing"
	"mediagen/internal/video"
)

// adminWriteTimeout bounds an answer of the admin listener: its answers are small pages, so
// one that takes longer is stuck, not slow. Its request bodies are read as the API's are
// (httpapi.BodyPace): a deadline that moves while bytes arrive, 408 when they stop. A
// whole-request ReadTimeout would also cancel a request's context once it passed.
const adminWriteTimeout = 60 * time.Second

// startAdmin serves the admin API on its own listener (--admin-listen), bounded like the API's
// listener at its own scale (wrapAdmin). The public API's handler has no /admin/ route, so the admin API cannot
// be reached through the public address.
func (m *Main) startAdmin() error {
	ln, err := net.Listen("tcp", m.Config.AdminListen)
	if err != nil {
		return fmt.Errorf("admin listen on %s: %w", m.Config.AdminListen, err)
	}
	svc := opadmin.New(opadmin.Config{Store: m.db, Catalog: m.cat, Registerer: m.reg, Webhooks: m.hooks})
	srv := adminapi.New(adminapi.Config{Service: svc, Logger: m.log, Registerer: m.reg})
	m.adminRoutes(srv)
	common := m.consoleCommon()
	if m.blobFS != nil {
		// The disk store's result links are on the public address, another origin than this
		// listener's: the operator's task page plays results from there.
		if u, err := url.Parse(m.Config.PublicURL); err == nil && u.Host != "" {
			common.MediaOrigins = append(append([]string(nil), common.MediaOrigins...), u.Scheme+"://"+u.Host)
		}
	}
	op, err := console.NewOperator(console.OperatorConfig{Common: common, Admin: svc, Upstreams: m.upstreamHealth(),
		Links: video.BlobLinker{Blobs: m.blobs, TTL: m.Config.LinkTTL}})
	if err != nil {
		return fmt.Errorf("operator console: %w", err)
	}
	// The admin listener serves the admin API under /admin/v1/ and the operator console under
	// /console/; every other path is the admin API's 404 envelope.
	apiHandler := srv.Handler()
	var mux http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isConsolePath(r.URL.Path) {
			op.ServeHTTP(w, r)
			return
		}
		apiHandler.ServeHTTP(w, r)
	})
	// A server span per request when tracing is on (docs/tracing.md); off, not in the chain.
	mux = tracing.Middleware(m.tracing.Tracer(), adminSpanName(srv, op))(mux)
	mux = netlimit.PaceBodies(mux, httpapi.BodyPace(0, 0))
	bounded := wrapAdmin(ln, m.Config.proxies, m.connMetrics)
	m.admin = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: httpapi.ReadHeaderTimeout,
		WriteTimeout:      adminWriteTimeout,
		IdleTimeout:       httpapi.IdleTimeout,
		MaxHeaderBytes:    httpapi.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(m.log.Handler(), slog.LevelWarn),
		ConnState:         bounded.ConnState,
	}
	m.adminAddr = ln.Addr().String()
	go func() { _ = m.admin.Serve(bounded) }()
	m.log.Info("admin API on its own listener", "addr", m.adminAddr)
	return nil
}

func isConsolePath(p string) bool { return p == "/console" || strings.HasPrefix(p, "/console/") }

// adminSpanName names the admin listener's request spans: the admin route's or console
// page's pattern, else the method and the part of the listener ("GET /console/*",
// "GET /admin/v1/*", or the bare method elsewhere), never the raw path.
func adminSpanName(api, op interface{ Route(*http.Request) string }) tracing.RouteFunc {
	return func(r *http.Request) (string, bool) {
		method := tracing.MethodLabel(r.Method)
		if isConsolePath(r.URL.Path) {
			if p := op.Route(r); p != "" {
				return p, true
			}
			return method + " /console/*", false
		}
		if p := api.Route(r); p != "" {
			return p, true
		}
		if strings.HasPrefix(r.URL.Path, "/admin/v1/") {
			return method + " /admin/v1/*", false
		}
		return method, false
	}
}

// AdminURL is the base URL of the admin API ("" when --admin-listen is not set).
func (m *Main) AdminURL() string {
	if m.adminAddr == "" {
		return ""
	}
	return "http://" + m.adminAddr
}

// adminRoutes adds the routes of the operator plane's other parts to the admin API: one line
// each, s.Read / s.ReadRaw / s.Write (internal/adminapi's package comment).
func (m *Main) adminRoutes(s *adminapi.Server) {
	s.CatalogRoutes(apiReloader{m})     // reload.go
	s.UpstreamRoutes(m.upstreamLocal()) // console_upstreams.go
}
