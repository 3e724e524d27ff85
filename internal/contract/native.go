package contract

import (
	"slices"

	"mediagen/internal/apierr"
)

var nativeMetaFields = []string{"duration", "resolution", "ratio", "generate_audio", "watermark", "client_request_id", "content", "output_format", "return_last_frame"}

// nativeDurations per family. The contract gives 2.5 (-1 or 4–30) and Mini (4–15, no -1
// listed); for Standard and Fast 2.0 it is silent, and they take -1 or 4–15 like the 2.0
// generation they belong to.
func nativeDurations(f Family) durationRange {
	switch f {
	case Family25:
		return durationRange{minusOne: true, lo: minDuration, hi: maxDuration}
	case FamilyMini20:
		return durationRange{lo: minDuration, hi: maxShort}
	}
	return durationRange{minusOne: true, lo: minDuration, hi: maxShort}
}

// nativeResolutions per family; 4k on Standard 2.0 additionally needs Entitlements.Native4K.
func nativeResolutions(f Family) []string {
	switch f {
	case Family25:
		return []string{"480p", "720p", "1080p"}
	case FamilyStandard20:
		return []string{"480p", "720p", "1080p", "4k"}
	}
	return []string{"480p", "720p"}
}

func decodeNative(root object, f Family, e Entitlements) (*VideoRequest, *apierr.Error) {
	top := []string{"model", "prompt", "user", "metadata"}
	if f != Family25 {
		top = append(top, "seed")
	}
	if err := root.checkFields(top, "native generation", func(n string) string { return topHint(RouteNative, n) }); err != nil {
		return nil, err
	}
	req := &VideoRequest{Route: RouteNative}
	var err *apierr.Error
	if req.Model, err = readModel(root); err != nil {
		return nil, err
	}
	if err := readPromptUser(root, req); err != nil {
		return nil, err
	}
	if f != Family25 {
		seed, ok, err := root.integer("seed")
		if err != nil {
			return nil, err
		}
		if ok {
			req.Seed = &seed
		}
	}
	meta, ok, err := readMetadata(root)
	if err != nil {
		return nil, err
	}
	if !ok {
		meta = emptyMeta()
	}
	fields := nativeMetaFields
	if f == Family25 {
		fields = append(slices.Clone(fields), "omni_reference_task_type")
	}
	if err := meta.checkFields(fields, "native generation", func(n string) string { return nativeMetaHint(f, n) }); err != nil {
		return nil, err
	}

	np := &NativeParams{OmniTaskType: TaskAuto}
	if req.Content, err = decodeContent(meta); err != nil {
		return nil, err
	}
	if f == Family25 {
		if np.OmniTaskType, err = readTaskType(meta); err != nil {
			return nil, err
		}
	}
	if np.Mode, err = deriveMode(req.Content, np.OmniTaskType, meta.param("content"), meta.param("omni_reference_task_type")); err != nil {
		return nil, err
	}
	if np.Duration, err = readDuration(meta, nativeDurations(f), np.Mode); err != nil {
		return nil, err
	}
	res, deny, err := nativeResolution(meta, f, e)
	if err != nil {
		return nil, err
	}
	np.Resolution = res
	if np.Ratio, err = readRatio(meta, np.Mode); err != nil {
		return nil, err
	}
	if np.GenerateAudio, err = meta.boolean("generate_audio"); err != nil {
		return nil, err
	}
	if np.Watermark, err = meta.boolean("watermark"); err != nil {
		return nil, err
	}
	format, ok, err := meta.enum("output_format", "mp4", "mov")
	if err != nil {
		return nil, err
	}
	np.OutputFormat = "mp4"
	if ok {
		np.OutputFormat = format
	}
	rlf, err := meta.boolean("return_last_frame")
	if err != nil {
		return nil, err
	}
	np.ReturnLastFrame = rlf != nil && *rlf
	if req.ClientRequestID, err = readClientRequestID(meta); err != nil {
		return nil, err
	}
	if err := requirePrompt(req, np.Mode); err != nil {
		return nil, err
	}
	if deny != nil {
		return nil, deny
	}
	req.Native = np
	return req, nil
}

// nativeResolution returns the resolution (720p when omitted on every family), or a 400 for a
// value the family never renders, or a deferred 403 for a value the tenant's package lacks.
func nativeResolution(meta object, f Family, e Entitlements) (res string, deny, err *apierr.Error) {
	r, ok, err := meta.str("resolution")
	if err != nil {
		return "", nil, err
	}
	if !ok {
		return "720p", nil, nil
	}
	param := meta.param("resolution")
	allowed := nativeResolutions(f)
	if !slices.Contains(allowed, r) {
		if r == "1080p" || r == "4k" {
			return "", nil, invalidf(param, "%s %s is not supported by this model alias; use %s.", param, r, OrList(allowed))
		}
		return "", nil, invalidf(param, "%s must be one of %s.", param, OrList(allowed))
	}
	if r == "4k" && !e.Native4K {
		deny = deniedf(param, "4k output is not enabled for your account on this model alias.")
	}
	return r, deny, nil
}

func nativeMetaHint(f Family, name string) string {
	param := "metadata." + name
	switch {
	case name == "seed" && f == Family25:
		return "seed must not be sent to the 2.5 alias."
	case name == "omni_reference_task_type":
		return param + " is available only on the 2.5 alias."
	case name == "video_url":
		return param + " is not accepted on native generation; put reference videos in metadata.content as reference_video items."
	case name == "tool_version" || name == "resolution_limit":
		return param + " is a standalone enhancement field; it is not available on native generation."
	case in(name, enhancementOnly):
		return param + " is not available on native generation; it belongs to the enhancement and production routes."
	}
	return metadataHint(name)
}
