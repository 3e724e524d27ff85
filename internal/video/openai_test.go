package video

import (
	"errors"
	"strings"
	"testing"

	"mediagen/internal/apierr"
)

func TestIsOpenAIJSONTellsShapesApart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body   string
		openai bool
	}{
		{`{"model":"m","prompt":"p","seconds":"4"}`, true},
		{`{"model":"m","prompt":"p","size":"1280x720"}`, true},
		{`{"model":"m","prompt":"p","input_reference":{}}`, true},
		{`{"model":"m","prompt":"p","seconds":"4","metadata":{}}`, false},
		{`{"model":"m","prompt":"p","metadata":{"duration":4}}`, false},
		{`{"model":"m","prompt":"the size of it","metadata":{}}`, false},
		{`{"model":"m","prompt":"p","metadata":{"size":"1280x720"}}`, false},
		{`{"model":"m","seconds":"4","seconds":"8"}`, false}, // duplicate names: the contract's 400
		{`{"model":"m","\u0073ize":"1280x720"}`, false},      // escaped name: the contract's 400
		{`[{"seconds":"4"}]`, false},
		{`{"seconds":"4"} {}`, false},
		{`not json "size"`, false},
	}
	for _, tt := range tests {
		if got := IsOpenAIJSON([]byte(tt.body)); got != tt.openai {
			t.Errorf("IsOpenAIJSON(%s) = %v, want %v", tt.body, got, tt.openai)
		}
	}
}

func TestOpenAISizesAreExactNativeSizes(t *testing.T) {
	t.Parallel()
	for size, want := range map[string][2]string{"1280x720": {"720p", "16:9"}, "720x1280": {"720p", "9:16"},
		"854x480": {"480p", "16:9"}, "1080x1080": {"1080p", "1:1"}, "3840x2160": {"4k", "16:9"}} {
		if res, ratio, ok := OpenAISize(size); !ok || res != want[0] || ratio != want[1] {
			t.Errorf("OpenAISize(%s) = %s %s %v, want %v", size, res, ratio, ok, want)
		}
	}
	for _, size := range []string{"1024x1792", "1792x1024", "1280x721", "", "1280X720"} {
		if _, _, ok := OpenAISize(size); ok {
			t.Errorf("OpenAISize(%q) mapped", size)
		}
	}
}

// input_reference in JSON is OpenAI's object form: image_url is the first frame by URL,
// file_id is refused (no Files API here) and every other form is a 400 on input_reference.
func TestOpenAIJSONInputReferenceIsTheImageURLObject(t *testing.T) {
	t.Parallel()
	o, err := ParseOpenAIJSON([]byte(`{"model":"m","prompt":"p","input_reference":{"image_url":"https://cdn.example/a.png"}}`))
	if err != nil || !o.HasInputReferenceURL || o.InputReferenceURL != "https://cdn.example/a.png" {
		t.Fatalf("image_url: %+v %v", o, err)
	}
	for _, body := range []string{
		`{"input_reference":{"file_id":"file_1"}}`,
		`{"input_reference":{"file_id":"file_1","image_url":"https://cdn.example/a.png"}}`,
		`{"input_reference":"https://cdn.example/a.png"}`,
		`{"input_reference":{}}`,
		`{"input_reference":{"image_url":""}}`,
		`{"input_reference":{"image_url":7}}`,
		`{"input_reference":{"image_url":"https://cdn.example/a.png","detail":"high"}}`,
		`{"input_reference":null}`,
	} {
		_, err := ParseOpenAIJSON([]byte(body))
		var e *apierr.Error
		if !errors.As(err, &e) || e.Param != "input_reference" {
			t.Errorf("%s: %v, want a 400 on input_reference", body, err)
		}
	}
	if _, err := ParseOpenAIJSON([]byte(`{"input_reference":{"file_id":"file_1"}}`)); !strings.Contains(err.Error(), "file_id is not supported") {
		t.Errorf("file_id message: %v", err)
	}
}
