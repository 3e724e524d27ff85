// Package blob is the service's own object storage for results (generated videos, last-frame
// images, speech audio, copies of assets) and the temporary signed links that serve them.
//
// # Objects
//
// An object is named by a key, a relative slash path such as
// "videos/video_abc/result.mp4" (see [ValidateKey]). [FS] keeps each object as one file under
// its root directory. Writes are atomic: the content is streamed into a temporary file in the
// target directory, fsynced and renamed over the key, so a reader sees either the old object,
// the new one or none, never a half-written file, and a crash leaves no partial object. Content
// is always streamed; nothing holds a whole object in memory, whatever its size.
//
// The root is owned by the store. Names that start with a dot are reserved: temporary files
// are called ".tmp-*", keys may not contain dot-prefixed segments (so Open never returns a
// temporary file), and the [Sweeper] deletes nothing hidden except stale temporary files. Keep
// the signing key file outside the root, or give it a dot name, or the Sweeper will treat it
// as an object.
//
// # Links
//
// Results are handed to clients as temporary links:
//
//	{publicBase}/v1/files/{key}?expires={unix seconds}&sig={hex HMAC-SHA256}
//
// The signature is HMAC-SHA256 under the store's signing key over key + "\n" + expires (the
// expires value exactly as it appears in the link), so changing the key, the expiry or the
// signature invalidates the link. [FS.ServeFile] checks the signature (in constant time) and
// the expiry before it touches the disk: a bad signature answers 403 invalid_signature, an
// expired link 403 link_expired, a valid link to an object that no longer exists 404
// file_not_found. A Range that selects nothing is 416 range_not_satisfiable (with
// Content-Range: bytes */SIZE); a malformed Range is ignored and the whole file sent
// (docs/http.md).
//
// Links are minted fresh every time a result is read (every GET of a task), never stored. The
// stored result names the key, and the key and the file behind it never change once a task has
// completed; the link is only a time-limited view of it. Because the expiry is part of the
// signed link, a stored link would stop working, while a freshly minted one always works for
// its full lifetime. An S3-compatible store can implement [Store.SignedURL] with presigned
// links so that result bytes never pass through the API process.
//
// Every replica that serves or mints links must use the same signing key. [LoadOrCreateKey]
// makes replicas sharing one data directory agree; replicas on different machines must be
// given the same key through configuration ([ParseKey]).
//
// # Retention
//
// Results are kept for a retention period, not forever. A [Sweeper] walks the store (or some
// prefixes of it) every interval and deletes objects whose modification time (the time they
// were stored) is older than the retention, removes directories left empty, and removes
// temporary files abandoned by crashed writes once they have not been written for an hour.
// Links to a swept object answer 404 file_not_found.
package blob
