//go:build !linux

package ffmpeg

// limitMemory does nothing here: prlimit(2) is Linux-only, and the service is deployed on
// Linux. The pixel budgets and -max_pixels still bound the decoders.
func limitMemory(int, int64) error { return nil }
