package ffmpeg

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"testing"
)

// A pure tone's pitch is its frequency; silence has none.
func TestPitchOfToneIsItsFrequency(t *testing.T) {
	t.Parallel()
	for _, hz := range []float64{90, 150, 240} {
		s := make([]float64, 8000)
		for i := range s {
			s[i] = 0.5 * math.Sin(2*math.Pi*hz*float64(i)/8000)
		}
		got, err := Pitch(s, 8000)
		if err != nil || math.Abs(got-hz) > hz*0.05 {
			t.Errorf("pitch of %v Hz: %v %v", hz, got, err)
		}
	}
	if _, err := Pitch(make([]float64, 8000), 8000); !errors.Is(err, ErrNoPitch) {
		t.Errorf("silence: %v", err)
	}
}

// espeak-ng speaking at a low and at a high pitch measures low and high.
func TestVoicePitchFollowsEspeakPitch(t *testing.T) {
	t.Parallel()
	tools := speakTools(t)
	dir := t.TempDir()
	var got [2]float64
	for i, p := range []int{10, 90} {
		out := filepath.Join(dir, itoa(p)+".mp3")
		if err := tools.Speak(context.Background(), "The quick brown fox jumps over the lazy dog.", out, SpeakOptions{Pitch: p}); err != nil {
			t.Fatal(err)
		}
		f0, err := tools.VoicePitch(context.Background(), out)
		if err != nil {
			t.Fatal(err)
		}
		got[i] = f0
	}
	if got[0] >= got[1] || got[0] < 60 || got[1] > 400 {
		t.Errorf("pitch 10 measured %.0f Hz, pitch 90 %.0f Hz", got[0], got[1])
	}
	t.Logf("espeak pitch 10: %.0f Hz, pitch 90: %.0f Hz", got[0], got[1])
}
