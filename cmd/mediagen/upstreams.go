package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"mediagen/internal/blob"
	"mediagen/internal/catalog"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/pixels"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/provider"
	"mediagen/internal/provider/ark"
	"mediagen/internal/provider/dashscope"
	"mediagen/internal/provider/elevenlabs"
	"mediagen/internal/provider/gemini"
	"mediagen/internal/provider/kling"
	"mediagen/internal/provider/mediakit"
	"mediagen/internal/provider/minimax"
	"mediagen/internal/provider/openai"
	"mediagen/internal/provider/runway"
	"mediagen/internal/provider/sandbox"
	"mediagen/internal/provider/seedspeech"
	"mediagen/internal/provider/vertex"
	"mediagen/internal/video"
)

// localEngines makes the engine of every local upstream account of the catalog (kinds ffmpeg
// and espeak): the embedded engine with no test markers and no pace, with a job directory of
// its own. The built-in sandbox is made by build. docs/upstreams.md.
func (m *Main) localEngines(tools ffmpeg.Tools, fetch *safefetch.Client) (map[string]*sandbox.Engine, error) {
	out := map[string]*sandbox.Engine{}
	for _, acc := range m.cat().Accounts() {
		if acc.Kind != catalog.KindFFmpeg && acc.Kind != catalog.KindEspeak {
			continue
		}
		e, err := m.newLocalEngine(acc, tools, fetch)
		if err != nil {
			for _, made := range out {
				_ = made.Close()
			}
			return nil, err
		}
		out[acc.Name] = e
	}
	m.locals = out
	return out, nil
}

// newLocalEngine makes the engine of one local account.
func (m *Main) newLocalEngine(acc catalog.UpstreamAccount, tools ffmpeg.Tools, fetch *safefetch.Client) (*sandbox.Engine, error) {
	e, err := sandbox.New(sandbox.Config{Dir: filepath.Join(m.Config.DataDir, "upstreams", acc.Name), Tools: tools, Fetch: fetch,
		Pace: -1, MaxConcurrent: acc.MaxConcurrent, NoMarkers: true, Logger: m.log.With("upstream", acc.Name), OpenKey: m.openKey})
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", acc.Name, err)
	}
	return e, nil
}

// remoteClient is the client of a remote account, with a cheap authenticated check: a
// provider.Generator for the video kinds, a provider.Synthesizer for the speech kinds (an
// openai client is both; an elevenlabs client only speaks).
type remoteClient interface {
	Check(ctx context.Context) error
}

// remoteUpstreams makes the video engine of every remote account (kinds ark, openai, dashscope).
func (m *Main) remoteUpstreams() (map[string]video.Upstream, error) {
	out := map[string]video.Upstream{}
	for _, acc := range m.cat().Accounts() {
		if !acc.Kind.Remote() {
			continue
		}
		c, err := m.remoteClient(acc)
		if err != nil {
			return nil, err
		}
		if u, ok := videoUpstream(c); ok {
			out[acc.Name] = u
		}
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
	c, err := newRemoteClient(acc, m.getenv, m.FetchTLS, m.frames, m.reload.fetch)
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
// fetch reads a seedspeech account's reference audio (nil: an account that is only checked).
func newRemoteClient(acc catalog.UpstreamAccount, getenv func(string) string, tlsConfig *tls.Config, frames openai.Frames, fetch *safefetch.Client) (remoteClient, error) {
	key, err := acc.APIKey(getenv, catalog.ReadKeyFile)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConfig
	hc := &http.Client{Timeout: acc.Timeout(), Transport: tr}
	var c remoteClient
	switch acc.Kind {
	case catalog.KindArk:
		c, err = ark.New(ark.Config{BaseURL: acc.BaseURL, APIKey: key, HTTP: hc, RequestsPerSecond: float64(acc.RequestsPerSecond),
			AssetLibrary: acc.AssetLibrary})
	case catalog.KindOpenAI:
		c, err = openai.New(openai.Config{BaseURL: acc.BaseURL, APIKey: key, HTTP: hc, RequestsPerSecond: float64(acc.RequestsPerSecond),
			Voice: acc.Voice, Frames: frames})
	case catalog.KindKling:
		var access, secret string
		if access, secret, err = acc.KlingKeys(getenv, catalog.ReadKeyFile); err == nil {
			c, err = kling.New(kling.Config{BaseURL: acc.BaseURL, AccessKey: access, SecretKey: secret, HTTP: hc,
				RequestsPerSecond: float64(acc.RequestsPerSecond)})
		}
	case catalog.KindMiniMax:
		c, err = minimax.New(minimax.Config{BaseURL: acc.BaseURL, APIKey: key, HTTP: hc, RequestsPerSecond: float64(acc.RequestsPerSecond)})
	case catalog.KindDashScope:
		c, err = dashscope.New(dashscope.Config{BaseURL: acc.BaseURL, APIKey: key, HTTP: hc, RequestsPerSecond: float64(acc.RequestsPerSecond)})
	case catalog.KindGemini:
		cfg := gemini.Config{BaseURL: acc.BaseURL, APIKey: key, HTTP: hc, RequestsPerSecond: float64(acc.RequestsPerSecond)}
		if ff, ok := frames.(frameFitter); ok {
			cfg.ReadImage = ff.readImage
		}
		c, err = gemini.New(cfg)
	case catalog.KindElevenLabs:
		c, err = elevenlabs.New(elevenlabs.Config{BaseURL: acc.BaseURL, APIKey: key, HTTP: hc, RequestsPerSecond: float64(acc.RequestsPerSecond),
			Voice: acc.Voice})
	case catalog.KindSeedSpeech:
		cfg := seedspeech.Config{BaseURL: acc.BaseURL, Token: key, AppID: acc.AppID, SpeakerID: acc.SpeakerID, Voice: acc.Voice, HTTP: hc,
			RequestsPerSecond: float64(acc.RequestsPerSecond)}
		if fetch != nil {
			cfg.ReadReference = referenceReader{fetch}.read
		}
		c, err = seedspeech.New(cfg)
	case catalog.KindRunway:
		c, err = runway.New(runway.Config{BaseURL: acc.BaseURL, APIKey: key, HTTP: hc, RequestsPerSecond: float64(acc.RequestsPerSecond)})
	case catalog.KindMediaKit:
		cfg := mediakit.Config{BaseURL: acc.BaseURL, APIKey: key, HTTP: hc, RequestsPerSecond: float64(acc.RequestsPerSecond)}
		if ff, ok := frames.(frameFitter); ok && ff.blobs != nil {
			cfg.Stage = ff.stageSource
		}
		c, err = mediakit.New(cfg)
	case catalog.KindVertex: // the "key" is the service account's JSON key file
		cfg := vertex.Config{BaseURL: acc.BaseURL, Project: acc.Project, Location: acc.Location, Credentials: []byte(key), TokenURL: acc.TokenURL,
			StorageURI: acc.StorageURI, StorageURL: acc.StorageURL, HTTP: hc, RequestsPerSecond: float64(acc.RequestsPerSecond)}
		if ff, ok := frames.(frameFitter); ok {
			cfg.ReadImage = ff.readImage
		}
		c, err = vertex.New(cfg)
	case catalog.KindArkAssets:
		c, err = newArkAssets(acc, getenv, hc)
	default:
		err = fmt.Errorf("kind %s is not a remote kind", acc.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", acc.Name, err)
	}
	return c, nil
}

// videoUpstream is the video engine of a remote client: a generator, an enhancer (kind
// mediakit), or neither (a speech-only client).
func videoUpstream(c remoteClient) (video.Upstream, bool) {
	var u video.Upstream
	u.Generator, _ = c.(provider.Generator)
	u.Enhancer, _ = c.(provider.Enhancer)
	return u, u.Generator != nil || u.Enhancer != nil
}

// frameFitter fits first frames for the openai kind with ffmpeg: the image is read from its
// local copy (an asset) or fetched through the fetch policy, and scaled and padded to
// 1280x720, or 720x1280 when it is taller than wide.
type frameFitter struct {
	tools ffmpeg.Tools
	fetch *safefetch.Client
	// blobs and linkTTL stage the standalone sources of mediakit accounts
	// (upstreams_mediakit.go): the vendor fetches the service's measured copy.
	blobs   blob.Store
	linkTTL time.Duration
}

// maxFrameBytes bounds a first-frame image fetched for fitting.
const maxFrameBytes = 30 << 20

func (f frameFitter) Fit(ctx context.Context, src provider.Source) ([]byte, int, int, error) {
	dir, err := os.MkdirTemp("", ffmpeg.ScratchPrefix+"frame-*") // swept at start if a crash leaves it
	if err != nil {
		return nil, 0, 0, err
	}
	defer os.RemoveAll(dir)
	in := src.Path
	if in == "" {
		in = filepath.Join(dir, "in")
		if err := f.download(ctx, src.URL, in); err != nil {
			return nil, 0, 0, err
		}
	}
	if err := checkFramePixels(in); err != nil {
		return nil, 0, 0, err
	}
	info, err := f.tools.Probe(ctx, in)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("measure the first frame: %w", err)
	}
	w, h := 1280, 720
	if info.Height > info.Width {
		w, h = 720, 1280
	}
	out := filepath.Join(dir, "fit.png")
	if err := f.tools.FitImagePNG(ctx, in, out, w, h); err != nil {
		return nil, 0, 0, err
	}
	b, err := os.ReadFile(out)
	return b, w, h, err
}

// checkFramePixels reads the first frame's header and refuses, for good (retrying cannot
// help), an image whose size cannot be read or is over the pixel budget: ffprobe and the fit
// would decode every pixel of it.
func checkFramePixels(path string) error {
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read the first frame: %w", err)
	}
	defer fh.Close()
	size, err := pixels.ReadSize(fh)
	if err == nil {
		err = size.Check()
	}
	switch {
	case errors.Is(err, pixels.ErrNoSize):
		return &provider.Error{Code: "InvalidParameter", Kind: provider.ErrPermanent,
			Message: "The first frame image could not be read: its size is not in a PNG, JPEG, WebP, GIF or BMP header."}
	case err != nil:
		return &provider.Error{Code: "InvalidParameter", Kind: provider.ErrPermanent, Message: "The first frame image cannot be used: " + err.Error() + "."}
	}
	return nil
}

// readImage reads a first frame for an account that sends it inline (gemini, vertex): its local copy,
// or its link through the fetch policy, at most max bytes.
func (f frameFitter) readImage(ctx context.Context, src provider.Source, max int64) ([]byte, error) {
	if src.Path != "" {
		fh, err := os.Open(src.Path)
		if err != nil {
			return nil, fmt.Errorf("read the first frame: %w", err)
		}
		defer fh.Close()
		return io.ReadAll(provider.Capped(fh, max))
	}
	res, err := f.fetch.Get(ctx, src.URL, safefetch.RequestOptions{MaxBytes: max})
	if err == nil {
		defer res.Body.Close()
		var b []byte
		if b, err = io.ReadAll(provider.Capped(res.Body, max)); err == nil {
			return b, nil
		}
	}
	switch {
	case errors.Is(err, safefetch.ErrTooLarge):
		return nil, fmt.Errorf("fetch the first frame: %w", provider.ErrTooLarge)
	case safefetch.Refused(err):
		// The same on every try: the task fails, refunded, rather than waiting out its deadline.
		return nil, &provider.Error{Code: "InvalidParameter", Message: "The first frame's URL is not allowed.", Kind: provider.ErrPermanent}
	}
	return nil, fmt.Errorf("fetch the first frame: %w", err)
}

func (f frameFitter) download(ctx context.Context, url, path string) error {
	res, err := f.fetch.Get(ctx, url, safefetch.RequestOptions{MaxBytes: maxFrameBytes})
	if err != nil {
		return fmt.Errorf("fetch the first frame: %w", err)
	}
	defer res.Body.Close()
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, res.Body); err != nil {
		out.Close()
		return fmt.Errorf("fetch the first frame: %w", err)
	}
	return out.Close()
}
