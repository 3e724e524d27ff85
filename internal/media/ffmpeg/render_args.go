package ffmpeg

import (
	"fmt"
	"strings"
)

// renderCRF is libx264's default quality; the sandbox needs plausible
// files, not archival ones.
const renderCRF = "23"

// renderArgs builds the ffmpeg command line for Render. Inputs, in order:
// the testsrc2 background, the tone (with Audio), then each image.
func (t Tools) renderArgs(s RenderSpec, textFile, tmp string) []string {
	d := num(s.Duration)
	args := append(ffmpegArgs(),
		"-f", "lavfi", "-i", filter("testsrc2", "size", fmt.Sprintf("%dx%d", s.Width, s.Height), "rate", itoa(s.FPS), "duration", d))
	next := 1
	if s.Audio {
		// A quiet tone with a short beep each second: audible, obviously fake.
		args = append(args, "-f", "lavfi", "-i",
			filter("sine", "frequency", "440", "beep_factor", "4", "sample_rate", "48000", "duration", d)+","+filter("volume", "volume", "0.25"))
		next++
	}

	g := graph{cur: "[0:v]"}
	// Images are read with image2pipe: it detects the format from content,
	// so a misnamed file still works, and never treats "%d" in a name as a
	// sequence pattern the way the image2 demuxer would.
	addImage := func(path string) string {
		args = append(append(args, imageInput()...), "-f", "image2pipe", "-i", fileURL(path))
		in := fmt.Sprintf("[%d:v]", next)
		next++
		return in
	}

	boxW, boxH := even(s.Width/6), even(s.Height/6)
	margin := max(2, min(s.Width, s.Height)/40)
	for i, ref := range s.refs() {
		thumb := g.chain(addImage(ref), filter("scale", "w", itoa(boxW), "h", itoa(boxH), "force_original_aspect_ratio", "decrease"), "setsar=1")
		g.overlay(thumb, "x", itoa(margin+i*(boxW+margin)), "y", itoa(margin))
	}

	// Frames at t are shown from t to t+1/fps, so "t < win" covers the first
	// window and "t >= d-win" the last one, each at least one frame long.
	win := min(1.0, s.Duration/2)
	fit := []string{
		filter("scale", "w", itoa(s.Width), "h", itoa(s.Height), "force_original_aspect_ratio", "decrease"),
		filter("pad", "w", itoa(s.Width), "h", itoa(s.Height), "x", "(ow-iw)/2", "y", "(oh-ih)/2", "color", "black"),
		"setsar=1",
	}
	if s.FirstFrame != "" {
		g.overlay(g.chain(addImage(s.FirstFrame), fit...), "enable", "lt(t,"+num(win)+")")
	}
	if s.LastFrame != "" {
		g.overlay(g.chain(addImage(s.LastFrame), fit...), "enable", "gte(t,"+num(s.Duration-win)+")")
	}

	if textFile != "" {
		size := fontSize(s.Width, s.Height)
		g.cur = g.chain(g.cur, filter("drawtext",
			"fontfile", t.fontFile(),
			"textfile", textFile,
			"expansion", "none", // a "%" in the text is text, not a %{…} function
			"fontsize", itoa(size),
			"fontcolor", "white",
			"line_spacing", itoa(size/4),
			"box", "1",
			"boxcolor", "black@0.6",
			"boxborderw", itoa(max(1, size/3)),
			"fix_bounds", "1",
			"x", "(w-text_w)/2",
			"y", "h-text_h-"+itoa(size),
		))
	}
	g.chains = append(g.chains, g.cur+"format=yuv420p[vout]")

	args = append(args, "-filter_complex", strings.Join(g.chains, ";"), "-map", "[vout]")
	if s.Audio {
		args = append(args, "-map", "1:a", "-c:a", "aac", "-b:a", "128k", "-ac", "2", "-ar", "48000")
	} else {
		args = append(args, "-an")
	}
	args = append(args,
		"-c:v", "libx264", "-preset", t.preset(), "-crf", renderCRF, "-pix_fmt", "yuv420p",
		"-t", d,
		"-movflags", "+faststart",
		// No creation time, encoder tags or source metadata: the same spec
		// gives the same bytes.
		"-map_metadata", "-1", "-fflags", "+bitexact",
	)
	args = append(args, t.threadArgs()...)
	return append(args, "-f", s.container(), fileURL(tmp))
}

// graph accumulates -filter_complex chains; cur is the label of the video
// built so far.
type graph struct {
	chains []string
	cur    string
	n      int
}

// chain applies filters to the input label and returns the new label.
func (g *graph) chain(in string, filters ...string) string {
	g.n++
	out := fmt.Sprintf("[g%d]", g.n)
	g.chains = append(g.chains, in+strings.Join(filters, ",")+out)
	return out
}

// overlay draws top over the current video. A still image has one frame;
// eof_action=repeat keeps showing it for the whole clip (or while enabled).
func (g *graph) overlay(top string, kv ...string) {
	g.cur = g.chain(g.cur+top, filter("overlay", append([]string{"eof_action", "repeat"}, kv...)...))
}

func even(n int) int { return max(2, n-n%2) }
