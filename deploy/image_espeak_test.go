package deploy_test

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
)

// lettersPerScript is how many letters of each Unicode script the dictionary test speaks,
// spread over the script's letters: enough to reach the alphabet espeak-ng switches language
// for within a script (Georgian's mkhedruli after its asomtavruli capitals, Hangul jamo and
// syllables), few enough that espeak-ng reads the text in seconds.
const lettersPerScript = 10

// espeakWait bounds one espeak-ng run in the image: seconds on an idle machine, a minute or two
// on the shared 2-core development machine at a load average of 30.
const espeakWait = 5 * time.Minute

// The image keeps only the espeak-ng dictionaries the service's voice reads (Dockerfile, stage
// espeak): en, and the languages espeak-ng switches to for words in some other scripts. Speaking
// letters of every Unicode script with the voices the service uses (en, and the variants the
// sandbox picks from an image reference) must open no dictionary the image left out — espeak-ng
// would otherwise say nothing for those words, and say so on its standard error. It translates
// only (-q): the dictionaries are opened while translating, and no audio is made. The variants
// change the voice, not the language, so they speak a short text: their files are there.
func TestImageHasEveryDictionaryTheServiceVoiceReads(t *testing.T) {
	image := needImage(t)
	for _, c := range []struct{ voice, text string }{
		{"en", everyScript(lettersPerScript)},
		{"en+f3", "Your order has shipped."},
		{"en+m3", "Your order has shipped."},
	} {
		voice := c.voice
		ctx, cancel := context.WithTimeout(context.Background(), espeakWait)
		cmd := exec.CommandContext(ctx, "docker", "run", "--rm", "-i", "--read-only", "--network", "none",
			"--entrypoint", "espeak-ng", image, "-q", "-v", voice)
		cmd.Stdin = strings.NewReader(c.text)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("espeak-ng -v %s in the image: %v\n%s", voice, err, stderr.Bytes())
		}
		// Only the dictionary lines count: Debian's full espeak-ng also says "No envelope" for
		// two of these letters.
		var missing []string
		for line := range strings.Lines(stderr.String()) {
			if strings.Contains(line, "dictionary") {
				missing = append(missing, strings.TrimSpace(line))
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			t.Errorf("espeak-ng -v %s in the image lacks dictionaries its words switch to:\n%s", voice, strings.Join(slices.Compact(missing), "\n"))
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
