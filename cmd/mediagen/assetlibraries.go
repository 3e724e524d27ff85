package main

import (
	"crypto/tls"
	"net/http"
	"sync"

	"mediagen/internal/asset"
	"mediagen/internal/catalog"
	"mediagen/internal/provider/arkassets"
)

// newArkAssets is the client of an ark_assets account: its access and secret keys read from
// where the catalog says (never logged), its region and project from the catalog.
func newArkAssets(acc catalog.UpstreamAccount, getenv func(string) string, hc *http.Client) (*arkassets.Client, error) {
	access, secret, err := acc.KlingKeys(getenv, catalog.ReadKeyFile)
	if err != nil {
		return nil, err
	}
	return arkassets.New(arkassets.Config{BaseURL: acc.BaseURL, Region: acc.Region, AccessKey: access, SecretKey: secret,
		ProjectName: acc.ProjectName, HTTP: hc, RequestsPerSecond: float64(acc.RequestsPerSecond)})
}

// assetLibraries hands the asset service the client of an ark_assets account by name, made on
// first use from the catalog in force (so an account a reload adds is found) and kept.
type assetLibraries struct {
	cat    func() *catalog.Catalog
	getenv func(string) string
	tls    *tls.Config
	log    interface{ Warn(string, ...any) }

	mu      sync.Mutex
	clients map[string]asset.Library
}

func (m *Main) libraries() *assetLibraries {
	return &assetLibraries{cat: m.cat, getenv: m.getenv, tls: m.FetchTLS, log: m.log, clients: map[string]asset.Library{}}
}

func (l *assetLibraries) get(name string) (asset.Library, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.clients[name]; ok {
		return c, true
	}
	acc, ok := l.cat().Upstream(name)
	if !ok || acc.Kind != catalog.KindArkAssets {
		return nil, false
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = l.tls
	c, err := newArkAssets(acc, l.getenv, &http.Client{Timeout: acc.Timeout(), Transport: tr})
	if err != nil {
		l.log.Warn("asset library account unusable", "upstream", name, "err", err)
		return nil, false
	}
	l.clients[name] = c
	return c, true
}
