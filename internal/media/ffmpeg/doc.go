// Package ffmpeg runs the ffmpeg, ffprobe and espeak-ng command-line tools
// for the sandbox engine and the media pipeline.
//
// Every tool runs as a child process started with exec.CommandContext and an
// argument vector; nothing goes through a shell. Each public method applies
// Tools.Timeout (DefaultTimeout when zero) to its whole run, on top of any
// deadline already in the caller's context. When the context ends the process
// is killed and the returned error satisfies errors.Is(err, ctx.Err()), so a
// timeout is errors.Is(err, context.DeadlineExceeded). On Linux each tool runs
// in a process group of its own, which the deadline kills whole, and with
// Pdeathsig set, so it dies with the service even when the service is killed
// with SIGKILL (proc_linux.go explains the thread pitfall this has to avoid).
//
// Tool failures are *ToolError values naming the tool. They carry a short tail
// of the tool's stderr for internal logs only: it can contain file paths and
// tool versions, so callers must never show it to API clients.
//
// Outputs are written atomically: the tool writes a temporary file in the
// destination directory, which is fsynced and renamed over the destination.
// A reader never sees a half-written file, and after a failure (including a
// timeout) the destination is untouched and no temporary file is left behind.
// Files are created with mode 0600, as os.CreateTemp does: only the service
// itself reads them.
//
// # API
//
//	type Tools struct{ FFmpeg, FFprobe, Espeak, FontFile string; Timeout time.Duration; Preset string; Threads int }
//	type ToolError struct{ Tool string; Err error; Stderr string }
//	var ErrInvalidSpec, ErrUnsupportedBitDepth, ErrNoVideo, ErrEmptyText error
//	func (t Tools) Check(ctx) error
//	func (t Tools) Probe(ctx, path) (Info, error)
//	func (t Tools) Render(ctx, RenderSpec, out) error
//	func (t Tools) Enhance(ctx, in, out, EnhanceSpec) error
//	func (t Tools) VideoEncodingFor(ctx, bitDepth) (VideoEncoding, error)
//	func (t Tools) LastFrameJPG(ctx, video, out) error
//	func (t Tools) FirstFrameJPG(ctx, video, out) error
//	func (t Tools) Speak(ctx, text, out, SpeakOptions) error
//	func (t Tools) RemoveStaleTemp(dir, now) (int, error)
//
// # Output formats
//
// Render: H.264 (libx264, yuv420p, CRF 23) at exactly Width x Height and FPS,
// duration exactly Duration (-t), in MP4 (+faststart) or MOV. The background is
// ffmpeg's moving testsrc2 pattern. With Audio, one AAC stereo 48 kHz track
// holding a quiet beeping 440 Hz tone; without it, no audio stream at all.
// Metadata is stripped and the muxer writes no version tags; libx264 is
// deterministic by default, so the same spec rendered twice by the same
// ffmpeg gives the same bytes (TestRenderIsDeterministic checks this).
//
// Enhance: MP4 (+faststart). The short side becomes ShortSide (odd values are
// rounded down to even) and the long side keeps the aspect ratio, rounded to
// the nearest even number: 320x180 at ShortSide 480 gives 854x480, since
// 320*480/180 = 853.33. This is ffmpeg's own "-2" rule. Source metadata is
// dropped so that nothing from an upstream provider leaks into the result.
// The first audio track is copied when MP4 can hold it (AAC, MP3, AC-3,
// E-AC-3) and re-encoded to AAC otherwise.
//
// Bit depth with Debian 12's ffmpeg 5.1 (libx264 and libx265 are both built
// for 8 and 10 bits, libx265 also for 12):
//
//	 8 → H.264 High, yuv420p (libx264), the most playable choice.
//	10 → HEVC Main 10, yuv420p10le (libx265, tagged hvc1); falls back to
//	     H.264 High 10 (libx264) when libx265 lacks 10 bits. HEVC comes first
//	     because hardware decoders handle Main 10 and rarely High 10.
//	12 → HEVC Main 12 (Rext), yuv420p12le (libx265); an error when missing.
//	16 → best effort: no MP4 video encoder in this ffmpeg stores 16 bits
//	     (FFV1 does, but MP4 cannot carry it), so the deepest available
//	     encoding is used: 12 bits today. VideoEncodingFor reports the choice.
//
// Quality: BitrateKbps > 0 uses that average bitrate (maxrate 1.5x, buffer
// 2x); otherwise BitrateLevel picks a CRF: high/medium/low = 18/23/28 for
// libx264 and 23/28/33 for libx265 (x265's scale sits about 5 higher for the
// same look). An empty level means medium.
//
// LastFrameJPG: baseline JPEG (quality -q:v 2) of the last decoded frame, at
// the video's displayed size. FirstFrameJPG: the same of the first frame (one
// frame decoded), the thumbnail of the OpenAI-shaped content route.
//
// Speak: espeak-ng reads the text from stdin (UTF-8), its WAV is converted to
// MP3 mono 24 kHz CBR 64 kbit/s with no ID3 tag (or WAV PCM s16le mono
// 24 kHz with SpeakOptions.Format "wav").
package ffmpeg
