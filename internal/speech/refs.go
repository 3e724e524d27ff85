package speech

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"mediagen/internal/apierr"
	"mediagen/internal/contract"
	"mediagen/internal/media/pixels"
	"mediagen/internal/media/safefetch"
)

// Reference checks. Each reference URL is fetched once at submission through safefetch with
// redirects refused: a GET with "Range: bytes=0-511" whose body is read for at most
// refSniffBytes and then closed. It is accepted when the answer is 2xx (200 or 206) and the
// media family matches the reference type: audio for audio_url, image for image_url.
const (
	refSniffBytes = 512
	// Largest reference a server may announce (Content-Length of an answer that ignores the
	// Range header); the check itself never reads more than refSniffBytes.
	maxAudioRefBytes = 100 << 20
	maxImageRefBytes = 32 << 20
)

// checkReferences checks every reference concurrently and reports the first failure in
// request order, as a 400 on metadata.references[i].url.
func (s *Service) checkReferences(ctx context.Context, refs []contract.SpeechReference) error {
	if len(refs) == 0 {
		return nil
	}
	if s.Fetch == nil {
		return apierr.New(apierr.KindUnavailable, "Speech references cannot be checked on this server right now. Retry later, or contact the operator.")
	}
	ctx, cancel := context.WithTimeout(ctx, s.checkTimeout())
	defer cancel()
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	for i, ref := range refs {
		wg.Go(func() { errs[i] = s.checkReference(ctx, i, ref) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) checkReference(ctx context.Context, i int, ref contract.SpeechReference) error {
	param := fmt.Sprintf("metadata.references[%d].url", i)
	want, limit := "audio", int64(maxAudioRefBytes)
	if ref.Type == contract.SpeechRefImage {
		want, limit = "image", maxImageRefBytes
	}
	// An image's header is read too (its pixel size), and a JPEG's may follow its metadata.
	ask := int64(refSniffBytes)
	if want == "image" {
		ask = pixels.HeaderReadMax
	}
	resp, err := s.Fetch.Get(ctx, ref.URL, safefetch.RequestOptions{
		NoRedirects: true,
		MaxBytes:    limit,
		Header:      http.Header{"Range": {fmt.Sprintf("bytes=0-%d", ask-1)}},
	})
	if err != nil {
		return refError(ctx, param, err)
	}
	defer resp.Body.Close()
	head := make([]byte, refSniffBytes)
	n, err := io.ReadFull(resp.Body, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return refError(ctx, param, err)
	}
	if n == 0 {
		return apierr.Invalid(param, fmt.Sprintf("%s could not be used: the URL returned no content.", param))
	}
	if got := mediaFamily(resp.Header.Get("Content-Type"), head[:n]); got != want {
		return apierr.Invalid(param, fmt.Sprintf("%s could not be used: an %s reference must serve %s media (Content-Type %s/*), and this URL does not.", param, ref.Type, want, want))
	}
	if want == "image" {
		return checkImagePixels(ctx, param, io.MultiReader(bytes.NewReader(head[:n]), resp.Body))
	}
	return nil
}

// checkImagePixels reads an image reference's size from its header (at most
// pixels.HeaderReadMax bytes, never a pixel) and refuses one over the pixel budget, or one
// whose size no header states: whoever decodes it would hold every pixel.
func checkImagePixels(ctx context.Context, param string, r io.Reader) error {
	size, err := pixels.ReadSize(r)
	if errors.Is(err, pixels.ErrNoSize) {
		if ctx.Err() != nil {
			return refError(ctx, param, ctx.Err())
		}
		return apierr.Invalid(param, fmt.Sprintf("%s could not be used: the image's pixel size could not be read from its header; use a PNG, JPEG, WebP, GIF or BMP image.", param))
	}
	if err == nil {
		err = size.Check()
	}
	if err != nil {
		return apierr.Invalid(param, fmt.Sprintf("%s could not be used: %v.", param, err))
	}
	return nil
}

// refError turns a fetch failure into the client's 400 with safefetch's sanitized sentence.
func refError(ctx context.Context, param string, err error) error {
	msg := safefetch.PublicMessage(err)
	if ctx.Err() != nil && !errors.Is(err, safefetch.ErrTimeout) {
		msg = "The URL did not answer in time."
	}
	return &apierr.Error{Kind: apierr.KindInvalid, Param: param, Err: err,
		Message: fmt.Sprintf("%s could not be used: %s", param, msg)}
}

// mediaFamily is "audio", "image", "video", … from the declared Content-Type; when the server
// declares none or a generic binary type, from the first bytes (http.DetectContentType).
// application/ogg counts as audio.
func mediaFamily(contentType string, head []byte) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || mt == "application/octet-stream" || mt == "binary/octet-stream" {
		mt, _, _ = mime.ParseMediaType(http.DetectContentType(head))
	}
	if mt == "application/ogg" {
		return "audio"
	}
	family, _, _ := strings.Cut(mt, "/")
	return family
}
