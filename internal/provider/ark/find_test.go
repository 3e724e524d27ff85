package ark_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"mediagen/internal/provider"
	"mediagen/internal/provider/ark"
	"mediagen/internal/provider/ark/arkfake"
)

func fakeClient(t *testing.T, f *arkfake.Server) *ark.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = f.TLS()
	c, err := ark.New(ark.Config{BaseURL: f.Base(), APIKey: "sk-find", HTTP: &http.Client{Transport: tr, Timeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A create carries the task's tag as safety_identifier, and FindGeneration finds the job by
// it through the task list, past the first page; a tag no create carried is not found.
func TestFindGenerationFindsTheJobOfATagThroughTheList(t *testing.T) {
	t.Parallel()
	f := arkfake.Start(arkfake.Config{Key: "sk-find"})
	t.Cleanup(f.Close)
	c := fakeClient(t, f)
	since := time.Now()
	req := func(key string) provider.GenerateRequest {
		return provider.GenerateRequest{IdempotencyKey: key, Model: "seedance-test", Prompt: "p " + key, Resolution: "720p", Ratio: "16:9", Duration: 5}
	}
	want, err := c.SubmitGeneration(t.Context(), req("video_target:gen"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 130 { // newer jobs push the target to the list's second page
		if _, err := c.SubmitGeneration(t.Context(), req("video_"+string(rune('a'+i%26))+time.Now().Format("150405.000000000")+":gen")); err != nil {
			t.Fatal(err)
		}
	}
	got, found, err := c.FindGeneration(t.Context(), req("video_target:gen"), since)
	if err != nil || !found || got != want {
		t.Fatalf("find: %q %v %v, want %q", got, found, err, want)
	}
	if f.JobsFor(ark.Tag("video_target:gen")) != 1 {
		t.Errorf("the target's tag made %d jobs", f.JobsFor(ark.Tag("video_target:gen")))
	}
	if _, found, err := c.FindGeneration(t.Context(), req("video_other:gen"), since); err != nil || found {
		t.Errorf("a tag no create carried: found %v, %v", found, err)
	}
	for _, v := range f.Violations() {
		t.Errorf("wire format: %s", v)
	}
}

// The tag is opaque (no task id reaches Ark) and within Ark's length for the field.
func TestTagIsOpaqueAndShort(t *testing.T) {
	t.Parallel()
	tag := ark.Tag("video_01J9Z:gen")
	if len(tag) > 64 || tag == ark.Tag("video_01J9Z:enh") || tag != ark.Tag("video_01J9Z:gen") {
		t.Errorf("tag %q", tag)
	}
	for _, leak := range []string{"video", "01J9Z", "gen"} {
		if strings.Contains(tag, leak) {
			t.Errorf("tag %q shows %q", tag, leak)
		}
	}
}
