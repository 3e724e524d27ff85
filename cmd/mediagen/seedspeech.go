package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"mediagen/internal/catalog"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/provider"
)

// remoteSpeaks: a remote kind whose client speaks (provider.Synthesizer) in the API process.
func remoteSpeaks(k catalog.UpstreamKind) bool {
	return k == catalog.KindOpenAI || k == catalog.KindElevenLabs || k == catalog.KindSeedSpeech
}

// referenceReader reads a speech reference for an account that is sent its bytes
// (seedspeech): through the fetch policy, redirects refused as the submission's check does,
// at most max bytes. The submission already fetched its head, so a refusal here is the
// same on every try: the speech fails, refunded.
type referenceReader struct{ fetch *safefetch.Client }

func (r referenceReader) read(ctx context.Context, src provider.Source, max int64) ([]byte, error) {
	res, err := r.fetch.Get(ctx, src.URL, safefetch.RequestOptions{MaxBytes: max, NoRedirects: true})
	if err == nil {
		defer res.Body.Close()
		var b []byte
		if b, err = io.ReadAll(provider.Capped(res.Body, max)); err == nil {
			return b, nil
		}
	}
	switch {
	case errors.Is(err, safefetch.ErrTooLarge), errors.Is(err, provider.ErrTooLarge):
		return nil, fmt.Errorf("fetch the reference: %w", provider.ErrTooLarge)
	case safefetch.Refused(err):
		return nil, &provider.Error{Code: "InvalidParameter", Message: "A reference's URL is not allowed.", Kind: provider.ErrPermanent}
	}
	return nil, fmt.Errorf("fetch the reference: %w: %w", err, provider.ErrTransient)
}
