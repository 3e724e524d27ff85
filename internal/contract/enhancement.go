package contract

import (
	"math"
	"slices"

	"mediagen/internal/apierr"
)

var enhancementMetaFields = []string{"video_url", "duration", "tool_version", "resolution", "resolution_limit", "fps", "bitrate_level", "bitrate", "scene", "enhance_style", "bit_depth", "client_request_id"}

// MaxEnhanceSourceSeconds bounds the declared source duration. The contract only asks for a
// finite positive number; the cap keeps the reservation arithmetic far from overflow.
const MaxEnhanceSourceSeconds = 86400

const minResolutionLimit = 128

// enhanceLimitMax is the largest resolution_limit per alias route.
func enhanceLimitMax(r EnhRoute) int64 {
	if r == EnhLite {
		return 2160
	}
	return 4320
}

// bandOfLimit maps a short-side pixel limit to its billing band.
func bandOfLimit(limit int) string {
	switch {
	case limit <= 720:
		return "720p"
	case limit <= 1080:
		return "1080p"
	case limit <= 1440:
		return "2k"
	case limit <= 2160:
		return "4k"
	}
	return "8k"
}

func decodeEnhancement(root object, r EnhRoute, e Entitlements) (*VideoRequest, *apierr.Error) {
	// prompt is a legacy field that the contract accepts with any value and ignores.
	if err := root.checkFields([]string{"model", "metadata", "prompt"}, "standalone enhancement", func(n string) string { return topHint(RouteEnhancement, n) }); err != nil {
		return nil, err
	}
	req := &VideoRequest{Route: RouteEnhancement}
	var err *apierr.Error
	if req.Model, err = readModel(root); err != nil {
		return nil, err
	}
	meta, ok, err := readMetadata(root)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, invalidf("metadata", "metadata is required on standalone enhancement: it carries video_url, duration and resolution or resolution_limit.")
	}
	if err := meta.checkFields(enhancementMetaFields, "standalone enhancement", enhancementMetaHint); err != nil {
		return nil, err
	}

	ep := &EnhancementParams{}
	if ep.ToolVersion, err = readToolVersion(meta, r); err != nil {
		return nil, err
	}
	if err := checkEnhanceTierFields(meta, r, ep.ToolVersion); err != nil {
		return nil, err
	}
	if ep.VideoURL, err = readSourceURL(meta); err != nil {
		return nil, err
	}
	if ep.Duration, err = readSourceDuration(meta); err != nil {
		return nil, err
	}
	deny, err := readSelector(meta, r, e, ep)
	if err != nil {
		return nil, err
	}
	ec, err := readEnhanceControls(meta)
	if err != nil {
		return nil, err
	}
	ep.FPS, ep.BitrateLevel, ep.Bitrate, ep.Scene, ep.EnhanceStyle, ep.BitDepth = ec.fps, ec.bitrateLevel, ec.bitrate, ec.scene, ec.enhanceStyle, ec.bitDepth
	if req.ClientRequestID, err = readClientRequestID(meta); err != nil {
		return nil, err
	}
	if deny != nil {
		return nil, deny
	}
	req.Enhancement = ep
	return req, nil
}

// readToolVersion: Lite takes no tool_version at all (not even "fast"); the Standard alias
// takes standard (the default) or professional.
func readToolVersion(meta object, r EnhRoute) (string, *apierr.Error) {
	param := meta.param("tool_version")
	if r == EnhLite {
		if meta.has("tool_version") {
			return "", invalidf(param, "%s must be omitted for the Lite enhancement alias (never send fast); the route is chosen by the model alias.", param)
		}
		return "", nil
	}
	v, ok, err := meta.str("tool_version")
	if err != nil {
		return "", err
	}
	if !ok {
		return ToolStandard, nil
	}
	if v != ToolStandard && v != ToolProfessional {
		return "", invalidf(param, "%s must be standard or professional on this alias.", param)
	}
	return v, nil
}

// checkEnhanceTierFields rejects controls that the effective tier does not take, before their
// values are looked at: the field itself is the problem.
func checkEnhanceTierFields(meta object, r EnhRoute, tool string) *apierr.Error {
	var forbidden []string
	var why string
	switch {
	case r == EnhLite:
		forbidden, why = []string{"scene", "enhance_style", "bit_depth"}, "the Lite enhancement alias"
	case tool == ToolProfessional:
		forbidden, why = []string{"scene"}, "tool_version professional"
	default:
		forbidden, why = []string{"bit_depth"}, "tool_version standard; it needs tool_version professional"
	}
	// Report in the order the client sent the fields.
	for _, m := range meta.n.members {
		if slices.Contains(forbidden, m.name) {
			return invalidf(meta.param(m.name), "%s is not available with %s.", meta.param(m.name), why)
		}
	}
	return nil
}

func readSourceURL(meta object) (string, *apierr.Error) {
	u, ok, err := meta.str("video_url")
	if err != nil {
		return "", err
	}
	if !ok {
		return "", invalidf(meta.param("video_url"), "%s is required: a public direct http(s) URL of the source video.", meta.param("video_url"))
	}
	return u, checkVideoSourceURL(meta.param("video_url"), u)
}

func readSourceDuration(meta object) (float64, *apierr.Error) {
	param := meta.param("duration")
	d, ok, err := meta.number("duration")
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, invalidf(param, "%s is required: the source duration in seconds.", param)
	}
	if math.IsNaN(d) || d <= 0 || d > MaxEnhanceSourceSeconds {
		return 0, invalidf(param, "%s must be a positive number of seconds, at most %d.", param, MaxEnhanceSourceSeconds)
	}
	return d, nil
}

// enhancementResolutions are the named resolutions of an alias route: 8k on Standard only.
func enhancementResolutions(r EnhRoute) []string {
	allowed := []string{"1080p", "2k", "4k"}
	if r == EnhStandard {
		allowed = append(allowed, "8k")
	}
	return allowed
}

// readSelector reads exactly one of resolution and resolution_limit and sets the band. The 8k
// band, by name or by a limit above 2160, needs Entitlements.Enhance8K (a deferred 403).
func readSelector(meta object, r EnhRoute, e Entitlements, ep *EnhancementParams) (deny, err *apierr.Error) {
	rp, lp := meta.param("resolution"), meta.param("resolution_limit")
	res, hasRes, err := meta.str("resolution")
	if err != nil {
		return nil, err
	}
	limit, hasLimit, err := meta.integer("resolution_limit")
	if err != nil {
		return nil, err
	}
	switch {
	case hasRes && hasLimit:
		return nil, invalidf(lp, "Send exactly one of %s and %s, not both.", rp, lp)
	case !hasRes && !hasLimit:
		return nil, invalidf(rp, "One of %s and %s is required.", rp, lp)
	case hasRes:
		allowed := enhancementResolutions(r)
		switch {
		case res == "8k" && r == EnhLite:
			return nil, invalidf(rp, "%s 8k is not available on the Lite enhancement alias; use %s.", rp, OrList(allowed))
		case isLowBandName(res):
			return nil, invalidf(rp, "%s does not accept %q: the lowest named resolution is 1080p, and up-to-720p is a billing band only. For output up to 720p use %s (for example 720).", rp, res, lp)
		case !slices.Contains(allowed, res):
			return nil, invalidf(rp, "%s must be one of %s.", rp, OrList(allowed))
		}
		ep.Resolution, ep.Band = res, res
	default:
		if limit < minResolutionLimit || limit > enhanceLimitMax(r) {
			return nil, invalidf(lp, "%s must be an integer from %d to %d on this alias.", lp, minResolutionLimit, enhanceLimitMax(r))
		}
		ep.ResolutionLimit = int(limit)
		ep.Band = bandOfLimit(int(limit))
	}
	if ep.Band == "8k" && !e.Enhance8K {
		param := rp
		if hasLimit {
			param = lp
		}
		return deniedf(param, "The 8k enhancement band is not enabled for your account."), nil
	}
	return nil, nil
}

// isLowBandName recognises the names clients use for the lowest band, which is reachable only
// through resolution_limit.
func isLowBandName(s string) bool {
	switch s {
	case "720p", "lte_720p", "up-to-720p", "up_to_720p", "480p", "360p", "540p", "576p":
		return true
	}
	return false
}

func enhancementMetaHint(name string) string {
	param := "metadata." + name
	switch name {
	case "content":
		return param + " is not accepted on standalone enhancement; pass the source video in metadata.video_url."
	case "ratio", "generate_audio", "watermark", "output_format", "return_last_frame", "omni_reference_task_type":
		return param + " is not accepted on standalone enhancement."
	}
	return metadataHint(name)
}
