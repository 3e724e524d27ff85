package ffmpeg

import (
	"context"
	"fmt"
	"os"
)

// LastFrameJPG writes the last frame of video as a JPEG at out, at the
// video's size.
//
// There is no direct "last frame" selector in ffmpeg, so every decoded frame
// is written over the same file and the last one stays. To avoid decoding
// the whole video, decoding starts one second before the end (-sseof, which
// clamps to the start for shorter videos); if that yields nothing, for
// instance with a gap of more than a second before the last frame, the
// whole video is decoded instead.
func (t Tools) LastFrameJPG(ctx context.Context, video, out string) error {
	ctx, cancel := t.bound(ctx)
	defer cancel()

	return writeAtomic(out, func(tmp string) error {
		if err := t.lastFrame(ctx, video, tmp, true); err != nil {
			return err
		}
		if st, err := os.Stat(tmp); err == nil && st.Size() > 0 {
			return nil
		}
		return t.lastFrame(ctx, video, tmp, false)
	})
}

// FirstFrameJPG writes the first frame of video as a JPEG at out, at the video's size: the
// thumbnail of GET /v1/videos/{id}/content?variant=thumbnail. Only one frame is decoded.
func (t Tools) FirstFrameJPG(ctx context.Context, video, out string) error {
	ctx, cancel := t.bound(ctx)
	defer cancel()

	return writeAtomic(out, func(tmp string) error {
		args := ffmpegArgs()
		// One decoding thread: frame threads cannot share out a single frame, and starting
		// them (one per core, each with its own context) costs more than the decode
		// (0.13 → 0.08 CPU-seconds for a 720p thumbnail, bench/README.md#the-lean-ffmpeg).
		args = append(append(args, videoInput()...), "-threads", "1", "-i", fileURL(video),
			"-map", "0:v:0", "-an", "-sn", "-dn", "-frames:v", "1",
			"-c:v", "mjpeg", "-q:v", "2",
			"-map_metadata", "-1", "-fflags", "+bitexact",
			"-f", "image2", "-update", "1")
		args = append(args, t.threadArgs()...)
		args = append(args, fileURL(tmp))
		if err := run(ctx, proc{mem: t.decodeMemory(), tool: "ffmpeg", bin: t.ffmpegBin(), args: args}); err != nil {
			return fmt.Errorf("first frame: %w", err)
		}
		if st, err := os.Stat(tmp); err != nil || st.Size() == 0 {
			return fmt.Errorf("first frame: no frame decoded")
		}
		return nil
	})
}

func (t Tools) lastFrame(ctx context.Context, video, tmp string, fromEnd bool) error {
	args := ffmpegArgs()
	if fromEnd {
		args = append(args, "-sseof", "-1")
	}
	args = append(append(args, videoInput()...), "-i", fileURL(video),
		"-map", "0:v:0", "-an", "-sn", "-dn",
		// Passthrough writes decoded frames as they come: no duplicates,
		// nothing dropped at the end.
		"-fps_mode", "passthrough",
		"-c:v", "mjpeg", "-q:v", "2",
		"-map_metadata", "-1", "-fflags", "+bitexact",
		"-f", "image2", "-update", "1")
	args = append(args, t.threadArgs()...)
	args = append(args, fileURL(tmp))
	if err := run(ctx, proc{mem: t.decodeMemory(), tool: "ffmpeg", bin: t.ffmpegBin(), args: args}); err != nil {
		return fmt.Errorf("last frame: %w", err)
	}
	return nil
}

// FitImagePNG writes the first frame of an image (or video) as a PNG of exactly width x
// height: scaled to fit inside, keeping its aspect ratio, and padded with black. An upstream
// that takes a first frame only at its output size (the OpenAI videos API) gets one.
func (t Tools) FitImagePNG(ctx context.Context, in, out string, width, height int) error {
	if width <= 0 || height <= 0 {
		return fmt.Errorf("fit image: size %dx%d", width, height)
	}
	ctx, cancel := t.bound(ctx)
	defer cancel()
	return writeAtomic(out, func(tmp string) error {
		vf := fmt.Sprintf("scale=%d:%d:force_original_aspect_ratio=decrease,pad=%d:%d:(ow-iw)/2:(oh-ih)/2:color=black,setsar=1,format=rgb24",
			width, height, width, height)
		// An image by its budget; a video's first frame (the input may be either) by the
		// video frame's.
		args := append(append(ffmpegArgs(), videoInput()...), "-i", fileURL(in), "-map", "0:v:0", "-frames:v", "1", "-vf", vf,
			"-map_metadata", "-1", "-fflags", "+bitexact", "-c:v", "png", "-f", "image2", "-update", "1")
		args = append(args, t.threadArgs()...)
		args = append(args, fileURL(tmp))
		if err := run(ctx, proc{mem: t.decodeMemory(), tool: "ffmpeg", bin: t.ffmpegBin(), args: args}); err != nil {
			return fmt.Errorf("fit image: %w", err)
		}
		return nil
	})
}
