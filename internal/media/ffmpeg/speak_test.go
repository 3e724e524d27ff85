package ffmpeg

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func speakTools(t *testing.T) Tools {
	t.Helper()
	tools := testTools(t)
	requireBins(t, "espeak-ng")
	return tools
}

func speak(t *testing.T, tools Tools, text string, opt SpeakOptions) Info {
	t.Helper()
	out := filepath.Join(t.TempDir(), "speech."+orDefault(opt.Format, "mp3"))
	if err := tools.Speak(context.Background(), text, out, opt); err != nil {
		t.Fatalf("Speak(%q): %v", text, err)
	}
	assertOnlyFiles(t, filepath.Dir(out), filepath.Base(out))
	return probe(t, tools, out)
}

func TestSpeakDurationGrowsWithText(t *testing.T) {
	t.Parallel()
	tools := speakTools(t)
	sentence := "Grüße aus Köln, ça va très bien. "
	short := speak(t, tools, sentence, SpeakOptions{})
	long := speak(t, tools, strings.Repeat(sentence, 3), SpeakOptions{})
	t.Logf("1 sentence: %.2f s, 3 sentences: %.2f s", short.Duration, long.Duration)

	if short.Duration <= 0.5 {
		t.Errorf("short duration = %v s, want > 0.5", short.Duration)
	}
	if ratio := long.Duration / short.Duration; ratio < 2 || ratio > 4 {
		t.Errorf("3x text gives %.2fx duration, want about 3x", ratio)
	}
	if short.AudioCodec != "mp3" || short.AudioSampleRate != 24000 || short.AudioChannels != 1 || short.HasVideo {
		t.Errorf("got %s %d Hz %d ch video=%v, want mp3 24000 Hz mono, no video",
			short.AudioCodec, short.AudioSampleRate, short.AudioChannels, short.HasVideo)
	}
	if !near(float64(long.AudioBitRate), 64000, 1000) {
		t.Errorf("bitrate = %d, want 64 kbit/s", long.AudioBitRate)
	}
}

func TestSpeakAcceptsAnyText(t *testing.T) {
	t.Parallel()
	tools := speakTools(t)
	tests := []struct {
		name string
		text string
		opt  SpeakOptions
	}{
		// Would be options if the text went through argv.
		{"text that looks like options", "--help -v xx -w /etc/passwd", SpeakOptions{}},
		{"cyrillic with a russian voice", "Привет, как дела? Всё хорошо.", SpeakOptions{Voice: "ru"}},
		{"chinese", "你好，世界。今天天气很好。", SpeakOptions{Voice: "cmn"}},
		{"ssml-looking markup is read, not obeyed", `<speak><break time="60s"/>hello</speak>`, SpeakOptions{}},
		{"slow wav", "This is slow speech.", SpeakOptions{SpeedWPM: 90, Format: "wav"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info := speak(t, tools, tc.text, tc.opt)
			if info.Duration <= 0.5 || info.Duration > 20 {
				t.Errorf("duration = %v s, want a short spoken clip", info.Duration)
			}
			if tc.opt.Format == "wav" && (info.AudioCodec != "pcm_s16le" || info.AudioSampleRate != 24000) {
				t.Errorf("wav is %s %d Hz, want pcm_s16le 24000 Hz", info.AudioCodec, info.AudioSampleRate)
			}
		})
	}
}

func TestSpeakRejectsBadInput(t *testing.T) {
	t.Parallel()
	tools := speakTools(t)
	tests := []struct {
		name string
		text string
		opt  SpeakOptions
		want error
	}{
		{"empty text", "", SpeakOptions{}, ErrEmptyText},
		{"blank text", " \n\t ", SpeakOptions{}, ErrEmptyText},
		{"voice that is an option", "hi", SpeakOptions{Voice: "-x"}, ErrInvalidSpec},
		{"too slow", "hi", SpeakOptions{SpeedWPM: 10}, ErrInvalidSpec},
		{"unknown format", "hi", SpeakOptions{Format: "ogg"}, ErrInvalidSpec},
		{"too long", strings.Repeat("a", MaxSpeakBytes+1), SpeakOptions{}, ErrInvalidSpec},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			err := tools.Speak(context.Background(), tc.text, filepath.Join(dir, "s.mp3"), tc.opt)
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			assertOnlyFiles(t, dir)
		})
	}
}

func TestSpeakUnknownVoiceBlamesEspeak(t *testing.T) {
	t.Parallel()
	tools := speakTools(t)
	dir := t.TempDir()
	err := tools.Speak(context.Background(), "hello", filepath.Join(dir, "s.mp3"), SpeakOptions{Voice: "zz-nosuch"})
	var te *ToolError
	if !errors.As(err, &te) || te.Tool != "espeak-ng" {
		t.Errorf("err = %v, want a ToolError from espeak-ng", err)
	}
	assertOnlyFiles(t, dir)
}
