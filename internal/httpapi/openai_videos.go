package httpapi

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"

	"mediagen/internal/apierr"
	"mediagen/internal/asset"
	"mediagen/internal/idgen"
	"mediagen/internal/netlimit"
	"mediagen/internal/video"
)

// DefaultMaxUploadBytes bounds an input_reference upload: the asset library's bound on an
// image (asset.DefaultMaxImageBytes, 32 MiB), which is also what the sandbox engine fetches
// of a first frame.
const DefaultMaxUploadBytes = asset.DefaultMaxImageBytes

// UploadKeyPrefix starts the key of every stored input_reference upload. It is under the
// video results' prefix so that the result store's file route and lifetime apply to it.
const UploadKeyPrefix = video.KeyPrefix + "uploads/"

// isMultipart reports a multipart/form-data request: always OpenAI's request shape (the
// contract's is JSON only).
func isMultipart(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "multipart/form-data"
}

// createVideoOpenAI answers POST /v1/videos in OpenAI's request shape with the contract's
// create answer: 202 with the task, for a new task and for an identical replay alike (the
// replay carries the original id). The Idempotency-Key header, when sent, is the mapped
// request's client_request_id. created reports a new task (false for a replay, whose
// upload, if any, no task refers to).
func (s *Server) createVideoOpenAI(w http.ResponseWriter, r *http.Request, o video.OpenAIRequest, upload *video.Asset) (created bool, err error) {
	if vs := r.Header.Values(video.IdempotencyHeader); len(vs) > 0 {
		if len(vs) > 1 {
			return false, apierr.Invalid(video.IdempotencyHeader, "The Idempotency-Key header was sent more than once; send it once.")
		}
		o.IdempotencyKey, o.HasIdempotencyKey = vs[0], true
	}
	task, created, err := s.videos.CreateOpenAI(r.Context(), caller(r), o, upload)
	if err != nil {
		return false, err
	}
	if created {
		s.metrics.accepted.WithLabelValues(task.Route).Inc()
	}
	writeJSON(w, http.StatusAccepted, video.View(task, video.LinkerIn(r.Context(), s.links)))
	return created, nil
}

// createVideoMultipart reads OpenAI's multipart create as a stream: its text fields (each
// bounded by the body limit), and at most one input_reference file, which goes straight to
// the blob store through a reader that stops at the upload bound. A refused request leaves
// nothing behind: the stored upload is deleted on every path that does not accept a task.
func (s *Server) createVideoMultipart(w http.ResponseWriter, r *http.Request) (err error) {
	if s.uploads == nil {
		return &apierr.Error{Kind: apierr.KindUnavailable, Message: "Uploads are not available on this server. Retry later."}
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.maxBody+s.maxUpload+(64<<10))
	mr, err := r.MultipartReader()
	if err != nil {
		return apierr.Invalid("", "The multipart/form-data body could not be read.")
	}
	var o video.OpenAIRequest
	var upload *video.Asset
	var uploadKey string
	defer func() {
		if err != nil && uploadKey != "" {
			s.dropUpload(uploadKey)
		}
	}()
	seen := map[string]bool{}
	for {
		part, perr := mr.NextPart()
		if errors.Is(perr, io.EOF) {
			break
		}
		if perr != nil {
			return s.multipartErr(w, perr)
		}
		name := part.FormName()
		if seen[name] {
			if name == "input_reference" {
				return apierr.Invalid(name, "Only one input_reference file may be sent.")
			}
			return apierr.Invalid(name, fmt.Sprintf("The field %q was sent more than once.", name))
		}
		seen[name] = true
		if name == "input_reference" {
			if part.FileName() == "" {
				return apierr.Invalid(name, "input_reference must be a file (a PNG, JPEG or WebP image).")
			}
			if upload, uploadKey, o.UploadSHA256, err = s.storeUpload(r.Context(), part); err != nil {
				return err
			}
			continue
		}
		if part.FileName() != "" {
			return apierr.Invalid(name, fmt.Sprintf("The field %q cannot be a file; only input_reference is.", name))
		}
		if name == "input_reference[file_id]" {
			return video.ErrInputReferenceFileID
		}
		v, rerr := io.ReadAll(io.LimitReader(part, s.maxBody+1))
		if rerr != nil {
			return s.multipartErr(w, rerr)
		}
		if int64(len(v)) > s.maxBody {
			return apiErrTooLarge(s.maxBody)
		}
		if !o.Set(name, string(v)) {
			return apierr.Invalid(name, fmt.Sprintf("Unknown field %q. OpenAI's request shape takes model, prompt, seconds, size and input_reference (a file, or input_reference[image_url]).", name))
		}
	}
	created, err := s.createVideoOpenAI(w, r, o, upload)
	if err == nil && !created && uploadKey != "" {
		// A replay answers with the task accepted first, which has its own stored copy.
		s.dropUpload(uploadKey)
	}
	return err
}

func (s *Server) multipartErr(w http.ResponseWriter, err error) error {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return apiErrTooLarge(tooBig.Limit)
	case errors.Is(err, netlimit.ErrBodyTimeout):
		return err // the body's own 408 (writeError closes the connection)
	}
	return apierr.Invalid("", "The multipart/form-data body could not be read.")
}

// errUploadTooBig stops a Put that would store more than the upload bound.
var errUploadTooBig = errors.New("upload larger than the bound")

// boundedReader fails with errUploadTooBig once more than n bytes were read, so that the
// blob store's Put fails and keeps nothing.
type boundedReader struct {
	r io.Reader
	n int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n -= int64(n)
	if b.n < 0 {
		return n, errUploadTooBig
	}
	return n, err
}

// storeUpload streams one input_reference file into the blob store and checks the stored
// copy as the asset library checks an Image asset. Its type is decided from its leading
// bytes before anything is written; the part is never held whole in memory. It returns the
// task's view of the upload, its key in the store and the hex SHA-256 of its bytes.
func (s *Server) storeUpload(ctx context.Context, part *multipart.Part) (*video.Asset, string, string, error) {
	const param = "input_reference"
	br := bufio.NewReaderSize(part, 512)
	head, _ := br.Peek(512)
	format, ext, ok := asset.ImageFormat(head)
	if !ok {
		return nil, "", "", apierr.Invalid(param, fmt.Sprintf("input_reference must be a PNG, JPEG or WebP image; %s.", format))
	}
	id := video.UploadID + strings.ToLower(strings.TrimPrefix(idgen.New("u"), "u_"))
	key := UploadKeyPrefix + id + "." + ext
	digest := sha256.New()
	if _, err := s.uploads.Put(ctx, key, &boundedReader{r: io.TeeReader(br, digest), n: s.maxUpload}); err != nil {
		_ = s.uploads.Delete(context.WithoutCancel(ctx), key)
		var tooBig *http.MaxBytesError
		switch {
		case errors.Is(err, errUploadTooBig):
			return nil, "", "", apierr.Invalid(param, fmt.Sprintf("input_reference is larger than the limit of %s.", humanBytes(s.maxUpload)))
		case errors.As(err, &tooBig):
			return nil, "", "", apiErrTooLarge(tooBig.Limit)
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, multipart.ErrMessageTooLarge):
			return nil, "", "", apierr.Invalid(param, "The input_reference file could not be read.")
		case errors.Is(err, netlimit.ErrBodyTimeout):
			return nil, "", "", err // the body's own 408, through the store's wrapping
		}
		return nil, "", "", fmt.Errorf("store input_reference: %w", err)
	}
	if err := s.checkUpload(ctx, key); err != nil {
		s.dropUpload(key)
		return nil, "", "", err
	}
	// The task refers to the upload as it does to an asset's stored copy (asset.Resolve).
	a := &video.Asset{ID: id, Type: video.AssetImage, Status: video.AssetActive}
	a.AccessURL, _ = s.uploads.SignedURL(key, asset.DefaultTaskLinkTTL)
	var local bool
	if a.Path, local = s.uploads.LocalPath(key); !local {
		a.Key = key
	}
	return a, key, hex.EncodeToString(digest.Sum(nil)), nil
}

func (s *Server) checkUpload(ctx context.Context, key string) error {
	obj, err := s.uploads.Open(ctx, key)
	if err != nil {
		return fmt.Errorf("read stored input_reference: %w", err)
	}
	defer obj.Close()
	if _, err := asset.CheckImage(obj); err != nil {
		return apierr.Invalid("input_reference", "input_reference cannot be used: "+err.Error()+".")
	}
	return nil
}

// dropUpload deletes a stored upload no task refers to. It runs on refusals, whatever the
// request's context has become.
func (s *Server) dropUpload(key string) {
	if err := s.uploads.Delete(context.Background(), key); err != nil {
		s.log.Error("input_reference upload not deleted", "key", key, "err", err)
	}
}
