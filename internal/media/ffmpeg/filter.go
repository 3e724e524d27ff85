package ffmpeg

import (
	"strconv"
	"strings"
)

// fileURL makes ffmpeg treat path as a plain local file. Without the prefix
// a name like "concat:a|b" or "http://…" would select another protocol.
func fileURL(path string) string { return "file:" + path }

// filterValue escapes one option value of a filter inside a filtergraph
// (-vf, -filter_complex). ffmpeg unescapes twice: the graph parser splits on
// [],; and the filter's option parser splits on ':'; both treat \ and ' as
// quoting and trim unescaped blanks. So the value is escaped for the option
// level first and the result again for the graph level.
func filterValue(v string) string {
	return backslashEscape(backslashEscape(v, `\':`), `\'[],;`)
}

func backslashEscape(s, special string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(special, r) || strings.ContainsRune(" \t\n\r", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// filter renders "name=k1=v1:k2=v2" with every value escaped. kv holds
// key/value pairs; keys are our own constants and never need escaping.
func filter(name string, kv ...string) string {
	if len(kv) == 0 {
		return name
	}
	parts := make([]string, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		parts = append(parts, kv[i]+"="+filterValue(kv[i+1]))
	}
	return name + "=" + strings.Join(parts, ":")
}

// num formats a number for ffmpeg without exponent notation, which some
// option parsers reject.
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func itoa(n int) string { return strconv.Itoa(n) }
