package probe_test

import (
	"context"
	"fmt"
	"os"

	"mediagen/internal/media/probe"
	"mediagen/internal/media/safefetch"
)

// Measure a tenant's remote file through byte ranges, or a stored copy; docs/media.md shows
// this code. (Compiled, not run: it needs a file.)
func Example() {
	ctx := context.Background()
	client := safefetch.New(safefetch.Options{})
	url := "https://media.example.com/clip.mp4"
	res, err := probe.ProbeURL(ctx, client, url, probe.Options{}) // remote
	if err != nil {
		fmt.Println(err)
	}
	file, err := os.Open("clip.mp4")
	if err != nil {
		return
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return
	}
	size := st.Size()
	res, err = probe.ProbeReaderAt(ctx, file, size, probe.Options{}) // stored copy
	if err != nil {
		fmt.Println(err)
	}
	// res.Duration (s), Width, Height, FPS, HasVideo, HasAudio, Brand, Fragmented,
	// DurationSource ("mvhd" | "mehd" | "tracks" | "fragments"), Requests, BytesRead
	fmt.Println(res.Duration, res.Width, res.Height, res.FPS, res.DurationSource)
}
