package asset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"image"
	_ "image/jpeg" // registers the decoders DecodeConfig reads headers with
	_ "image/png"
	"io"
	"strings"
	"time"

	"mediagen/internal/blob"
	"mediagen/internal/media/probe"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/store"
)

// KeyPrefix starts the key of every stored asset copy.
const KeyPrefix = "assets/"

// Start runs the background work until ctx ends or Stop is called: processing of new assets
// and of assets left by a process that died, and delivery of verification callbacks. It
// claims work at once, so stale assets are taken over at start once their lease expired.
func (s *Service) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.begun {
		return
	}
	s.begun = true
	ctx, s.stop = context.WithCancel(ctx)
	s.wg.Add(1)
	go s.loop(ctx)
}

// Stop ends the background work and waits for it. An asset being processed is handed back
// (its lease released) for the next start to pick up.
func (s *Service) Stop() {
	s.mu.Lock()
	stop := s.stop
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
	s.wg.Wait()
}

const callbackConcurrency = 2

func (s *Service) loop(ctx context.Context) {
	defer s.wg.Done()
	assets := make(chan struct{}, s.cfg.Concurrency)
	callbacks := make(chan struct{}, callbackConcurrency)
	done := make(chan struct{}, 1)
	finished := func() {
		select {
		case done <- struct{}{}:
		default:
		}
	}
	tick := time.NewTicker(s.cfg.PollInterval)
	defer tick.Stop()
	for {
		if free := cap(assets) - len(assets); free > 0 {
			claimed, err := s.cfg.Store.ClaimAssets(ctx, s.now(), s.cfg.Lease, free)
			if err != nil && ctx.Err() == nil {
				s.log.ErrorContext(ctx, "claim assets", "err", err)
			}
			for _, c := range claimed {
				assets <- struct{}{}
				s.wg.Add(1)
				go func() {
					defer s.wg.Done()
					defer func() { <-assets; finished() }()
					s.run(ctx, c)
				}()
			}
		}
		if free := cap(callbacks) - len(callbacks); free > 0 {
			claimed, err := s.cfg.Store.ClaimCallbacks(ctx, s.now(), 2*s.cfg.CallbackTimeout, free)
			if err != nil && ctx.Err() == nil {
				s.log.ErrorContext(ctx, "claim callbacks", "err", err)
			}
			for _, c := range claimed {
				callbacks <- struct{}{}
				s.wg.Add(1)
				go func() {
					defer s.wg.Done()
					defer func() { <-callbacks; finished() }()
					s.deliver(ctx, c)
				}()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-done:
		case <-tick.C:
		}
	}
}

// run processes one claimed asset and records the outcome under its lease.
func (s *Service) run(ctx context.Context, c store.ClaimedAsset) {
	var out store.AssetOutcome
	var fetchErr error
	if c.Attempts > s.cfg.MaxAttempts {
		out = failed(FailInterrupted, "Processing was interrupted repeatedly. Create the asset again.")
	} else {
		if c.Attempts > 1 {
			// An earlier attempt may have died between storing its copy and recording it. The
			// asset is still Processing, so nothing under its directory is referenced: clear it.
			if err := s.cfg.Blobs.DeletePrefix(ctx, KeyPrefix+c.ID); err != nil {
				s.log.WarnContext(ctx, "earlier asset copies not removed", "asset", c.ID, "err", err)
			}
		}
		out, fetchErr = s.process(ctx, c)
	}
	if ctx.Err() != nil {
		// Shutting down: hand the asset back so the next start runs it again.
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if out.BlobKey != "" {
			_ = s.cfg.Blobs.Delete(bg, out.BlobKey)
		}
		if err := s.cfg.Store.ReleaseAsset(bg, c.ID, c.Token); err != nil {
			s.log.WarnContext(bg, "asset lease not released", "asset", c.ID, "err", err)
		}
		return
	}
	if fetchErr != nil && transient(fetchErr) && c.Attempts < s.cfg.MaxAttempts {
		// The source failed for now: try again later, keeping the attempt counted. A lost
		// lease (deleted meanwhile, or taken over) leaves nothing of ours to record.
		delay := s.cfg.RetryBackoff
		for i := 1; i < c.Attempts && delay < 10*time.Minute; i++ {
			delay *= 4
		}
		switch err := s.cfg.Store.DeferAsset(ctx, c.ID, c.Token, s.now().Add(delay)); {
		case err == nil:
			s.log.InfoContext(ctx, "asset source failed; retrying", "asset", c.ID, "attempt", c.Attempts,
				"retry_in", delay, "reason", out.FailureReason)
		case !errors.Is(err, store.ErrLeaseLost):
			s.log.ErrorContext(ctx, "asset retry not recorded", "asset", c.ID, "err", err)
		}
		return
	}
	out.ID, out.Token, out.At = c.ID, c.Token, s.now()
	err := s.cfg.Store.FinishAsset(ctx, out)
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		// Deleted meanwhile, or taken over after an expired lease: this copy is nobody's.
		if out.BlobKey != "" {
			_ = s.cfg.Blobs.Delete(ctx, out.BlobKey)
		}
	case err != nil:
		s.log.ErrorContext(ctx, "asset outcome not recorded", "asset", c.ID, "err", err)
		if out.BlobKey != "" {
			_ = s.cfg.Blobs.Delete(ctx, out.BlobKey)
		}
	case out.Status == store.AssetFailed:
		s.log.InfoContext(ctx, "asset failed", "asset", c.ID, "code", out.FailureCode)
	}
	if err == nil && s.cfg.Processed != nil {
		s.cfg.Processed.WithLabelValues(c.Type, out.Status, out.FailureCode).Inc()
	}
}

// NewProcessedCounter registers the asset processing counter on reg.
func NewProcessedCounter(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mediagen_assets_processed_total", Help: "Assets that finished processing, by declared type, status and failure code.",
	}, []string{"type", "status", "code"})
	reg.MustRegister(c)
	return c
}

func failed(code, reason string) store.AssetOutcome {
	return store.AssetOutcome{Status: store.AssetFailed, FailureCode: code, FailureReason: reason}
}

// publicFetchMessage is the tenant-safe sentence for a fetch failure.
func publicFetchMessage(err error) string { return safefetch.PublicMessage(err) }

func fetchFailure(err error) store.AssetOutcome {
	code := FailSourceUnreachable
	switch {
	case errors.Is(err, safefetch.ErrTooLarge):
		code = FailSourceTooLarge
	case errors.Is(err, safefetch.ErrForbiddenAddress), errors.Is(err, safefetch.ErrForbiddenScheme),
		errors.Is(err, safefetch.ErrRedirect), errors.Is(err, safefetch.ErrBadURL):
		code = FailSourceForbidden
	}
	return failed(code, publicFetchMessage(err))
}

// transient reports a fetch failure that may well not happen again: a timeout, a dropped or
// refused connection, or a status that says "later" (408, 425, 429, 5xx). A 404, a size
// cap or a forbidden address will fail the same way every time.
func transient(err error) bool {
	var se *safefetch.StatusError
	if errors.As(err, &se) {
		return se.Code == 408 || se.Code == 425 || se.Code == 429 || se.Code >= 500
	}
	return errors.Is(err, safefetch.ErrTimeout) || errors.Is(err, safefetch.ErrUnreachable)
}

// process fetches, checks, stores and measures one asset. It returns the outcome to record
// (an Active outcome names the stored copy) and, for a source failure, the fetch error behind
// it, so the caller can tell a failure worth another attempt (transient).
func (s *Service) process(ctx context.Context, c store.ClaimedAsset) (store.AssetOutcome, error) {
	limit := s.cfg.MaxBytes
	if c.Type == TypeImage {
		limit = s.cfg.MaxImageBytes
	}
	resp, err := s.cfg.Fetch.Get(ctx, c.SourceURL, safefetch.RequestOptions{MaxBytes: limit})
	if err != nil {
		return fetchFailure(err), err
	}
	defer resp.Body.Close()
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(resp.Body, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return fetchFailure(err), err
	}
	head = head[:n]
	if n == 0 {
		return failed(FailUnsupportedMedia, "The URL returned an empty body."), nil
	}
	m := sniff(head)
	if m.kind == "" {
		return failed(FailUnsupportedMedia, "The media is not a supported format. Images: PNG, JPEG or WebP; videos: MP4 or MOV; audio: MP3, WAV or M4A."), nil
	}
	if !m.supported() {
		return failed(FailUnsupportedMedia, fmt.Sprintf("The media is %s in %s format, which the library does not take. Images: PNG, JPEG or WebP; videos: MP4 or MOV; audio: MP3, WAV or M4A.", describe(m.kind), m.format)), nil
	}
	// An MP4-family file may turn out to hold only audio; that is decided after probing.
	if m.kind != c.Type && !(m.isoBMFF && c.Type != TypeImage) {
		return mismatch(c.Type, m), nil
	}
	key := KeyPrefix + c.ID + "/" + strings.TrimPrefix(c.Token, "lease_") + "." + m.ext
	size, err := s.cfg.Blobs.Put(ctx, key, io.MultiReader(bytes.NewReader(head), resp.Body))
	if err != nil {
		if ctx.Err() != nil {
			return store.AssetOutcome{}, nil
		}
		if isFetchErr(err) {
			return fetchFailure(err), err
		}
		s.log.ErrorContext(ctx, "asset copy not stored", "asset", c.ID, "err", err)
		return failed(FailProcessing, "The service could not store a copy of the media. Create the asset again; if it persists, contact the operator."), nil
	}
	out := s.measure(ctx, c, m, key, size)
	if out.Status == store.AssetFailed {
		_ = s.cfg.Blobs.Delete(ctx, key)
		return out, nil
	}
	out.Status, out.BlobKey, out.ContentType, out.Bytes = store.AssetActive, key, blob.ContentType(key), size
	return out, nil
}

func isFetchErr(err error) bool {
	for _, k := range []error{safefetch.ErrTooLarge, safefetch.ErrTimeout, safefetch.ErrUnreachable, safefetch.ErrForbiddenAddress,
		safefetch.ErrRedirect, safefetch.ErrHTTPStatus} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

func mismatch(declared string, m media) store.AssetOutcome {
	return failed(FailTypeMismatch, fmt.Sprintf("AssetType is %s, but the media is %s (%s). Create the asset with AssetType %s, or use a URL of %s.",
		declared, describe(m.kind), m.format, m.kind, describe(declared)))
}

// measure reads the stored copy: the size of images, and the duration, size and tracks of
// MP4/MOV files (which decide between video and audio-only).
func (s *Service) measure(ctx context.Context, c store.ClaimedAsset, m media, key string, size int64) store.AssetOutcome {
	obj, err := s.cfg.Blobs.Open(ctx, key)
	if err != nil {
		s.log.ErrorContext(ctx, "stored asset copy unreadable", "asset", c.ID, "err", err)
		return failed(FailProcessing, "The service could not read its copy of the media. Create the asset again.")
	}
	defer obj.Close()
	var out store.AssetOutcome
	switch {
	case m.kind == TypeImage && m.format == "WebP":
		head := make([]byte, 30)
		if _, err := io.ReadFull(obj, head); err != nil {
			return failed(FailUnreadable, "The WebP image could not be read.")
		}
		w, h, ok := webpSize(head)
		if !ok {
			return failed(FailUnreadable, "The WebP image could not be read.")
		}
		out.Width, out.Height = w, h
	case m.kind == TypeImage:
		cfg, _, err := image.DecodeConfig(obj)
		if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
			return failed(FailUnreadable, fmt.Sprintf("The %s image could not be read.", m.format))
		}
		out.Width, out.Height = cfg.Width, cfg.Height
	case m.isoBMFF:
		ra, ok := obj.(io.ReaderAt)
		if !ok {
			return failed(FailProcessing, "The service could not read its copy of the media.")
		}
		res, err := probe.ProbeReaderAt(ctx, ra, size, s.cfg.Probe)
		if err != nil {
			return failed(FailUnreadable, "The media could not be measured: "+probe.PublicMessage(err))
		}
		kind := TypeVideo
		switch {
		case res.HasVideo:
		case res.HasAudio:
			kind = TypeAudio
		default:
			return failed(FailUnreadable, "The file holds no video or audio track.")
		}
		if kind != c.Type {
			return mismatch(c.Type, media{kind: kind, format: m.format})
		}
		if res.Duration <= 0 {
			return failed(FailUnreadable, "The media has no measurable duration.")
		}
		out.Duration = res.Duration
		if kind == TypeVideo {
			out.Width, out.Height = res.Width, res.Height
		}
	}
	return out
}
