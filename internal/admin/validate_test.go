package admin

import "testing"

// Names and notes end up in terminals (the CLI's tables), the console and CSV: control
// characters of every kind are refused, C1's included (U+009B is an 8-bit CSI).
func TestCheckTextRefusesEveryControlCharacter(t *testing.T) {
	for _, c := range []struct {
		s  string
		ok bool
	}{
		{"web backend", true},
		{"clé ünïcode 名前", true},
		{"tab\there", false},
		{"esc\x1b[31m", false},
		{"del\x7f", false},
		{"csi\u009b31m", false},
		{"nel\u0085", false},
	} {
		if err := checkText("name", c.s, MaxNameChars, true); (err == nil) != c.ok {
			t.Errorf("checkText(%q): %v, want ok %v", c.s, err, c.ok)
		}
	}
}
