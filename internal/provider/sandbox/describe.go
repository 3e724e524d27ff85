package sandbox

import (
	"context"

	"mediagen/internal/media/ffmpeg"
	mediaprobe "mediagen/internal/media/probe"
)

// shape is what the engine reports about a video it made: the figures of the usage formula
// (Tokens) and of its log line.
type shape struct {
	Width, Height int
	FPS, Duration float64
}

// describe measures a video the engine made itself. The in-Go MP4/MOV reader reads it
// without starting a process: ffprobe costs a process start per task (about 45 ms of CPU on
// a quiet machine, several times that on a busy one), and the service measures the stored
// result with ffprobe again anyway. For every shape the engine renders, the reader reports
// what ffprobe reports (TestOwnVideosAreDescribedAsFFprobeDescribesThem), so the tokens an
// engine reports stay the tokens the service measures. A file the reader refuses goes to
// ffprobe, as before.
func (e *Engine) describe(ctx context.Context, path string) (shape, error) {
	if r, err := mediaprobe.ProbeFile(ctx, path, mediaprobe.Options{}); err == nil && r.HasVideo {
		return shape{Width: r.Width, Height: r.Height, FPS: r.FPS, Duration: r.Duration}, nil
	}
	info, err := e.cfg.Tools.Probe(ctx, path)
	if err != nil {
		return shape{}, err
	}
	return shapeOf(info), nil
}

func shapeOf(info ffmpeg.Info) shape {
	return shape{Width: info.Width, Height: info.Height, FPS: info.FPS, Duration: info.Duration}
}
