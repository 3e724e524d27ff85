package contract

import (
	"bytes"
	"testing"
)

func TestCanonical(t *testing.T) {
	same := []struct{ name, a, b string }{
		{"key order", `{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{"whitespace", `{"a":[1,2],"b":{"c":"d"}}`, " {\n \"a\" : [ 1 , 2 ] ,\t\"b\":{ \"c\":\"d\" } } "},
		{"nested key order", `{"metadata":{"duration":5,"ratio":"16:9"},"model":"m"}`, `{"model":"m","metadata":{"ratio":"16:9","duration":5}}`},
		{"string escapes", `{"p":"A\u00e9\/"}`, `{"p":"Aé/"}`},
		{"float spelling", `{"d":5.50}`, `{"d":5.5}`},
	}
	for _, c := range same {
		t.Run(c.name+" is independent", func(t *testing.T) {
			a, err := Canonical([]byte(c.a))
			if err != nil {
				t.Fatal(err)
			}
			b, err := Canonical([]byte(c.b))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Errorf("%s != %s", a, b)
			}
			again, err := Canonical(a)
			if err != nil || !bytes.Equal(again, a) {
				t.Errorf("not stable: %s -> %s", a, again)
			}
		})
	}
	differ := []struct{ name, a, b string }{
		{"different value", `{"a":1}`, `{"a":2}`},
		{"different key", `{"a":1}`, `{"b":1}`},
		{"array order matters", `{"c":[1,2]}`, `{"c":[2,1]}`},
		{"string vs number", `{"a":"1"}`, `{"a":1}`},
		{"large integers keep their digits", `{"seed":9007199254740993}`, `{"seed":9007199254740992}`},
		{"null vs absent", `{"a":null}`, `{}`},
	}
	for _, c := range differ {
		t.Run(c.name+" differs", func(t *testing.T) {
			a, err1 := Canonical([]byte(c.a))
			b, err2 := Canonical([]byte(c.b))
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if bytes.Equal(a, b) {
				t.Errorf("both canonicalize to %s", a)
			}
		})
	}
	for _, bad := range []string{``, `{"a":1`, `{"a":1,"a":2}`, `{} {}`, "{\"a\":\"\xff\"}"} {
		if out, err := Canonical([]byte(bad)); err == nil {
			t.Errorf("Canonical(%q) = %s, want error", bad, out)
		}
	}
	in := []byte(`{"b":1,"a":2}`)
	if _, err := Canonical(in); err != nil || string(in) != `{"b":1,"a":2}` {
		t.Errorf("input modified: %s", in)
	}
}

func TestDimensions(t *testing.T) {
	cases := []struct {
		res, ratio string
		w, h       int
	}{
		{"480p", "16:9", 854, 480}, {"480p", "adaptive", 854, 480}, {"480p", "4:3", 640, 480}, {"480p", "1:1", 480, 480},
		{"480p", "3:4", 480, 640}, {"480p", "9:16", 480, 854}, {"480p", "21:9", 1120, 480},
		{"720p", "16:9", 1280, 720}, {"720p", "adaptive", 1280, 720}, {"720p", "4:3", 960, 720}, {"720p", "1:1", 720, 720},
		{"720p", "3:4", 720, 960}, {"720p", "9:16", 720, 1280}, {"720p", "21:9", 1680, 720},
		{"1080p", "16:9", 1920, 1080}, {"1080p", "4:3", 1440, 1080}, {"1080p", "1:1", 1080, 1080},
		{"1080p", "3:4", 1080, 1440}, {"1080p", "9:16", 1080, 1920}, {"1080p", "21:9", 2520, 1080},
		{"4k", "16:9", 3840, 2160}, {"4k", "4:3", 2880, 2160}, {"4k", "1:1", 2160, 2160},
		{"4k", "9:16", 2160, 3840}, {"4k", "21:9", 5040, 2160},
		{"2k", "16:9", 2560, 1440}, {"8k", "16:9", 7680, 4320},
		{"720P", "16:9", 0, 0}, {"720p", "2:1", 0, 0}, {"", "", 0, 0},
	}
	for _, c := range cases {
		w, h := Dimensions(c.res, c.ratio)
		if w != c.w || h != c.h {
			t.Errorf("Dimensions(%q, %q) = %dx%d, want %dx%d", c.res, c.ratio, w, h, c.w, c.h)
		}
		if w%2 != 0 || h%2 != 0 {
			t.Errorf("Dimensions(%q, %q) = %dx%d is odd", c.res, c.ratio, w, h)
		}
	}
}
