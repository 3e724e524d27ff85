package contract

// Fields that speech clients send by habit (provider schemas, OpenAI-style SDKs) or that the
// contract names as not accepted. They are unknown fields like any other; the messages only
// make the 400 actionable. They apply at every level (top level, metadata and a reference
// item) and are matched case-insensitively.

type speechLevel int

const (
	speechLevelTop speechLevel = iota
	speechLevelMeta
	speechLevelRef
)

var (
	speechVoiceFields    = []string{"voice", "voices", "custom_voice", "voice_id", "voice_type", "voice_name", "voice_preset", "speaker", "speaker_id", "speaker_name"}
	speechCloneFields    = []string{"voice_clone", "clone", "clone_voice", "voice_cloning", "cloning", "clone_id", "clone_audio"}
	speechDeliveryFields = []string{"speed", "speech_rate", "speaking_rate", "rate", "pitch", "volume", "loudness", "emotion", "tone", "style"}
	speechFormatFields   = []string{"response_format", "output_format", "audio_format", "format", "encoding", "sample_rate"}
	speechStreamFields   = []string{"stream", "streaming", "stream_format"}
	speechProjectFields  = []string{"app_id", "appid", "app", "cluster", "resource_id", "resourceid", "namespace"}
	speechTextFields     = []string{"prompt", "text"}
)

// speechHint returns the message for a field the speech contract does not take, or "" for
// the generic unknown-field message. param is the field's path.
func speechHint(level speechLevel, name, param string) string {
	switch {
	case in(name, speechVoiceFields):
		return param + " is not accepted: speech does not take voice or custom-voice selectors; the voice is determined by the model alias and any metadata.references."
	case in(name, speechCloneFields):
		return param + " is not accepted: voice clone controls are not supported on speech."
	case in(name, inlineFields):
		return param + " is not accepted: inline audio or image data and Base64 are not supported; pass a public https URL in metadata.references."
	case in(name, speechFormatFields):
		return param + " is not supported: the speech response is always a JSON object with a temporary download link in url, and the audio format is not selectable."
	case in(name, speechDeliveryFields):
		return param + " is not supported on speech; describe the delivery you want (for example pace, pitch or emotion) in instructions."
	case in(name, speechStreamFields):
		return param + " is not supported: speech is not streamed; the response carries a temporary download link."
	case in(name, speechProjectFields) || in(name, routingFields):
		return param + " is not accepted: provider project and routing fields must not be sent; the model alias decides them."
	case in(name, credentialFields):
		return param + " is not accepted: provider credentials must not be sent."
	case in(name, callbackFields):
		return param + " is not accepted: speech has no callbacks; the response carries the download link."
	}
	switch level {
	case speechLevelTop:
		switch name {
		case "client_request_id", "references":
			return name + " belongs under metadata, not at the top level."
		case "mode":
			return "mode is not accepted: the speech mode follows metadata.references (none for text, audio_url items for audio, one image_url item for image)."
		}
		if in(name, speechTextFields) {
			return param + " is not accepted: send the text to speak in input, and optional delivery guidance in instructions."
		}
	case speechLevelMeta:
		switch name {
		case "model", "input", "instructions":
			return param + " is not accepted: " + name + " is a top-level field."
		}
		if in(name, speechTextFields) {
			return param + " is not accepted: send the text to speak in the top-level input."
		}
	case speechLevelRef:
		switch name {
		case "audio_url", "image_url", "role":
			return param + " is not accepted: a speech reference is { \"type\": \"audio_url\" or \"image_url\", \"url\": \"https://…\" }."
		}
	}
	return ""
}
