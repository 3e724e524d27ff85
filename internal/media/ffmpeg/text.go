package ffmpeg

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// maxTextLines keeps the caption box to the lower part of the frame.
	maxTextLines = 3
	// maxTextRunes bounds the work on huge prompts; far more than fits.
	maxTextRunes = 2000
	// glyphWidth is DejaVu Sans' average advance as a fraction of the font
	// size, a little generous so that estimated lines rarely overflow.
	glyphWidth = 0.6
)

// fontSize picks a caption size readable on small frames and not dominating
// large ones.
func fontSize(width, height int) int {
	return max(10, min(width, height)/16)
}

// captionColumns is how many narrow glyphs fit in 90% of the frame width.
func captionColumns(width, size int) int {
	return max(8, int(0.9*float64(width)/(glyphWidth*float64(size))))
}

// prepareText turns user text into at most maxLines lines of at most cols
// columns for drawtext: invalid UTF-8 replaced, control characters dropped
// (drawtext would draw them as boxes), words wrapped, and the rest cut with
// an ellipsis.
func prepareText(s string, cols, maxLines int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) > maxTextRunes {
		s = string([]rune(s)[:maxTextRunes])
	}
	s = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\t", " ").Replace(s)
	s = strings.Map(func(r rune) rune {
		if r != '\n' && unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)

	var lines []string
	for _, para := range strings.Split(s, "\n") {
		lines = append(lines, wrapWords(strings.Fields(para), cols)...)
	}
	if len(lines) > maxLines {
		lines = lines[:maxLines]
		lines[maxLines-1] = strings.TrimRight(cutToWidth(lines[maxLines-1], cols-1), " ") + "…"
	}
	return strings.Join(lines, "\n")
}

// wrapWords fills lines greedily, splitting words longer than a line.
func wrapWords(words []string, cols int) []string {
	var lines []string
	var cur strings.Builder
	curW := 0
	flush := func() {
		if curW > 0 {
			lines = append(lines, cur.String())
		}
		cur.Reset()
		curW = 0
	}
	for _, w := range words {
		ww := textWidth(w)
		for ww > cols {
			flush()
			head := cutToWidth(w, cols)
			lines = append(lines, head)
			w = w[len(head):]
			ww = textWidth(w)
		}
		if curW > 0 && curW+1+ww > cols {
			flush()
		}
		if curW > 0 {
			cur.WriteByte(' ')
			curW++
		}
		cur.WriteString(w)
		curW += ww
	}
	flush()
	return lines
}

// cutToWidth returns the longest prefix of s no wider than cols (at least
// one rune, so that wrapping always advances).
func cutToWidth(s string, cols int) string {
	w := 0
	for i, r := range s {
		rw := runeWidth(r)
		if w+rw > cols && i > 0 {
			return s[:i]
		}
		w += rw
	}
	return s
}

func textWidth(s string) int {
	w := 0
	for _, r := range s {
		w += runeWidth(r)
	}
	return w
}

// runeWidth approximates a glyph's advance in narrow columns: ideographs and
// kana are about twice as wide as Latin letters, combining marks take none.
func runeWidth(r rune) int {
	switch {
	case unicode.Is(unicode.Mn, r):
		return 0
	case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul),
		r >= 0xFF01 && r <= 0xFF60: // fullwidth forms
		return 2
	}
	return 1
}
