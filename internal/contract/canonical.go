package contract

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// Canonical returns the RFC 8785 (JCS) form of a JSON body, so that two requests that differ
// only in member order or whitespace compare equal for idempotency. Integers keep their exact
// digits: JCS would round integers beyond 2^53 through float64, and two different seeds must
// never look like the same payload. Invalid JSON (including duplicate names) is an error.
func Canonical(body []byte) ([]byte, error) {
	v := jsontext.Value(bytes.Clone(body))
	if err := v.Canonicalize(jsontext.CanonicalizeRawInts(false)); err != nil {
		return nil, err
	}
	return v, nil
}
