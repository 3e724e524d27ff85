package video

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"mediagen/internal/media/probe"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/tracing"
)

// ErrProbesBusy is returned when no probe slot freed up before the measurement's deadline.
var ErrProbesBusy = errors.New("video: every probe slot stayed busy")

// URLProber measures remote videos with the SSRF-safe client and the byte-range probe.
type URLProber struct {
	Client  *safefetch.Client
	Options probe.Options
	// Slots bounds the probes this process runs at once (NewProbeSlots); nil: no bound. A
	// probe holds up to probe.Options.FullReadMax bytes (a server without range support) and
	// its block cache, and one request can start ten: without a bound, the memory of a
	// replica would follow the number of requests in flight.
	Slots chan struct{}
	// Tracer, when set, makes each measurement a span "media.probe" (nil: none).
	Tracer trace.Tracer
}

// NewProbeSlots makes the shared bound of URLProber.Slots: n probes at once.
func NewProbeSlots(n int) chan struct{} { return make(chan struct{}, n) }

// MeasureVideo returns the measured duration of the MP4/MOV video at url; a file that is not
// an MP4/MOV or has no video track is an error. It waits for a probe slot as long as ctx
// allows, then gives up with ErrProbesBusy.
func (p URLProber) MeasureVideo(ctx context.Context, url string, allowHTTP bool) (d float64, err error) {
	if p.Tracer != nil {
		var span trace.Span
		ctx, span = p.Tracer.Start(ctx, "media.probe", trace.WithAttributes(attribute.String("media.source", "url")))
		defer func() { tracing.End(span, err) }()
	}
	if p.Slots != nil {
		select {
		case p.Slots <- struct{}{}:
			defer func() { <-p.Slots }()
		case <-ctx.Done():
			return 0, ErrProbesBusy
		}
	}
	opt := p.Options
	opt.AllowHTTP = opt.AllowHTTP || allowHTTP
	r, err := probe.ProbeURL(ctx, p.Client, url, opt)
	if err != nil {
		return 0, err
	}
	if err := probe.RequireVideo(r); err != nil {
		return 0, err
	}
	return r.Duration, nil
}

// Check applies the fetch policy's static rules (scheme, host spelling, literal addresses,
// ports) to raw without any I/O.
func (p URLProber) Check(raw string, allowHTTP bool) error {
	_, err := p.Client.Check(raw, allowHTTP)
	return err
}

// ProbeMessage is the client-safe reason a probe or a URL check failed.
func ProbeMessage(err error) string { return probe.PublicMessage(err) }
