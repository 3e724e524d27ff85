package catalog

import (
	"fmt"
	"regexp"
	"slices"

	"mediagen/internal/contract"
)

// Capabilities of kind seedspeech (Volcengine/BytePlus Doubao speech, docs/upstreams.md
// "## Seed Speech"). Its voice-clone API (声音复刻, POST /api/v1/mega_tts/audio/upload,
// https://www.volcengine.com/docs/6561/1305191) trains a voice from audio only: the
// request's audio_url references (up to 3, the contract's limit) are sent as its "audios"
// list. Neither it nor the TTS API (https://www.volcengine.com/docs/6561/79820) takes an
// image, and no public Volcengine/BytePlus speech API makes a voice from a picture, so an
// image_url reference is refused at submission instead of being dropped.

// seedSpeakerID is the form of a voice-clone slot the console sells: S_ and letters/digits.
var seedSpeakerID = regexp.MustCompile(`^S_[A-Za-z0-9_-]{1,62}$`)

func refuseSeedSpeech(req *contract.SpeechRequest) (string, string) {
	if slices.ContainsFunc(req.References, func(r contract.SpeechReference) bool { return r.Type == contract.SpeechRefImage }) {
		return "metadata.references", "metadata.references: this model clones a voice from audio_url references only; an image_url reference is not available."
	}
	return "", ""
}

// checkSeedSpeech: a seedspeech account names its app id and its clone slot; no other kind
// names either.
func (u *UpstreamAccount) checkSeedSpeech() []error {
	var errs []error
	if u.Kind != KindSeedSpeech {
		if u.AppID != "" || u.SpeakerID != "" {
			errs = append(errs, fmt.Errorf("upstream %q: app_id and speaker_id apply to kind seedspeech only", u.Name))
		}
		return errs
	}
	if u.AppID == "" {
		errs = append(errs, fmt.Errorf("upstream %q: app_id is required for kind seedspeech: the console app's id, sent with every call", u.Name))
	}
	if !seedSpeakerID.MatchString(u.SpeakerID) {
		errs = append(errs, fmt.Errorf("upstream %q: speaker_id is required for kind seedspeech: the voice-clone slot (S_…) bought in the console that audio references are trained into", u.Name))
	}
	return errs
}

// RefuseSpeech is the kind's RefuseSpeech, and for a seedspeech account without a preset
// voice, a text-only request: it has no voice to speak one with.
func (u UpstreamAccount) RefuseSpeech(req *contract.SpeechRequest) (param, message string) {
	if param, message = u.Kind.RefuseSpeech(req); param != "" {
		return param, message
	}
	if u.Kind == KindSeedSpeech && u.Voice == "" && len(req.References) == 0 {
		return "metadata.references", "This model speaks with a voice cloned from the request's metadata.references: give 1 to 3 audio_url references."
	}
	return "", ""
}
