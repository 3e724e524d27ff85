package video

import (
	"context"

	"mediagen/internal/media/probe"
	"mediagen/internal/media/safefetch"
)

// URLProber measures remote videos with the SSRF-safe client and the byte-range probe.
type URLProber struct {
	Client  *safefetch.Client
	Options probe.Options
}

// MeasureVideo returns the measured duration of the MP4/MOV video at url; a file that is not
// an MP4/MOV or has no video track is an error.
func (p URLProber) MeasureVideo(ctx context.Context, url string, allowHTTP bool) (float64, error) {
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
