package ffmpeg

import (
	"strconv"

	"mediagen/internal/media/pixels"
)

// The decoders' own walls. The service reads every image's and video's header against its
// pixel budget before ffmpeg sees it (internal/media/pixels), but a header is one field
// anyone can write: a video's bitstream may carry larger frames than its container says, and
// a file on disk may reach a tool by a path that skipped the check. ffmpeg's -max_pixels (an
// option of the decoder, so an input option, given before each -i it bounds) makes the
// decoder refuse to allocate a frame of more pixels, whatever the header said: a 16000×16000
// PNG fails in 53 MB instead of decoding into 870 MB.

// imageInput is the input options of an image ffmpeg decodes: at most pixels.MaxImagePixels.
func imageInput() []string {
	return []string{"-max_pixels", strconv.FormatInt(pixels.MaxImagePixels, 10)}
}

// videoInput is the input options of a video (or of a file that may be an image or a video)
// ffmpeg or ffprobe decodes: frames of at most pixels.MaxVideoFramePixels, the larger budget.
func videoInput() []string {
	return []string{"-max_pixels", strconv.FormatInt(pixels.MaxVideoFramePixels, 10)}
}
