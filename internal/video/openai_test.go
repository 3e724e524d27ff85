package video

import "testing"

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
