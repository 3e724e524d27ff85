package sqldb

import (
	"context"
	"runtime"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"mediagen/internal/store"
	"mediagen/internal/tracing"
)

// SetTracer makes every Transact a span "store.tx" named by its caller (nil: none, the
// default). Call it before the store is shared.
func (db *DB) SetTracer(tr trace.Tracer) { db.tracer = tr }

// tracedTransact is Transact inside a span. The operation is the function that called
// Transact ("video.(*Service).create", "jobs.(*producer).commit"): every call site is named
// without passing a name through the store's interface.
func (db *DB) tracedTransact(ctx context.Context, fn func(store.Tx) error) error {
	op := callerName(4) // skip runtime.Callers, callerName, tracedTransact, Transact
	ctx, span := db.tracer.Start(ctx, "store.tx", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("db.system.name", db.d.Name()), attribute.String("db.operation.name", op)))
	err := db.transact(ctx, fn)
	tracing.End(span, err)
	return err
}

// opNames caches the trimmed function name of each call site.
var opNames sync.Map // pc → string

func callerName(skip int) string {
	var pcs [1]uintptr
	if runtime.Callers(skip, pcs[:]) == 0 {
		return "unknown"
	}
	if v, ok := opNames.Load(pcs[0]); ok {
		return v.(string)
	}
	frame, _ := runtime.CallersFrames(pcs[:]).Next()
	name := frame.Function
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	opNames.Store(pcs[0], name)
	return name
}
