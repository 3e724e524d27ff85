package admin

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"mediagen/internal/apierr"
	"mediagen/internal/idgen"
)

// Bounds on what operators may store. The same for the API and the CLI.
const (
	MaxNameChars = 128
	MaxNoteChars = 1024
	// MaxTokenLifetime bounds --expires: ten years is "never" in practice, and a bound keeps
	// the arithmetic far from overflow.
	MaxTokenLifetimeDays = 3650
	// MaxPageSize bounds one page of a listing.
	MaxPageSize = 100
)

func invalidf(param, format string, args ...any) *apierr.Error {
	return apierr.Invalid(param, fmt.Sprintf(format, args...))
}

// checkText refuses text that is too long, not UTF-8, or holds control characters (which
// would garble listings and terminals).
func checkText(param, s string, max int, required bool) error {
	if required && strings.TrimSpace(s) == "" {
		return invalidf(param, "%s is required and must not be blank.", param)
	}
	if !utf8.ValidString(s) {
		return invalidf(param, "%s must be valid UTF-8.", param)
	}
	if utf8.RuneCountInString(s) > max {
		return invalidf(param, "%s is longer than %d characters.", param, max)
	}
	for _, r := range s {
		// C0, DEL and C1 (U+0080–U+009F: U+009B is a terminal's CSI, as ESC [ is).
		if unicode.IsControl(r) {
			return invalidf(param, "%s must not contain control characters.", param)
		}
	}
	return nil
}

// checkID refuses an id that cannot name anything, so lookups never send it to the store.
func checkID(what, id string) error {
	if !idgen.Plausible(id) {
		return notFound(what, id)
	}
	return nil
}

// pageSize applies the default and the bound of a listing's limit.
func pageSize(param string, n int) (int, error) {
	switch {
	case n == 0:
		return MaxPageSize, nil
	case n < 0 || n > MaxPageSize:
		return 0, invalidf(param, "%s must be between 1 and %d.", param, MaxPageSize)
	}
	return n, nil
}
