package sandbox_test

import (
	"log"
	"os"
	"path/filepath"
	"time"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/provider"
	"mediagen/internal/provider/sandbox"
)

// Start the embedded engine; docs/sandbox.md shows this code. (Compiled, not run: it needs
// ffmpeg and espeak-ng.)
func ExampleNew() {
	dataDir := os.TempDir()
	fetchClient := safefetch.New(safefetch.Options{})
	e, err := sandbox.New(sandbox.Config{
		Dir:           filepath.Join(dataDir, "sandbox"),
		Tools:         ffmpeg.Tools{Preset: "veryfast", Threads: 2},
		Fetch:         fetchClient,     // safefetch.Client; nil: URL inputs fail their job
		Pace:          2 * time.Second, // 0 → 2 s; negative → no minimum
		MaxConcurrent: 1,               // 0 → max(1, NumCPU/2)
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close() // stops renders; they resume on the next process's poll
	// e implements provider.Generator, provider.Enhancer and provider.Synthesizer.
	var (
		_ provider.Generator   = e
		_ provider.Enhancer    = e
		_ provider.Synthesizer = e
	)
}
