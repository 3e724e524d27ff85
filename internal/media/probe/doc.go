// Package probe measures an MP4/MOV's duration (and, when present, video
// size, frame rate, audio presence) without downloading it.
//
// ProbeURL reads through safefetch with byte-range requests and a small
// block cache (16 KiB blocks, 1 MiB at most, 64 KiB readahead); ProbeReaderAt
// does the same over a local io.ReaderAt. Both walk the top-level box
// headers themselves, so an mdat of any size costs one 16-byte read, and
// parse the moov with github.com/abema/go-mp4, expanding only
// trak/mdia/minf/stbl and mvex: sample-size and chunk tables are skipped by
// their headers. A moov up to 1 MiB is fetched whole in one request.
//
// Duration:
//   - plain files: mvhd duration / mvhd timescale (what ffprobe reports);
//     when mvhd says 0 or "unknown", the longest track's stts total.
//   - fragmented files (moov/mvex present): mvex/mehd when the muxer wrote
//     one (only the first fragment is then read, for the frame rate);
//     otherwise every moof is read and its trun durations summed per track
//     (tfdt when present), the result being the latest track end minus the
//     earliest track start after edit lists, as ffprobe computes it.
//
// Cost (measured by bench/probe): faststart 1 request/64 KiB; moov at the
// end, whatever the file size, 2 requests and ~70 KiB; fragmented without
// mehd about one 16 KiB request per fragment that is not already cached.
//
// Servers: a 206 with "Content-Range: bytes a-b/total" is required for
// random access. A 200 answer to the first range request (Range ignored) is
// read in full only up to Options.FullReadMax (8 MiB) and rejected with
// ErrNoRanges beyond; a missing Content-Length is fine on 206 answers and
// bounded the same way on 200 answers. The first answer pins the file's
// length and ETag; a later answer with another length, ETag, range or a 200
// fails with ErrUnstable rather than mixing two versions of a file.
//
// Rejected: no ftyp/moov structure or a first box no muxer writes
// (ErrNotMP4), a box that runs past its parent or the file (ErrTruncated),
// a zero, unknown or over-limit duration (ErrBadDuration, default limit 6 h),
// a file over Options.MaxFileSize (ErrTooLarge, default 16 GiB). Every probe
// error also matches safefetch.ErrUnsupportedMedia (ErrTooLarge matches
// safefetch.ErrTooLarge), and PublicMessage gives a tenant-safe sentence.
package probe
