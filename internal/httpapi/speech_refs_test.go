package httpapi

import (
	"strings"
	"testing"
)

// Reference URLs are checked at submission through safefetch, with redirects refused: a
// reachable HTTPS reference of the right media family is accepted; a redirect, a 404, a wrong
// content type, an empty answer and a name that resolves to a private address are 400 on the
// item's url, with safefetch's sanitized sentence, and nothing is recorded or charged.
func TestSpeechReferencesCheckedThroughSafefetch(t *testing.T) {
	t.Parallel()
	se := newSpeechEnv(t)
	in := `"input":"Hello with a reference."`
	reject := []struct {
		name, refs, param, msg string
	}{
		{"redirect", ref("audio_url", se.mediaURL("/voice.mp3")) + "," + ref("audio_url", se.mediaURL("/redirect.mp3")), "metadata.references[1].url", "redirects"},
		{"404", ref("audio_url", se.mediaURL("/missing.mp3")), "metadata.references[0].url", "error status"},
		{"html as audio", ref("audio_url", se.mediaURL("/page.mp3")), "metadata.references[0].url", "audio media"},
		{"image as audio", ref("audio_url", se.mediaURL("/face.png")), "metadata.references[0].url", "audio media"},
		{"audio as image", ref("image_url", se.mediaURL("/voice.mp3")), "metadata.references[0].url", "image media"},
		{"image over the pixel budget", ref("image_url", se.mediaURL("/bomb.png")), "metadata.references[0].url", "16000×16000 pixels of more than 8 bits per channel, which count twice (512,000,000), over the limit of 16,777,216 pixels"},
		{"image of no readable size", ref("image_url", se.mediaURL("/face.svg")), "metadata.references[0].url", "pixel size could not be read"},
		{"empty answer", ref("audio_url", se.mediaURL("/empty.mp3")), "metadata.references[0].url", "no content"},
		{"name resolving to a private address", ref("audio_url", "https://evil.example.com/v.mp3"), "metadata.references[0].url", "not allowed"},
		{"name that does not resolve", ref("audio_url", "https://nowhere.example.com/v.mp3"), "metadata.references[0].url", "could not be reached"},
		{"third of three bad", ref("audio_url", se.mediaURL("/voice.mp3")) + "," + ref("audio_url", se.mediaURL("/voice.bin")) + "," + ref("audio_url", se.mediaURL("/missing.mp3")), "metadata.references[2].url", "error status"},
	}
	for _, c := range reject {
		t.Run(c.name, func(t *testing.T) {
			b := decodeErr(t, se.post(se.key, spBody(in, `{"client_request_id":"ref-bad","references":[`+c.refs+`]}`)), 400,
				"invalid_request_error", "invalid_request_error", c.param)
			if !strings.Contains(b.Error.Message, c.msg) || !strings.HasPrefix(b.Error.Message, c.param+" could not be used: ") {
				t.Errorf("message %q, want it to name %s and contain %q", b.Error.Message, c.param, c.msg)
			}
			if strings.Contains(b.Error.Message, "10.0.0.1") || strings.Contains(b.Error.Message, "media.example.com") {
				t.Errorf("message leaks addresses: %q", b.Error.Message)
			}
		})
	}
	if n := se.engine.calls.Load(); n != 0 {
		t.Errorf("engine calls %d", n)
	}
	se.checkUntouched(t)
	// The checks asked for the first bytes only: an image's header may run further (a JPEG's
	// frame header follows its metadata), up to pixels.HeaderReadMax.
	se.mediaM.Lock()
	for _, r := range se.ranges {
		if r != "bytes=0-511" && r != "bytes=0-1048575" {
			t.Errorf("reference fetched with Range %q", r)
		}
	}
	se.mediaM.Unlock()

	// Reachable references of the right family are accepted and passed to the engine.
	accept := []string{
		ref("audio_url", se.mediaURL("/voice.mp3")),
		ref("audio_url", se.mediaURL("/voice.mp3")) + "," + ref("audio_url", se.mediaURL("/voice.bin")) + "," + ref("audio_url", se.mediaURL("/voice.mp3?v=2")),
		ref("image_url", se.mediaURL("/face.png")),
	}
	for i, refs := range accept {
		r := se.post(se.key, spBody(in, `{"references":[`+refs+`]}`))
		decodeSpeech(t, r)
		if n := se.engine.calls.Load(); n != int64(i+1) {
			t.Errorf("engine calls %d after %d accepted", n, i+1)
		}
	}
	if b := se.balance(); b.Used <= 0 || b.Reserved != 0 {
		t.Errorf("balance %+v", b)
	}
}
