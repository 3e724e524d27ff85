package ffmpeg

// Memory limits of the media children: a backstop behind the pixel budgets. The budgets
// (internal/media/pixels, checked from headers) and the decoders' -max_pixels keep a
// request's media within a few hundred megabytes; the limit bounds what no pixel bound sees
// — a codec's own allocations, a file of many streams, a decoder bug — so that one child
// can never take the machine. It is RLIMIT_DATA (the heap and private writable mappings,
// where frames live), set on the child with prlimit(2) right after it starts: Go cannot set
// a child's rlimits before exec, and the limit is in place before the tool has read its
// command line, long before it allocates a frame. A child over its limit fails its
// allocation and exits with an error (some encoders crash instead): the call fails like any
// tool failure, and the task fails the way a failed render does.
//
// The numbers are sized for the largest legitimate job, measured on the development machine
// (2 threads) with ffmpeg 5.1 (docs/limits.md, "Media budgets"):
const (
	// DefaultDecodeMemory bounds the children that only decode (ffprobe, first and last
	// frame, fitting a first frame): the heaviest legitimate one, the last frame of an 8K
	// 10-bit HEVC video, peaks at 1.56 GB resident; 4 GiB leaves room for more decoding
	// threads on a larger machine.
	DefaultDecodeMemory = 4 << 30
	// DefaultEncodeMemory bounds the children that encode (render, enhance, trim, speech):
	// a 4K 10-bit HEVC enhancement peaks at 1.78 GB resident and fails under a 2 GiB limit;
	// an 8K one needs about four times that. 16 GiB.
	DefaultEncodeMemory = 16 << 30
)

// decodeMemory is the memory limit of a decode-only child.
func (t Tools) decodeMemory() int64 { return limitOr(t.DecodeMemory, DefaultDecodeMemory) }

// encodeMemory is the memory limit of an encoding child.
func (t Tools) encodeMemory() int64 { return limitOr(t.EncodeMemory, DefaultEncodeMemory) }

// limitOr is v, def when v is 0, and 0 (no limit) when v is negative.
func limitOr(v, def int64) int64 {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return def
	}
	return v
}
