package asset

import (
	"context"
	"errors"
	"io"
	"net/url"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"mediagen/internal/media/safefetch"
	"mediagen/internal/store"
	"mediagen/internal/tracing"
)

// fetchSource is the fetch of an asset's source, in a span "media.fetch" when tracing is on
// (Config.Tracer): from the request until its body is read to the end or closed, so the span
// covers the download, not only the headers. The span names the source's host only: the
// URL's path and query may hold a signature.
func (s *Service) fetchSource(ctx context.Context, c store.Asset, opt safefetch.RequestOptions) (*safefetch.Response, error) {
	tr := s.cfg.Tracer
	if tr == nil {
		return s.cfg.Fetch.Get(ctx, c.SourceURL, opt)
	}
	host := ""
	if u, err := url.Parse(c.SourceURL); err == nil {
		host = u.Hostname()
	}
	fctx, span := tr.Start(ctx, "media.fetch", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("server.address", host), attribute.String("mediagen.asset_id", c.ID),
		attribute.String("media.source", "asset"), tracing.KeyJobAttempt.Int(tracing.Attempt(ctx))))
	resp, err := s.cfg.Fetch.Get(fctx, c.SourceURL, opt)
	if err != nil {
		span.SetAttributes(tracing.KeyOutcome.String("error"))
		tracing.End(span, err)
		return nil, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	resp.Body = &tracedBody{ReadCloser: resp.Body, span: span}
	return resp, nil
}

// tracedBody ends the fetch's span at the body's end (EOF or a read error) or its Close,
// with the bytes read.
type tracedBody struct {
	io.ReadCloser
	span  trace.Span
	n     int64
	ended bool
}

func (b *tracedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if err != nil {
		b.end(err)
	}
	return n, err
}

func (b *tracedBody) Close() error {
	b.end(nil)
	return b.ReadCloser.Close()
}

func (b *tracedBody) end(err error) {
	if b.ended {
		return
	}
	b.ended = true
	if errors.Is(err, io.EOF) {
		err = nil
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	b.span.SetAttributes(attribute.Int64("media.bytes", b.n), tracing.KeyOutcome.String(outcome))
	tracing.End(b.span, err)
}
