package asset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/blob"
	"mediagen/internal/media/pixels"
	"mediagen/internal/media/probe"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/store"
)

// KeyPrefix starts the key of every stored asset copy.
const KeyPrefix = "assets/"

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
	case safefetch.Refused(err):
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
func (s *Service) process(ctx context.Context, c store.Asset, token string) (store.AssetOutcome, error) {
	limit := s.cfg.MaxBytes
	if c.Type == TypeImage {
		limit = s.cfg.MaxImageBytes
	}
	resp, err := s.fetchSource(ctx, c, safefetch.RequestOptions{MaxBytes: limit})
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
	key := KeyPrefix + c.ID + "/" + strings.TrimPrefix(token, "lease_") + "." + m.ext
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
func (s *Service) measure(ctx context.Context, c store.Asset, m media, key string, size int64) store.AssetOutcome {
	obj, err := s.cfg.Blobs.Open(ctx, key)
	if err != nil {
		s.log.ErrorContext(ctx, "stored asset copy unreadable", "asset", c.ID, "err", err)
		return failed(FailProcessing, "The service could not read its copy of the media. Create the asset again.")
	}
	defer obj.Close()
	var out store.AssetOutcome
	switch {
	case m.kind == TypeImage:
		// The header only: the pixels are never decoded here, and an image over the pixel
		// budget never becomes an asset that an engine would decode.
		size, err := pixels.ReadSize(obj)
		if err != nil {
			return failed(FailUnreadable, fmt.Sprintf("The %s image could not be read.", m.format))
		}
		if err := size.Check(); err != nil {
			return failed(FailTooManyPixels, upperFirst(err.Error())+".")
		}
		out.Width, out.Height = size.Width, size.Height
	case m.isoBMFF:
		ra, ok := obj.(io.ReaderAt)
		if !ok {
			return failed(FailProcessing, "The service could not read its copy of the media.")
		}
		res, err := probe.ProbeReaderAt(ctx, ra, size, s.cfg.Probe)
		if errors.Is(err, pixels.ErrOverBudget) {
			return failed(FailTooManyPixels, probe.PublicMessage(err))
		}
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

// upperFirst capitalizes a sentence that starts a failure reason.
func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}
