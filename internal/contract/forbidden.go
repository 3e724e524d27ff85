package contract

import "strings"

// Fields that clients send by habit (from provider schemas, OpenAI-style SDKs or other routes)
// get a message that says what to do instead. All of them are simply unknown fields to the
// contract; the messages only make the 400 actionable.

var callbackFields = []string{"callback", "callback_url", "callbackurl", "callbacks", "webhook", "webhook_url", "notify_url", "notification_url"}

var routingFields = []string{"project", "project_id", "project_name", "projectname", "region", "endpoint", "endpoint_id", "provider", "upstream", "upstream_model", "base_url", "route", "routing", "service_tier"}

var credentialFields = []string{"api_key", "apikey", "access_key", "access_key_id", "accesskey", "secret_key", "secret_access_key", "secretkey", "credentials", "authorization", "token", "ak", "sk"}

var inputDurationFields = []string{"input_duration", "input_durations", "reference_duration", "reference_durations", "video_duration", "video_durations", "source_duration", "input_video_duration", "input_seconds"}

var inlineFields = []string{"data", "base64", "b64", "b64_json", "file", "file_data", "file_id", "upload", "bytes", "image_data", "video_data", "audio_data", "image_base64", "video_base64", "audio_base64"}

// metadataOnly are controls that clients put at the top level by mistake.
var metadataOnly = []string{"duration", "resolution", "ratio", "aspect_ratio", "generate_audio", "watermark", "content", "output_format", "return_last_frame", "omni_reference_task_type", "client_request_id", "fps", "bitrate", "bitrate_level", "scene", "enhance_style", "bit_depth", "video_url", "tool_version", "resolution_limit"}

// enhancementOnly are standalone enhancement controls that native generation does not take.
var enhancementOnly = []string{"fps", "bitrate", "bitrate_level", "scene", "enhance_style", "bit_depth", "video_url", "tool_version", "resolution_limit"}

func in(name string, set []string) bool {
	l := strings.ToLower(name)
	for _, s := range set {
		if s == l {
			return true
		}
	}
	return false
}

// commonHint covers the fields that are forbidden in the same way at any level of any route.
func commonHint(name, param string) string {
	switch {
	case strings.EqualFold(name, "task_type"):
		return param + " is not accepted; to choose an Omni task type use metadata.omni_reference_task_type."
	case in(name, callbackFields):
		return param + " is not accepted: video callbacks are not supported; poll GET /v1/videos/{task_id} instead."
	case in(name, routingFields):
		return param + " is not accepted: routing and project fields are decided by the model alias."
	case in(name, credentialFields):
		return param + " is not accepted: provider credentials must not be sent."
	case in(name, inputDurationFields):
		return param + " is not accepted: the service measures input media itself and does not take supplied input durations."
	}
	return ""
}

// topHint is for unknown top-level fields of every route.
func topHint(r Route, name string) string {
	if msg := commonHint(name, name); msg != "" {
		return msg
	}
	switch {
	case name == "mode" && r == RouteProduction:
		return "Top-level mode is not accepted on the production route: the tier is chosen by the model alias and the generation mode follows metadata.content."
	case name == "mode" && r == RouteEnhancement:
		return "Top-level mode is not accepted: the enhancement route and tier are chosen by the model alias and metadata.tool_version."
	case name == "mode":
		return "Top-level mode is not accepted: the generation mode follows metadata.content and metadata.omni_reference_task_type."
	case name == "seed" && r == RouteProduction:
		return "seed is not supported on the production route."
	case name == "seed" && r == RouteNative:
		return "seed must not be sent to the 2.5 alias."
	case name == "user" && r == RouteEnhancement:
		return name + " is not supported on standalone enhancement."
	case in(name, metadataOnly):
		return name + " belongs under metadata, not at the top level."
	}
	return ""
}

// metadataHint is for unknown metadata fields; the route-specific parts come from the caller.
func metadataHint(name string) string {
	param := "metadata." + name
	if msg := commonHint(name, param); msg != "" {
		return msg
	}
	switch name {
	case "model", "prompt", "user", "seed":
		return param + " is not accepted: " + name + " is a top-level field."
	}
	return ""
}

// itemHint is for unknown fields of a content item or of its image_url/video_url/audio_url.
func itemHint(name, param string) string {
	switch {
	case strings.EqualFold(name, "duration") || in(name, inputDurationFields):
		return param + " is not accepted: the service measures input media itself and does not take supplied input durations."
	case in(name, inlineFields):
		return param + " is not accepted: inline file upload and Base64 are not supported; pass an https URL or asset://<asset_id>."
	}
	return ""
}
