package contract

import (
	"slices"

	"mediagen/internal/apierr"
)

var productionMetaFields = []string{"duration", "resolution", "content", "omni_reference_task_type", "ratio", "generate_audio", "watermark", "fps", "bitrate_level", "bitrate", "return_last_frame", "client_request_id"}

// ProductionResolutions are the final named resolutions of production, in order.
var ProductionResolutions = []string{"1080p", "2k", "4k"}

// productionDurations: omitted, -1, or 4 to 30 under the native mode rules.
var productionDurations = durationRange{minusOne: true, lo: minDuration, hi: maxDuration}

// Common enhancement controls shared by production and standalone enhancement.
var (
	bitrateLevels = []string{"low", "medium", "high"}
	scenes        = []string{"common", "ugc", "short_series", "aigc", "old_film"}
	enhanceStyles = []string{"hd", "natural"}
)

const (
	minFPS, maxFPS         = 15, 120
	minBitrate, maxBitrate = 10, 150000
)

// tierFields are the tier-specific production fields each tier takes.
func tierFields(t Tier) []string {
	switch t {
	case TierStandard:
		return []string{"scene", "enhance_style"}
	case TierPro:
		return []string{"enhance_style", "bit_depth"}
	}
	return nil
}

var tierNames = map[Tier]string{TierLite: "Lite", TierStandard: "Standard", TierPro: "Pro"}

func decodeProduction(root object, t Tier, e Entitlements) (*VideoRequest, *apierr.Error) {
	// Without the package the alias itself is unavailable; nothing in the body can change that.
	if !e.Production {
		return nil, deniedf("model", "The production route is not enabled for your account.")
	}
	if err := root.checkFields([]string{"model", "prompt", "user", "metadata"}, "the production route", func(n string) string { return topHint(RouteProduction, n) }); err != nil {
		return nil, err
	}
	req := &VideoRequest{Route: RouteProduction}
	var err *apierr.Error
	if req.Model, err = readModel(root); err != nil {
		return nil, err
	}
	if err := readPromptUser(root, req); err != nil {
		return nil, err
	}
	meta, ok, err := readMetadata(root)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, invalidf("metadata.resolution", "metadata.resolution is required on the production route: one of %s.", OrList(ProductionResolutions))
	}
	fields := append(slices.Clone(productionMetaFields), tierFields(t)...)
	if err := meta.checkFields(fields, "the production route", func(n string) string { return productionMetaHint(t, n) }); err != nil {
		return nil, err
	}

	pp := &ProductionParams{Tier: t}
	if req.Content, err = decodeContent(meta); err != nil {
		return nil, err
	}
	for _, it := range req.Content {
		pp.HasVideoInput = pp.HasVideoInput || it.Type == TypeVideo
	}
	if pp.OmniTaskType, err = readTaskType(meta); err != nil {
		return nil, err
	}
	if pp.Mode, err = deriveMode(req.Content, pp.OmniTaskType, meta.param("content"), meta.param("omni_reference_task_type")); err != nil {
		return nil, err
	}
	if pp.Duration, err = readDuration(meta, productionDurations, pp.Mode); err != nil {
		return nil, err
	}
	var denied []*apierr.Error
	res, ok, err := meta.enum("resolution", ProductionResolutions...)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, invalidf("metadata.resolution", "metadata.resolution is required on the production route: one of %s.", OrList(ProductionResolutions))
	}
	pp.Resolution = res
	if !e.ProductionResolutions[res] {
		denied = append(denied, deniedf("metadata.resolution", "Production output at %s is not enabled for your account.", res))
	}
	if pp.Ratio, err = readRatio(meta, pp.Mode); err != nil {
		return nil, err
	}
	if pp.GenerateAudio, err = meta.boolean("generate_audio"); err != nil {
		return nil, err
	}
	if pp.Watermark, err = meta.boolean("watermark"); err != nil {
		return nil, err
	}
	ec, err := readEnhanceControls(meta)
	if err != nil {
		return nil, err
	}
	pp.FPS, pp.BitrateLevel, pp.Bitrate, pp.Scene, pp.EnhanceStyle, pp.BitDepth = ec.fps, ec.bitrateLevel, ec.bitrate, ec.scene, ec.enhanceStyle, ec.bitDepth
	rlf, err := meta.boolean("return_last_frame")
	if err != nil {
		return nil, err
	}
	pp.ReturnLastFrame = rlf != nil && *rlf
	if pp.ReturnLastFrame && !e.LastFrame {
		denied = append(denied, deniedf("metadata.return_last_frame", "Returning the last frame is not enabled for your account."))
	}
	if req.ClientRequestID, err = readClientRequestID(meta); err != nil {
		return nil, err
	}
	if err := requirePrompt(req, pp.Mode); err != nil {
		return nil, err
	}
	if len(denied) > 0 {
		return nil, denied[0]
	}
	req.Production = pp
	return req, nil
}

// enhanceControls are the enhancement knobs production and standalone enhancement share.
// Which of scene, enhance_style and bit_depth a request may carry is checked by the caller.
type enhanceControls struct {
	fps          *int
	bitrateLevel string
	bitrate      *int
	scene        string
	enhanceStyle string
	bitDepth     *int
}

func readEnhanceControls(meta object) (enhanceControls, *apierr.Error) {
	var c enhanceControls
	var err *apierr.Error
	if c.fps, err = meta.intIn("fps", minFPS, maxFPS); err != nil {
		return c, err
	}
	if c.bitrateLevel, _, err = meta.enum("bitrate_level", bitrateLevels...); err != nil {
		return c, err
	}
	if c.bitrate, err = meta.intIn("bitrate", minBitrate, maxBitrate); err != nil {
		return c, err
	}
	if c.scene, _, err = meta.enum("scene", scenes...); err != nil {
		return c, err
	}
	if c.enhanceStyle, _, err = meta.enum("enhance_style", enhanceStyles...); err != nil {
		return c, err
	}
	n, ok, err := meta.integer("bit_depth")
	if err != nil {
		return c, err
	}
	if ok {
		if n != 8 && n != 10 && n != 12 && n != 16 {
			return c, invalidf(meta.param("bit_depth"), "%s must be 8, 10, 12 or 16.", meta.param("bit_depth"))
		}
		d := int(n)
		c.bitDepth = &d
	}
	return c, nil
}

func productionMetaHint(t Tier, name string) string {
	param := "metadata." + name
	switch name {
	case "scene", "enhance_style", "bit_depth":
		return param + " is not available on the production " + tierNames[t] + " tier."
	case "video_url":
		return param + " is not accepted on the production route; put source videos in metadata.content as reference_video items."
	case "tool_version":
		return param + " is not accepted on the production route: the tier is chosen by the model alias."
	case "resolution_limit":
		return param + " is not accepted on the production route; use metadata.resolution (" + OrList(ProductionResolutions) + ")."
	case "output_format":
		return param + " is not accepted on the production route: the final video is always MP4."
	case "seed":
		return "seed is not supported on the production route."
	}
	return metadataHint(name)
}
