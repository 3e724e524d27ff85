package ffmpeg

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Pitch measurement of a voice recording (the sandbox's speech references, docs/sandbox.md).
const (
	pitchRate    = 8000 // Hz: the decoded rate, ample for voice fundamentals (60-400 Hz)
	pitchSeconds = 30   // only the first 30 s are measured
	pitchFrame   = 512  // samples (64 ms), hop of half a frame
	minF0, maxF0 = 60, 400
)

// ErrNoPitch: the recording has no voiced part to measure.
var ErrNoPitch = errors.New("no voiced audio to measure")

// VoicePitch measures the fundamental frequency of a voice recording in Hz: the median over
// its voiced frames of the autocorrelation peak between 60 and 400 Hz, on its first 30 s
// decoded by ffmpeg to mono 8 kHz. A frame is voiced when it carries at least a tenth of the
// loudest frame's energy and its normalized autocorrelation peak is above 0.5.
func (t Tools) VoicePitch(ctx context.Context, in string) (float64, error) {
	ctx, cancel := t.bound(ctx)
	defer cancel()
	var pcm bytes.Buffer
	// WAV, not raw s16le: the tests' lean ffmpeg (scripts/ensure-lean-ffmpeg.sh) builds only
	// the muxers the service uses, and wav is one of them.
	args := append(ffmpegArgs(), "-t", itoa(pitchSeconds), "-i", fileURL(in), "-map", "0:a:0", "-ac", "1", "-ar", itoa(pitchRate),
		"-map_metadata", "-1", "-f", "wav", "-c:a", "pcm_s16le", "pipe:1")
	if err := run(ctx, proc{mem: t.decodeMemory(), tool: "ffmpeg", bin: t.ffmpegBin(), args: args, stdout: &pcm}); err != nil {
		return 0, fmt.Errorf("voice pitch: %w", err)
	}
	data, err := wavData(pcm.Bytes())
	if err != nil {
		return 0, fmt.Errorf("voice pitch: %w", err)
	}
	samples := make([]float64, len(data)/2)
	for i := range samples {
		samples[i] = float64(int16(binary.LittleEndian.Uint16(data[2*i:]))) / 32768
	}
	return Pitch(samples, pitchRate)
}

// wavData is the sample bytes of a RIFF WAVE file written to a pipe: everything after the
// "data" chunk's header (its size field cannot be trusted, as a piped muxer cannot seek back
// to fill it in).
func wavData(b []byte) ([]byte, error) {
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, errors.New("not a WAVE stream")
	}
	for p := 12; p+8 <= len(b); {
		id, size := string(b[p:p+4]), int(binary.LittleEndian.Uint32(b[p+4:p+8]))
		if id == "data" {
			return b[p+8:], nil
		}
		p += 8 + size + size%2
	}
	return nil, errors.New("no data chunk in the WAVE stream")
}

// Pitch is VoicePitch's measure of mono samples at rate Hz.
func Pitch(samples []float64, rate int) (float64, error) {
	type frame struct {
		start  int
		energy float64
	}
	var frames []frame
	loudest := 0.0
	for i := 0; i+pitchFrame <= len(samples); i += pitchFrame / 2 {
		e := 0.0
		for _, v := range samples[i : i+pitchFrame] {
			e += v * v
		}
		frames = append(frames, frame{i, e})
		loudest = max(loudest, e)
	}
	minLag, maxLag := rate/maxF0, rate/minF0
	var f0s []float64
	for _, f := range frames {
		if loudest == 0 || f.energy < loudest/10 {
			continue
		}
		x := samples[f.start : f.start+pitchFrame]
		r := make([]float64, maxLag+2)
		best := 0.0
		for lag := minLag; lag <= maxLag+1 && lag < len(x); lag++ {
			var num, e1, e2 float64
			for i := 0; i+lag < len(x); i++ {
				num += x[i] * x[i+lag]
				e1 += x[i] * x[i]
				e2 += x[i+lag] * x[i+lag]
			}
			if e1 > 0 && e2 > 0 {
				r[lag] = num / math.Sqrt(e1*e2)
			}
			if lag <= maxLag {
				best = max(best, r[lag])
			}
		}
		// The period is the first peak nearly as high as the highest: its multiples
		// correlate as well, and taking them would measure an octave (or more) too low.
		bestLag := 0
		for lag := minLag; lag <= maxLag; lag++ {
			if r[lag] >= 0.9*best && r[lag] >= r[max(lag-1, minLag)] && r[lag] >= r[lag+1] {
				bestLag = lag
				break
			}
		}
		if best > 0.5 && bestLag > 0 {
			f0s = append(f0s, float64(rate)/float64(bestLag))
		}
	}
	if len(f0s) == 0 {
		return 0, ErrNoPitch
	}
	slices.Sort(f0s)
	return f0s[len(f0s)/2], nil
}
