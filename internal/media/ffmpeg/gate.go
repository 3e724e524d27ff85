package ffmpeg

import "context"

// Gate admits the processes this package starts: every ffmpeg, ffprobe and espeak-ng waits
// in Acquire before it starts and gives its slot back when it has been reaped. The service's
// gate is the process-wide media budget (internal/media/budget), shared by everything that
// starts media processes and fair across the tenants named in the context.
type Gate interface {
	Acquire(ctx context.Context, tool string) (release func(), err error)
}

type gateKey struct{}

// withGate attaches the Tools' gate to the context of one public method (Tools.bound), where
// run finds it: every process is started by run, and every run happens under a bound.
func withGate(ctx context.Context, g Gate) context.Context {
	if g == nil {
		return ctx
	}
	return context.WithValue(ctx, gateKey{}, g)
}

// admit waits in ctx's gate for a slot to start tool; without a gate it admits at once.
func admit(ctx context.Context, tool string) (release func(), err error) {
	g, _ := ctx.Value(gateKey{}).(Gate)
	if g == nil {
		return func() {}, nil
	}
	return g.Acquire(ctx, tool)
}
