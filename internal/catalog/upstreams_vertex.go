package catalog

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
)

// Veo on Vertex AI (docs/upstreams.md#vertex-ai; the fields are those of Vertex AI's Veo
// reference, cloud.google.com/vertex-ai/generative-ai/docs/model-reference/veo-video-generation,
// as the official SDK google.golang.org/genai sends them in Vertex AI mode) makes what Veo
// makes on the Gemini API — the same models, durations, ratios and resolutions (the gemini
// tables, upstreams_gemini.go) — with one difference: Vertex AI takes generateAudio, so
// Veo 3 makes a silent video when asked (Veo 2's never have sound).

// reGCPID: a Google Cloud project id or location as Google spells them (6–30 characters for
// a project; a region such as us-central1), safe in a path.
var reGCPID = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

func (u *UpstreamAccount) vertexSet() bool {
	return u.Project != "" || u.Location != "" || u.TokenURL != "" || u.StorageURI != "" || u.StorageURL != ""
}

// checkVertex: a vertex account names its project and location, and an https token_url if
// any; another kind names none of them.
func (u *UpstreamAccount) checkVertex() []error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("upstream %q: "+format, append([]any{u.Name}, args...)...))
	}
	if u.Kind != KindVertex {
		if u.vertexSet() {
			add("project, location, token_url, storage_uri and storage_url apply to kind vertex only")
		}
		return errs
	}
	if !reGCPID.MatchString(u.Project) {
		add("project is required for kind vertex: the Google Cloud project id, such as my-project")
	}
	if !reGCPID.MatchString(u.Location) {
		add("location is required for kind vertex: the region of the models, such as us-central1")
	}
	if u.TokenURL != "" && !httpsURL(u.TokenURL) {
		add("token_url must be an https URL such as https://oauth2.googleapis.com/token (absent: the key file's token_uri)")
	}
	if u.StorageURI != "" && !reGCSURI.MatchString(u.StorageURI) {
		add("storage_uri must be a Cloud Storage prefix such as gs://my-bucket/veo/ (absent: the video comes inline)")
	}
	if u.StorageURL != "" && (!httpsURL(u.StorageURL) || u.StorageURI == "") {
		add("storage_url must be an https URL such as https://storage.googleapis.com, and applies with storage_uri only")
	}
	return errs
}

// reGCSURI: gs://bucket/ or gs://bucket/prefix…, a bucket as Cloud Storage names them.
var reGCSURI = regexp.MustCompile(`^gs://[a-z0-9][a-z0-9._-]{1,220}[a-z0-9](/[^\s#?]*)?$`)

func httpsURL(s string) bool {
	pu, err := url.Parse(s)
	return err == nil && pu.Scheme == "https" && pu.Host != "" && pu.Fragment == "" && pu.RawQuery == ""
}

// refuseVertexModel is what the alias's Veo model cannot make on Vertex AI: gemini's model
// rules, except that Veo 3 may be asked for no sound.
func refuseVertexModel(model string, g genParams) (string, string) {
	m := geminiModelOf(model)
	switch {
	case g.duration != -1 && !slices.Contains(m.seconds, g.duration):
		return "metadata.duration", fmt.Sprintf("metadata.duration %d is not available for this model; it makes %s.", g.duration, m.secondsTxt)
	case g.resolution == "1080p" && !m.fullHD:
		return "metadata.resolution", "metadata.resolution 1080p is not available for this model; use 720p."
	case g.audio != nil && *g.audio && !m.audio:
		return "metadata.generate_audio", "metadata.generate_audio true is not available for this model: its videos have no sound."
	}
	return "", ""
}
