// Package logctx carries a request's id to every log line the request causes: the lines
// logged while it is served, and — through the id stored on the job row its record enqueued —
// the lines of the background runs of that job (docs/deploy.md#logs). It is a leaf: the edge
// puts the id in the context, the job engine puts it back for each run, and the handler of the
// process's logger (Handler) writes it as request_id on every line logged with that context.
package logctx

import (
	"context"
	"log/slog"
)

// Key is the attribute name of the request id in log lines.
const Key = "request_id"

type ctxKey struct{}

// Carrier is what a context holds under this package's key: the edge's own record of the
// request (so that a request adds one context value, not two), or a bare id.
type Carrier interface{ RequestID() string }

type bareID string

func (id bareID) RequestID() string { return string(id) }

// WithRequestID returns ctx carrying id ("" leaves ctx as it is).
func WithRequestID(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, ctxKey{}, bareID(id))
}

// WithCarrier returns ctx carrying c, whose RequestID is read when a line is logged.
func WithCarrier(ctx context.Context, c Carrier) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// Carried is the carrier in ctx, or nil.
func Carried(ctx context.Context) Carrier {
	c, _ := ctx.Value(ctxKey{}).(Carrier)
	return c
}

// RequestID is the id of the request ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	if ctx == nil {
		return ""
	}
	if c := Carried(ctx); c != nil {
		return c.RequestID()
	}
	return ""
}

// Logger is log with the request id of ctx attached, for code that logs without a context.
func Logger(ctx context.Context, log *slog.Logger) *slog.Logger {
	if id := RequestID(ctx); id != "" {
		return log.With(Key, id)
	}
	return log
}

// Handler adds request_id to every record logged with a context that carries one, unless the
// line already has it (an explicit attribute, or a logger made by Logger).
type Handler struct {
	next slog.Handler
	has  bool // WithAttrs already gave the lines a request_id
}

// NewHandler wraps next.
func NewHandler(next slog.Handler) *Handler { return &Handler{next: next} }

// Enabled is next's.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle adds the context's request id, then hands the record on.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if !h.has {
		if id := RequestID(ctx); id != "" && !hasKey(r) {
			r = r.Clone()
			r.AddAttrs(slog.String(Key, id))
		}
	}
	return h.next.Handle(ctx, r)
}

// WithAttrs remembers whether the attributes name the request id.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	has := h.has
	for _, a := range as {
		has = has || a.Key == Key
	}
	return &Handler{next: h.next.WithAttrs(as), has: has}
}

// WithGroup is next's; a request id added later lands in the group, which is harmless.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), has: h.has}
}

func hasKey(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == Key
		return !found
	})
	return found
}
