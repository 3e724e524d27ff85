package ffmpeg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Speak limits.
const (
	// MaxSpeakBytes bounds the text: about an hour of speech.
	MaxSpeakBytes = 32 << 10
	MinSpeakWPM   = 80
	MaxSpeakWPM   = 450
)

// ErrEmptyText means there is nothing to speak.
var ErrEmptyText = errors.New("empty text")

// SpeakOptions tune Speak.
type SpeakOptions struct {
	// Voice is an espeak-ng voice such as "en", "en-us", "de", "fr" or
	// "en+f3"; default "en". Voices only change pronunciation: any voice
	// speaks any UTF-8 text.
	Voice string
	// SpeedWPM is words per minute, MinSpeakWPM..MaxSpeakWPM; 0 uses
	// espeak-ng's default of 175.
	SpeedWPM int
	// Pitch is espeak-ng's pitch adjustment, 1..99 (its -p); 0 uses the default of 50.
	Pitch int
	// Format is "mp3" (default: mono 24 kHz CBR 64 kbit/s) or "wav"
	// (PCM s16le mono 24 kHz).
	Format string
}

// voiceName accepts espeak-ng voice names and variants and nothing that could
// be read as an option.
var voiceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_+/-]{0,63}$`)

func (o SpeakOptions) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("speak: %w: %s", ErrInvalidSpec, fmt.Sprintf(format, a...))
	}
	if o.Voice != "" && !voiceName.MatchString(o.Voice) {
		return bad("voice %q is not a voice name", o.Voice)
	}
	if o.Pitch < 0 || o.Pitch > 99 {
		return bad("pitch %d is not 0 to 99", o.Pitch)
	}
	if o.SpeedWPM != 0 && (o.SpeedWPM < MinSpeakWPM || o.SpeedWPM > MaxSpeakWPM) {
		return bad("speed %d wpm outside %d..%d", o.SpeedWPM, MinSpeakWPM, MaxSpeakWPM)
	}
	if o.Format != "" && o.Format != "mp3" && o.Format != "wav" {
		return bad("format %q is neither mp3 nor wav", o.Format)
	}
	return nil
}

// Speak synthesises text with espeak-ng and writes it to out atomically. The
// text goes to espeak-ng on stdin, never in argv, where it could be read as
// an option and would be visible in the process list.
func (t Tools) Speak(ctx context.Context, text, out string, opt SpeakOptions) error {
	if err := opt.validate(); err != nil {
		return err
	}
	text = strings.TrimSpace(strings.ToValidUTF8(text, "\uFFFD"))
	if text == "" {
		return fmt.Errorf("speak: %w", ErrEmptyText)
	}
	if len(text) > MaxSpeakBytes {
		return fmt.Errorf("speak: %w: text is %d bytes, over %d", ErrInvalidSpec, len(text), MaxSpeakBytes)
	}
	ctx, cancel := t.bound(ctx)
	defer cancel()

	dir, err := os.MkdirTemp("", ScratchPrefix+"speak-*")
	if err != nil {
		return fmt.Errorf("speak: %w", err)
	}
	defer os.RemoveAll(dir)
	wav := filepath.Join(dir, "speech.wav")

	args := []string{"-b", "1", "-v", orDefault(opt.Voice, "en"), "-w", wav}
	if opt.SpeedWPM != 0 {
		args = append(args, "-s", itoa(opt.SpeedWPM))
	}
	if opt.Pitch != 0 {
		args = append(args, "-p", itoa(opt.Pitch))
	}
	if err := run(ctx, proc{mem: t.encodeMemory(), tool: "espeak-ng", bin: t.espeakBin(), args: args, stdin: strings.NewReader(text)}); err != nil {
		return fmt.Errorf("speak: %w", err)
	}

	codec := []string{"-c:a", "libmp3lame", "-b:a", "64k", "-id3v2_version", "0", "-f", "mp3"}
	if opt.Format == "wav" {
		codec = []string{"-c:a", "pcm_s16le", "-f", "wav"}
	}
	return writeAtomic(out, func(tmp string) error {
		args := append(ffmpegArgs(), "-i", fileURL(wav), "-map", "0:a:0", "-ac", "1", "-ar", "24000")
		args = append(args, codec...)
		args = append(args, "-map_metadata", "-1", "-fflags", "+bitexact", fileURL(tmp))
		if err := run(ctx, proc{mem: t.encodeMemory(), tool: "ffmpeg", bin: t.ffmpegBin(), args: args}); err != nil {
			return fmt.Errorf("speak: %w", err)
		}
		return nil
	})
}
