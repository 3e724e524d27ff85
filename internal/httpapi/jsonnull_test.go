package httpapi

import (
	stdjson "encoding/json"
	"testing"
)

// hasJSONNull reports whether body, a JSON document, holds a null anywhere. Searching the
// text for "null" is not the same: a random id such as speech_…anulle contains it.
func hasJSONNull(body []byte) bool {
	var v any
	if stdjson.Unmarshal(body, &v) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case nil:
			return true
		case map[string]any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

func TestHasJSONNullFindsValuesNotText(t *testing.T) {
	for body, want := range map[string]bool{
		`{"id":"speech_xanulle"}`: false,
		`{"a":null}`:              true,
		`{"a":[1,{"b":null}]}`:    true,
		`{"a":"null"}`:            false,
	} {
		if got := hasJSONNull([]byte(body)); got != want {
			t.Errorf("hasJSONNull(%s) = %v, want %v", body, got, want)
		}
	}
}
