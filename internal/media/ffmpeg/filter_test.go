package ffmpeg

import "testing"

// Expected values follow the worked example in ffmpeg's filters
// documentation ("Notes on filtergraph escaping"): a ' becomes \\\' and a
// : becomes \\: once both levels are applied.
func TestFilterValueEscapesBothLevels(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"plain/path.ttf", "plain/path.ttf"},
		{"a:b", `a\\:b`},
		{"it's", `it\\\'s`},
		{`back\slash`, `back\\\\slash`},
		{"x,y;z[0]", `x\,y\;z\[0\]`},
		{"two words", `two\\\ words`},
		{"lt(t,1)", `lt(t\,1)`},
		{"100%", "100%"},
	}
	for _, tc := range tests {
		if got := filterValue(tc.in); got != tc.want {
			t.Errorf("filterValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFilterJoinsEscapedOptions(t *testing.T) {
	t.Parallel()
	got := filter("drawtext", "fontfile", "/a b/f.ttf", "x", "(w-text_w)/2")
	want := `drawtext=fontfile=/a\\\ b/f.ttf:x=(w-text_w)/2`
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := filter("null"); got != "null" {
		t.Errorf("filter without options = %q, want null", got)
	}
}
