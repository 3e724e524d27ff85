// Package sandbox is the embedded default upstream: it makes real media offline with
// ffmpeg and espeak-ng and behaves asynchronously like a real provider, so integrators
// can run the whole contract with no provider account. It is for integration, not
// quality. docs/sandbox.md is the integrator-facing description; this comment is the
// engineer's summary.
//
// # Jobs
//
// A job id is "sbx_" + the first 24 hex digits of sha256(kind + NUL + IdempotencyKey),
// so submitting the same key again returns the same job and starts no second render
// (kind is generation or enhancement; the same key on both routes names two jobs).
// Submit writes Dir/jobs/<id>/spec.json (create-if-absent, atomic) and starts the render
// in a background goroutine bounded by Config.MaxConcurrent. The output is written
// atomically to Dir/jobs/<id>/out.<ext>, then result.json; a terminal render failure is
// recorded in status.json.
//
// Poll reports:
//
//   - queued (progress 0) until a render slot was taken;
//   - running, progress = elapsed/pace in 1..99, never decreasing, until the output
//     exists and the pace has passed since submit;
//   - succeeded (progress 100) with Output{Source{Path}, ContentType, CompletionTokens};
//   - failed or expired (progress 100) with ErrorCode and a sanitized ErrorMessage, also
//     only once the pace has passed, like an upstream that fails midway.
//
// After a restart (or Close), a job with a spec, no output, no failure and no render in
// this process is rendered again by the next Poll. A render holds a flock on
// Dir/jobs/<id>/render.lock; the process that gets it next knows the earlier render is dead
// and removes the temporary files it left (leftovers.go). Unknown ids give
// provider.ErrUnknownJob.
//
// # Generation
//
// Width×Height as given (even, 16..8192), Duration -1 → 5 s (else 1..60), 24 fps,
// H.264/AAC in MP4 or MOV, an audio track only when GenerateAudio is true (nil means
// false). The prompt (markers removed) is drawn on the frames; first/last-frame images
// are shown full-frame during the first/last second, up to four reference images as
// thumbnails; reference videos and audio are reachability-checked and named in the
// caption ("ref video 1"). CompletionTokens = round(w × h × fps × seconds / 1024) of the
// output as the in-Go MP4/MOV reader measures it (what ffprobe reports, without a process
// start; ffprobe when the reader refuses the file).
//
// # Enhancement
//
// The source (Path, or URL through Config.Fetch, http allowed) is scaled to the short
// side of Resolution (1080p 1080, 2k 1440, 4k 2160, 8k 4320) or ShortSide, keeping the
// aspect; FPS (nil keeps the source's), Bitrate/BitrateLevel and BitDepth go to
// ffmpeg.EnhanceSpec. MP4 output.
//
// # Speech
//
// Synthesize is synchronous: espeak-ng → MP3, idempotent by key (Dir/speech/<id>.mp3).
//
// # Markers
//
// Prompt and speech text: [sandbox:fail], [sandbox:fail=CODE], [sandbox:expire]
// (generation), [sandbox:slow=10s], [sandbox:transient=N]. Enhancement: the source URL's
// ?sandbox=fail, fail:CODE, expire, slow:10s, transient:2 (comma-separated or repeated),
// removed before fetching.
package sandbox
