package contract

import "math"

// shortSides are the short-side pixels of each named resolution. 2k and 8k are not native
// outputs but are listed so that production and enhancement outputs can be sized the same way.
var shortSides = map[string]int{"480p": 480, "720p": 720, "1080p": 1080, "2k": 1440, "4k": 2160, "8k": 4320}

// ratioParts are width:height of each ratio; adaptive stands in as 16:9 because the real
// ratio is only known once the model has looked at the inputs.
var ratioParts = map[string][2]int{
	"adaptive": {16, 9}, "16:9": {16, 9}, "4:3": {4, 3}, "1:1": {1, 1},
	"3:4": {3, 4}, "9:16": {9, 16}, "21:9": {21, 9},
}

// Dimensions returns the pixel size of a native output: the short side is the resolution's
// (480p 480, 720p 720, 1080p 1080, 4k 2160; also 2k 1440, 8k 4320) and the long side follows
// the ratio, rounded to the nearest even number because H.264 4:2:0 needs even sizes.
//
//	ratio        480p      720p       1080p      4k
//	16:9         854x480   1280x720   1920x1080  3840x2160   (adaptive: same as 16:9)
//	4:3          640x480   960x720    1440x1080  2880x2160
//	1:1          480x480   720x720    1080x1080  2160x2160
//	3:4          480x640   720x960    1080x1440  2160x2880
//	9:16         480x854   720x1280   1080x1920  2160x3840
//	21:9         1120x480  1680x720   2520x1080  5040x2160
//
// Unknown resolutions or ratios give 0, 0.
func Dimensions(resolution, ratio string) (w, h int) {
	short, ok := shortSides[resolution]
	rp, ok2 := ratioParts[ratio]
	if !ok || !ok2 {
		return 0, 0
	}
	long := func(a, b int) int { return 2 * int(math.Round(float64(short*a)/float64(b)/2)) }
	if rp[0] >= rp[1] {
		return long(rp[0], rp[1]), short
	}
	return short, long(rp[1], rp[0])
}

// MaxDimensions is the largest pixel size an output of this resolution can have under ratio:
// the ratio's own size, or for adaptive, whose real ratio the model picks from the inputs,
// the largest of every ratio (21:9). Reservations price this size so that they bound the
// charge whatever the model picks.
func MaxDimensions(resolution, ratio string) (w, h int) {
	if ratio != "adaptive" {
		return Dimensions(resolution, ratio)
	}
	for _, r := range allRatios {
		if rw, rh := Dimensions(resolution, r); rw*rh > w*h {
			w, h = rw, rh
		}
	}
	return w, h
}

// NativeMaxSeconds is the longest output a native family produces: what duration -1 (the
// model's choice) can come to.
func NativeMaxSeconds(f Family) int { return int(nativeDurations(f).hi) }

// ProductionMaxSeconds is the longest output of a production generation (duration -1).
const ProductionMaxSeconds = maxDuration
