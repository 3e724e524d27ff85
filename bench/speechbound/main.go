// Command speechbound measures the sandbox speech engine against its reservation bound: it
// speaks a corpus with the engine's own path (espeak-ng → MP3, measured with ffprobe, as
// the service bills) and prints, per text, the measured seconds, the bound and their ratio,
// then a summary. A ratio above 1 is a text the bound does not cover: the run exits 1.
//
//	go run ./bench/speechbound [-quick] [-workers 2] [-v]
//
// The corpus: ordinary prose of several lengths up to the 3000-character limit; numbers,
// dates, currency, percentages, abbreviations, URLs; every printable ASCII character alone,
// repeated, spaced, after a digit, after a letter and on its own line; a sample of symbols,
// emoji and other scripts in the same contexts; and seeded random mixtures.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/speech"
)

const prose = `The harbour was quiet in the early morning, and the fishing boats rocked gently against ` +
	`the wooden pier. A few gulls circled above the water, calling to one another while the ` +
	`first light spread slowly over the hills. Maria walked along the shore with her dog, ` +
	`counting the boats as she always did, and wondering whether her brother would return ` +
	`before the weather turned. The radio had promised rain by the afternoon, but the sky ` +
	`was still clear, and the air smelled of salt and seaweed. She stopped at the end of the ` +
	`pier, sat down on an old crate, and watched the tide come in. `

func corpus(quick bool, rng *rand.Rand) []string {
	var texts []string
	for _, n := range []int{40, 200, 1000, 3000} {
		texts = append(texts, strings.TrimSpace(repeatTo(prose, n)))
	}
	texts = append(texts,
		strings.Repeat("1", 3000),
		repeatTo("12345678901234567890 ", 3000),
		repeatTo("1,234,567,891 ", 3000),
		repeatTo("3.14159265358979 ", 3000),
		repeatTo("$1,000,000.99 and €250.50 ", 3000),
		repeatTo("100% ", 3000),
		repeatTo("On 2026-11-23 at 10:45:30, call +1 (555) 010-0199 ext. 42. ", 3000),
		repeatTo("Dr. Smith, Mr. Jones, etc., e.g. 120 km/h, 5 kg, 3rd, 21st, XIV, MMXXVI. ", 3000),
		repeatTo("https://www.example.com/path?a=1&b=2 user@example.org ", 3000),
		repeatTo("!? ... ,,, ;;; --- *** ### @@@ ~~~ ^^^ ", 3000),
		repeatTo("Hello!\n", 3000),
		repeatTo("中文文本测试。日本語のテキスト。한국어 텍스트. Русский текст. النص العربي. हिंदी पाठ. ", 3000),
		repeatTo("😀🎉👍🇺🇸♥★☺✓ ", 3000),
	)
	ascii := make([]string, 0, 95)
	for c := byte(33); c < 127; c++ {
		ascii = append(ascii, string(c))
	}
	others := []string{"§", "©", "®", "™", "€", "£", "¥", "°", "±", "×", "÷", "µ", "¶", "•", "…", "–", "—", "“", "«",
		"¿", "¡", "√", "∑", "∫", "∞", "≈", "≠", "≤", "≥", "←", "→", "♥", "★", "☺", "✓", "😀", "🎉", "👍",
		"中", "日", "한", "ア", "ا", "ب", "ж", "щ", "ह", "क", "ñ", "ß", "ø", "\u200b", "\u00a0",
		// The costliest code points a scan of Unicode planes 0–2 found, one code point at a
		// time: braille ("braille 1 2 3 4 5 6 7 8"), a mathematical letter ("letter 1 d 7 7 7"),
		// Hangul jungseong, a mailbox emoji, "⁉", ideographic zero, CJK extension B.
		"⣿", "\U0001D777", "\u1177", "📫", "⁉", "〇", "𠀀"}
	reps := 30
	if quick {
		reps = 10
	}
	for _, c := range slices.Concat(ascii, others) {
		texts = append(texts, c, strings.Repeat(c, reps), strings.Repeat(c+" ", reps), strings.Repeat("7"+c, reps),
			strings.Repeat("a"+c, reps), strings.Repeat(c+"\n", reps), strings.Repeat("中"+c, reps))
	}
	pool := slices.Concat(ascii, others, []string{" ", " ", " ", " ", "\n"})
	mixes := 200
	if quick {
		mixes = 40
	}
	for i := 0; i < mixes; i++ {
		sub := make([]string, 1+rng.IntN(6))
		for j := range sub {
			sub[j] = pool[rng.IntN(len(pool))]
		}
		var b strings.Builder
		for n := []int{2, 5, 20, 80, 300}[rng.IntN(5)]; n > 0; n-- {
			b.WriteString(sub[rng.IntN(len(sub))])
		}
		texts = append(texts, b.String())
	}
	return texts
}

func repeatTo(s string, n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(s)
	}
	r := []rune(b.String())
	return string(r[:min(len(r), n)])
}

type row struct {
	text             string
	chars            int
	measured, bound  float64
	ratio, secPerChr float64
}

func main() {
	quick := flag.Bool("quick", false, "a smaller corpus")
	workers := flag.Int("workers", 2, "syntheses at once")
	verbose := flag.Bool("v", false, "print every text")
	flag.Parse()
	ctx := context.Background()
	tools := ffmpeg.Tools{}
	if err := tools.Check(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "speechbound needs ffmpeg, ffprobe and espeak-ng (make tools):", err)
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "speechbound-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer os.RemoveAll(dir)
	texts := corpus(*quick, rand.New(rand.NewPCG(1, 2)))
	rows := make([]row, len(texts))
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, *workers)
	for i, t := range texts {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out := filepath.Join(dir, fmt.Sprintf("%d.mp3", i))
			r := row{text: t, chars: utf8.RuneCountInString(t), bound: float64(speech.EspeakBound.Micros(t)) / 1e6}
			if err := tools.Speak(ctx, t, out, ffmpeg.SpeakOptions{Format: "mp3"}); err != nil {
				r.ratio = -1 // nothing to speak (white space only): no audio, no charge
				rows[i] = r
				return
			}
			info, err := tools.Probe(ctx, out)
			if err != nil {
				fmt.Fprintf(os.Stderr, "probe %q: %v\n", t, err)
				os.Exit(2)
			}
			r.measured = info.Duration
			r.ratio = r.measured / r.bound
			r.secPerChr = r.measured / float64(r.chars)
			rows[i] = r
		})
	}
	wg.Wait()
	sort.Slice(rows, func(i, j int) bool { return rows[i].ratio > rows[j].ratio })
	fmt.Printf("speech bound check: %d texts in %s (espeak-ng → MP3, measured with ffprobe)\n", len(texts), time.Since(start).Round(time.Second))
	fmt.Printf("bound: %+v\n\n", speech.EspeakBound)
	show := rows
	if !*verbose {
		show = rows[:min(15, len(rows))]
		fmt.Println("the 15 texts closest to their bound:")
	}
	fmt.Printf("%8s %8s %8s %6s  %s\n", "chars", "measured", "bound", "ratio", "text")
	for _, r := range show {
		fmt.Printf("%8d %8.2f %8.2f %6.3f  %q\n", r.chars, r.measured, r.bound, r.ratio, clip(r.text))
	}
	var ratios []float64
	for _, r := range rows {
		if r.ratio >= 0 {
			ratios = append(ratios, r.ratio)
		}
	}
	sort.Float64s(ratios)
	fmt.Printf("\nmeasured/bound: max %.3f, median %.3f, min %.3f over %d texts\n", ratios[len(ratios)-1], ratios[len(ratios)/2], ratios[0], len(ratios))
	for _, r := range rows {
		if strings.HasPrefix(r.text, "The harbour") {
			fmt.Printf("prose, %d chars: %.2f s measured (%.3f s/char), bound %.2f s: reserved %.1f× the charge\n",
				r.chars, r.measured, r.secPerChr, r.bound, r.bound/r.measured)
		}
	}
	if ratios[len(ratios)-1] > 1 {
		fmt.Println("FAIL: a text measured longer than its bound")
		os.Exit(1)
	}
}

func clip(s string) string {
	r := []rune(s)
	if len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}
