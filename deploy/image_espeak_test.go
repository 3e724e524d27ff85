package deploy_test

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unicode"
)

// lettersPerScript is how many letters of each Unicode script the dictionary test speaks,
// spread over the script's code points: enough to reach each alphabet espeak-ng switches
// language for within a script (Hangul jamo and syllables, Devanagari's extensions), few
// enough that espeak-ng reads the text in seconds.
const lettersPerScript = 40

// The image keeps only the espeak-ng dictionaries the service's voice reads (Dockerfile, stage
// espeak): en, and the languages espeak-ng switches to for words in some other scripts. Speaking
// letters of every Unicode script with the voices the service uses (en, and the variants the
// sandbox picks from an image reference) must open no dictionary the image left out — espeak-ng
// would otherwise say nothing for those words, and say so on its standard error. It translates
// only (-q): the dictionaries are opened while translating, and no audio is made.
func TestImageHasEveryDictionaryTheServiceVoiceReads(t *testing.T) {
	image := needImage(t)
	text := everyScript(lettersPerScript)
	for _, voice := range []string{"en", "en+f3", "en+m3"} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "docker", "run", "--rm", "-i", "--read-only", "--network", "none",
			"--entrypoint", "espeak-ng", image, "-q", "-v", voice)
		cmd.Stdin = strings.NewReader(text)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("espeak-ng -v %s in the image: %v\n%s", voice, err, stderr.Bytes())
		}
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			lines := strings.SplitN(msg, "\n", 6)
			t.Errorf("espeak-ng -v %s in the image over letters of every script wrote to its standard error (a dictionary the image lacks?):\n%s",
				voice, strings.Join(lines[:min(len(lines), 5)], "\n"))
		}
	}
}

// everyScript is n letters of each Unicode script (fewer where it has fewer), taken evenly over
// its letters, each doubled into a word of its own.
func everyScript(n int) string {
	var b strings.Builder
	for _, table := range unicode.Scripts {
		var letters []rune
		for _, r16 := range table.R16 {
			for r := rune(r16.Lo); r <= rune(r16.Hi); r += rune(r16.Stride) {
				if unicode.IsLetter(r) {
					letters = append(letters, r)
				}
			}
		}
		for _, r32 := range table.R32 {
			for r := rune(r32.Lo); r <= rune(r32.Hi); r += rune(r32.Stride) {
				if unicode.IsLetter(r) {
					letters = append(letters, r)
				}
			}
		}
		step := len(letters)/n + 1
		for i := 0; i < len(letters); i += step {
			b.WriteRune(letters[i])
			b.WriteRune(letters[i])
			b.WriteByte(' ')
		}
		b.WriteByte('\n')
	}
	return b.String()
}
