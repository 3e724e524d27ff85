package main

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"mediagen/internal/catalog"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/provider/ark"
	"mediagen/internal/provider/sandbox"
	"mediagen/internal/video"
)

// localEngines makes the engine of every local upstream account of the catalog (kinds ffmpeg
// and espeak): the embedded engine with no test markers and no pace, with a job directory of
// its own. The built-in sandbox is made by build. docs/upstreams.md.
func (m *Main) localEngines(tools ffmpeg.Tools, fetch *safefetch.Client) (map[string]*sandbox.Engine, error) {
	out := map[string]*sandbox.Engine{}
	for _, acc := range m.catalog.Accounts() {
		if acc.Kind != catalog.KindFFmpeg && acc.Kind != catalog.KindEspeak {
			continue
		}
		e, err := sandbox.New(sandbox.Config{Dir: filepath.Join(m.Config.DataDir, "upstreams", acc.Name), Tools: tools, Fetch: fetch,
			Pace: -1, MaxConcurrent: acc.MaxConcurrent, NoMarkers: true, Logger: m.log.With("upstream", acc.Name)})
		if err != nil {
			for _, made := range out {
				_ = made.Close()
			}
			return nil, fmt.Errorf("upstream %s: %w", acc.Name, err)
		}
		out[acc.Name] = e
	}
	m.locals = out
	return out, nil
}

// remoteUpstreams makes the client of every remote account (kind ark), with its API key read
// from where the catalog says. A missing or empty key stops serve with a message naming the
// account and the variable or file — never a key.
func (m *Main) remoteUpstreams() (map[string]video.Upstream, error) {
	out := map[string]video.Upstream{}
	for _, acc := range m.catalog.Accounts() {
		if acc.Kind != catalog.KindArk {
			continue
		}
		c, err := arkClient(acc, m.getenv, m.FetchTLS)
		if err != nil {
			return nil, err
		}
		out[acc.Name] = video.Upstream{Generator: c}
	}
	return out, nil
}

// arkClient is the client of an ark account. tlsConfig is nil in production (the system
// roots); tests give the roots of their fake server.
func arkClient(acc catalog.UpstreamAccount, getenv func(string) string, tlsConfig *tls.Config) (*ark.Client, error) {
	key, err := acc.APIKey(getenv, os.ReadFile)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConfig
	c, err := ark.New(ark.Config{BaseURL: acc.BaseURL, APIKey: key, HTTP: &http.Client{Timeout: acc.Timeout(), Transport: tr},
		RequestsPerSecond: float64(acc.RequestsPerSecond)})
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", acc.Name, err)
	}
	return c, nil
}
