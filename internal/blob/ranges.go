package blob

import (
	"io"
	"net/http"
	"strconv"
	"strings"
)

// maxRanges bounds the ranges of one request. Past it the header is ignored and the whole file
// is sent: many tiny ranges make a multipart answer far larger than the request or the file
// part it names, with no use a media player has.
const maxRanges = 32

// normalizeRange rewrites a Range header into the form http.ServeContent handles correctly:
//
//   - "" (serve the whole file) for a header that is not a valid "bytes" range set: another
//     unit, bad syntax, a last-pos before its first-pos, more than maxRanges ranges, or any
//     header on an empty file. RFC 9110 §14.2 lets a server ignore such a header, and
//     ServeContent would answer 416 text/plain.
//   - "bytes=SIZE-" when no range is satisfiable (a first-pos at or past the end, or a
//     zero-length suffix "-0", which ServeContent would answer 206 with an empty body).
//     ServeContent turns it into 416 with Content-Range: bytes */SIZE, after evaluating
//     If-Range, which must still be able to send the whole file instead.
//   - otherwise the satisfiable ranges alone, with positions clamped to the file.
func normalizeRange(header string, size int64) string {
	if header == "" || size <= 0 {
		return ""
	}
	unit, set, ok := strings.Cut(header, "=")
	if !ok || !strings.EqualFold(unit, "bytes") {
		return ""
	}
	var kept []string
	n := 0
	for spec := range strings.SplitSeq(set, ",") {
		spec = strings.Trim(spec, " \t")
		if spec == "" {
			continue // empty list elements are allowed by the list syntax
		}
		if n++; n > maxRanges {
			return ""
		}
		first, last, ok := strings.Cut(spec, "-")
		if !ok || (first == "" && last == "") || !digits(first) || !digits(last) {
			return ""
		}
		if first == "" { // suffix-range: the last N bytes
			switch suffix, big := parsePos(last); {
			case suffix == 0 && !big:
				// "-0" selects nothing.
			case big || suffix > size:
				kept = append(kept, "-"+strconv.FormatInt(size, 10))
			default:
				kept = append(kept, "-"+strconv.FormatInt(suffix, 10))
			}
			continue
		}
		if last != "" && cmpDecimal(last, first) < 0 {
			return ""
		}
		start, big := parsePos(first)
		if big || start >= size {
			continue // starts past the end: selects nothing
		}
		r := strconv.FormatInt(start, 10) + "-"
		if last != "" {
			end, big := parsePos(last)
			if big || end >= size {
				end = size - 1
			}
			r += strconv.FormatInt(end, 10)
		}
		kept = append(kept, r)
	}
	if n == 0 {
		return ""
	}
	if len(kept) == 0 {
		return "bytes=" + strconv.FormatInt(size, 10) + "-"
	}
	return "bytes=" + strings.Join(kept, ",")
}

// digits reports whether s is empty or only ASCII digits.
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parsePos parses a run of digits; big reports a value beyond int64, which is past the end of
// any file.
func parsePos(s string) (v int64, big bool) {
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err != nil
}

// cmpDecimal compares two runs of digits of any length by value.
func cmpDecimal(a, b string) int {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

// errorCatcher passes http.ServeContent's successful answers (200, 206, 304) through and holds
// back its refusals, which it writes as plain text, so that ServeFile can return them as errors
// for the transport's JSON envelope.
type errorCatcher struct {
	http.ResponseWriter
	status int // the refusal ServeContent chose; 0 while none
}

func (c *errorCatcher) WriteHeader(code int) {
	if code >= 400 {
		if c.status == 0 {
			c.status = code
		}
		return
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *errorCatcher) Write(b []byte) (int, error) {
	if c.status != 0 {
		return len(b), nil
	}
	return c.ResponseWriter.Write(b)
}

func (c *errorCatcher) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// ReadFrom lets http.ServeContent's copy of the file reach the writer's own ReadFrom (the
// transport's, with a pooled buffer and a write deadline per piece) rather than io.Copy's
// fresh 32 KiB buffer for every download.
func (c *errorCatcher) ReadFrom(r io.Reader) (int64, error) {
	if c.status != 0 {
		return io.Copy(io.Discard, r)
	}
	return io.Copy(c.ResponseWriter, r)
}
