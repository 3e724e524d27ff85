package kling

import (
	"encoding/json"
	"testing"

	"mediagen/internal/provider"
)

// The create bodies carry the reference's fields with their types: duration a string, mode
// from the resolution, aspect_ratio only on text2video, frames as image and image_tail.
func TestCreateBodiesCarryTheReferenceFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  provider.GenerateRequest
		want string
	}{
		{"text at 1080p is pro", provider.GenerateRequest{IdempotencyKey: "video_a:gen", Model: "kling-v2-1", Prompt: "a kite", Resolution: "1080p", Ratio: "1:1", Duration: 10},
			`{"model_name":"kling-v2-1","prompt":"a kite","mode":"pro","aspect_ratio":"1:1","duration":"10","external_task_id":"video_a:gen"}`},
		{"adaptive text is 16:9 and the default duration is left out", provider.GenerateRequest{Model: "kling-v2-1", Prompt: "p", Resolution: "720p", Ratio: "adaptive", Duration: -1},
			`{"model_name":"kling-v2-1","prompt":"p","mode":"std","aspect_ratio":"16:9"}`},
		{"frames are image and image_tail without a ratio", provider.GenerateRequest{Model: "kling-v2-1", Prompt: "p", Resolution: "720p", Ratio: "adaptive", Duration: 5,
			Inputs: []provider.Input{{Type: "image_url", Role: "first_frame", Source: provider.Source{URL: "https://a/1.png"}}, {Type: "image_url", Role: "last_frame", Source: provider.Source{URL: "https://a/2.png"}}}},
			`{"model_name":"kling-v2-1","prompt":"p","image":"https://a/1.png","image_tail":"https://a/2.png","mode":"std","duration":"5"}`},
	}
	for _, tt := range tests {
		b, _ := json.Marshal(request(tt.req))
		if string(b) != tt.want {
			t.Errorf("%s:\n%s\nwant\n%s", tt.name, b, tt.want)
		}
	}
}

func TestExternalIDIsTheKeyOrAShortHash(t *testing.T) {
	t.Parallel()
	if got := ExternalID("video_01J9Z:gen"); got != "video_01J9Z:gen" {
		t.Errorf("plain key: %q", got)
	}
	long := ExternalID("video_" + string(make([]byte, 80)) + ":gen")
	if len(long) > 64 || long != ExternalID("video_"+string(make([]byte, 80))+":gen") {
		t.Errorf("long key: %q", long)
	}
}
