package blob

import (
	"context"
	"io"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"mediagen/internal/tracing"
)

// Traced wraps s so that each write (Put, PutFile) is a span "blob.put" with its key and
// size; reads and links go straight to s. With tr nil it returns s itself.
func Traced(s Store, tr trace.Tracer) Store {
	if tr == nil || s == nil {
		return s
	}
	return tracedStore{Store: s, tr: tr}
}

type tracedStore struct {
	Store
	tr trace.Tracer
}

// SignedURLAt keeps the wrapped store's answer to SignedURLIn.
func (t tracedStore) SignedURLAt(base, key string, ttl time.Duration) (string, time.Time) {
	if b, ok := t.Store.(baseLinker); ok {
		return b.SignedURLAt(base, key, ttl)
	}
	return t.Store.SignedURL(key, ttl)
}

func (t tracedStore) Put(ctx context.Context, key string, r io.Reader) (n int64, err error) {
	ctx, span := t.start(ctx, key)
	n, err = t.Store.Put(ctx, key, r)
	t.end(span, n, err)
	return n, err
}

func (t tracedStore) PutFile(ctx context.Context, key, path string) (n int64, err error) {
	ctx, span := t.start(ctx, key)
	n, err = t.Store.PutFile(ctx, key, path)
	t.end(span, n, err)
	return n, err
}

func (t tracedStore) start(ctx context.Context, key string) (context.Context, trace.Span) {
	return t.tr.Start(ctx, "blob.put", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attribute.String("blob.key", key)))
}

func (t tracedStore) end(span trace.Span, n int64, err error) {
	span.SetAttributes(attribute.Int64("blob.bytes", n))
	tracing.End(span, err)
}
