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

// ProbeSeconds returns the measured duration of the MP4/MOV at url.
func (p URLProber) ProbeSeconds(ctx context.Context, url string) (float64, error) {
	r, err := probe.ProbeURL(ctx, p.Client, url, p.Options)
	if err != nil {
		return 0, err
	}
	return r.Duration, nil
}

// ProbeMessage is the client-safe reason a probe failed.
func ProbeMessage(err error) string { return probe.PublicMessage(err) }
