package ffmpeg

import (
	"strings"
	"testing"
)

func TestPrepareText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		cols int
		want string
	}{
		{"short text is unchanged", "hello world", 20, "hello world"},
		{"words wrap at the column limit", "one two three four", 9, "one two\nthree\nfour"},
		{"a word longer than a line is split", "abcdefghij", 4, "abcd\nefgh\nij"},
		{"beyond three lines is cut with an ellipsis", "a b c d e f g h", 3, "a b\nc d\ne…"},
		{"blank lines and spaces collapse", "  a  \n\n\n  b\t\tc ", 10, "a\nb c"},
		{"windows newlines", "a\r\nb\rc", 10, "a\nb\nc"},
		{"control characters are dropped", "a\x00b\x1bc\x7f", 10, "abc"},
		{"invalid utf8 becomes a replacement character", "a\xffb", 10, "a\uFFFDb"},
		{"wide characters count double", "日本語テキスト", 6, "日本語\nテキス\nト"},
		{"combining marks take no room", "e\u0301e\u0301e\u0301", 3, "e\u0301e\u0301e\u0301"},
		{"percent and quotes pass through", `50% 'x' "y" \z`, 20, `50% 'x' "y" \z`},
		{"nothing left", "\x01\x02", 10, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := prepareText(tc.in, tc.cols, maxTextLines); got != tc.want {
				t.Errorf("prepareText(%q, %d) = %q, want %q", tc.in, tc.cols, got, tc.want)
			}
		})
	}
}

func TestPrepareTextBoundsHugeInput(t *testing.T) {
	t.Parallel()
	got := prepareText(strings.Repeat("word ", 100000), 40, maxTextLines)
	if lines := strings.Split(got, "\n"); len(lines) != maxTextLines || !strings.HasSuffix(got, "…") {
		t.Errorf("got %d lines ending %q, want %d lines ending with …", len(lines), got[len(got)-5:], maxTextLines)
	}
	for _, line := range strings.Split(got, "\n") {
		if w := textWidth(line); w > 40 {
			t.Errorf("line %q is %d columns, over 40", line, w)
		}
	}
}
