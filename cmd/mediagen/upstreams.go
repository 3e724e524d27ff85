package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"mediagen/internal/catalog"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/provider"
	"mediagen/internal/provider/ark"
	"mediagen/internal/provider/openai"
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

// remoteClient is the client of a remote account: a generator, with a cheap authenticated
// check; an openai client also speaks.
type remoteClient interface {
	provider.Generator
	Check(ctx context.Context) error
}

// remoteUpstreams makes the video engine of every remote account (kinds ark and openai).
func (m *Main) remoteUpstreams() (map[string]video.Upstream, error) {
	out := map[string]video.Upstream{}
	for _, acc := range m.catalog.Accounts() {
		if !acc.Kind.Remote() {
			continue
		}
		c, err := m.remoteClient(acc)
		if err != nil {
			return nil, err
		}
		out[acc.Name] = video.Upstream{Generator: c}
	}
	return out, nil
}

// remoteClient makes the client of a remote account once per process, with its API key read
// from where the catalog says. A missing or empty key stops serve with a message naming the
// account and the variable or file — never a key.
func (m *Main) remoteClient(acc catalog.UpstreamAccount) (remoteClient, error) {
	if c, ok := m.remotes[acc.Name]; ok {
		return c, nil
	}
	c, err := newRemoteClient(acc, m.getenv, m.FetchTLS)
	if err != nil {
		return nil, err
	}
	if m.remotes == nil {
		m.remotes = map[string]remoteClient{}
	}
	m.remotes[acc.Name] = c
	return c, nil
}

// newRemoteClient is the client of a remote account. tlsConfig is nil in production (the
// system roots); tests give the roots of their fake server.
func newRemoteClient(acc catalog.UpstreamAccount, getenv func(string) string, tlsConfig *tls.Config) (remoteClient, error) {
	key, err := acc.APIKey(getenv, os.ReadFile)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConfig
	hc := &http.Client{Timeout: acc.Timeout(), Transport: tr}
	var c remoteClient
	switch acc.Kind {
	case catalog.KindArk:
		c, err = ark.New(ark.Config{BaseURL: acc.BaseURL, APIKey: key, HTTP: hc, RequestsPerSecond: float64(acc.RequestsPerSecond)})
	case catalog.KindOpenAI:
		c, err = openai.New(openai.Config{BaseURL: acc.BaseURL, APIKey: key, HTTP: hc, RequestsPerSecond: float64(acc.RequestsPerSecond), Voice: acc.Voice})
	default:
		err = fmt.Errorf("kind %s is not a remote kind", acc.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", acc.Name, err)
	}
	return c, nil
}
