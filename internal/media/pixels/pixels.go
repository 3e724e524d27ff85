// Package pixels holds the service's pixel budgets and reads an image's size from its header,
// so that an image is refused before anything decodes it.
//
// A compressed image costs what its pixels cost, not what its file weighs: an all-black
// 16000×16000 PNG is 746 KB on the wire and 768 MB once decoded (ffmpeg peaked at 870 MB
// resident); the same canvas in 16-bit RGBA is 1.99 MB and 2 GB decoded. Every image the
// service accepts or fetches is therefore measured here first (ReadSize reads the header
// only, never the pixel data) and refused over its budget (CheckImage, CheckVideoFrame);
// the decoders are the second wall (ffmpeg's -max_pixels, set from the same constants, and a
// memory limit on every media child: internal/media/ffmpeg).
package pixels

import (
	"errors"
	"fmt"
	"strconv"
)

// Budgets. docs/limits.md ("Media budgets") says why each number.
const (
	// MaxImagePixels bounds an image's width × height: 4096 × 4096, 16.8 megapixels. The
	// largest frame the contract generates is 4K UHD, 3840 × 2160 = 8.3 megapixels; twice
	// that holds a 4K frame at every ratio the contract names (21:9 at 4K is about 10.9
	// megapixels) and a 12-megapixel phone photo as taken, and an image larger than the
	// output adds nothing to it. Decoded by ffmpeg and fitted to a 4K frame, an image at the
	// budget peaks at 170 MB resident in 8-bit RGBA and 237 MB in 16-bit RGBA, the costliest
	// PNG (bench/imagebomb): under the 300 MB one request may cost.
	MaxImagePixels = 4096 * 4096
	// MaxVideoFramePixels bounds a video's frame: 8192 × 4320, DCI 8K, 35.4 megapixels. The
	// largest output of the contract is 8K enhancement (a short side of 4320), and a source
	// larger than the largest output only costs more to scale down.
	MaxVideoFramePixels = 8192 * 4320
)

// ErrOverBudget is matched (errors.Is) by every *OverBudgetError.
var ErrOverBudget = errors.New("pixels: over the pixel budget")

// OverBudgetError is an image or video frame larger than its budget. Its Error is meant for
// clients: it states the size found and the budget, nothing else.
type OverBudgetError struct {
	What          string // "image" or "video frame"
	Width, Height int
	Budget        int64 // pixels
	// Deep: samples of more than 8 bits, which count twice (Size.Check).
	Deep bool
}

func (e *OverBudgetError) Error() string {
	px := max(int64(e.Width)*int64(e.Height), 0)
	example := "4096×4096"
	if e.Budget == MaxVideoFramePixels {
		example = "8192×4320"
	}
	if e.Deep {
		return fmt.Sprintf("the %s is %d×%d pixels of more than 8 bits per channel, which count twice (%s), over the limit of %s pixels (%s megapixels, for example %s at 8 bits or 2896×2896 at 16 bits)",
			e.What, e.Width, e.Height, thousands(2*px), thousands(e.Budget), megapixels(e.Budget), example)
	}
	return fmt.Sprintf("the %s is %d×%d pixels (%s), over the limit of %s pixels (%s megapixels, for example %s)",
		e.What, e.Width, e.Height, thousands(px), thousands(e.Budget), megapixels(e.Budget), example)
}

func (e *OverBudgetError) Is(target error) bool { return target == ErrOverBudget }

// CheckImage refuses an image of w × h over MaxImagePixels, its samples of 8 bits at most
// (Size.Check weighs deeper ones).
func CheckImage(w, h int) error { return check("image", w, h, MaxImagePixels) }

// CheckVideoFrame refuses a video frame of w × h over MaxVideoFramePixels.
func CheckVideoFrame(w, h int) error { return check("video frame", w, h, MaxVideoFramePixels) }

func check(what string, w, h int, budget int64) error {
	if w < 0 || h < 0 || int64(w)*int64(h) > budget {
		return &OverBudgetError{What: what, Width: w, Height: h, Budget: budget}
	}
	return nil
}

func megapixels(px int64) string {
	return strconv.FormatFloat(float64(px)/1e6, 'f', 1, 64)
}

// thousands writes n with commas: 16,777,216.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
