package contract

import "testing"

func TestProductionContract(t *testing.T) { runTable(t, productionCases()) }

func prodOf(t *testing.T, r *VideoRequest) *ProductionParams {
	t.Helper()
	if r.Route != RouteProduction || r.Production == nil || r.Native != nil || r.Enhancement != nil {
		t.Fatalf("not a production request: %+v", r)
	}
	return r.Production
}

func wantProd(f func(p *ProductionParams) bool, what string) func(*testing.T, *VideoRequest) {
	return func(t *testing.T, r *VideoRequest) {
		t.Helper()
		if p := prodOf(t, r); !f(p) {
			t.Errorf("want %s, got %+v", what, *p)
		}
	}
}

func productionCases() []tc {
	only1080 := Entitlements{Production: true, ProductionResolutions: map[string]bool{"1080p": true}}
	edit := func(extra M) string {
		return prod(merge(M{"omni_reference_task_type": "edit", "content": items(vid(vidURL))}, extra))
	}
	return []tc{
		{name: "production lite text 1080p accepted", p: pLite, e: entAll, body: prod(nil), check: func(t *testing.T, r *VideoRequest) {
			p := prodOf(t, r)
			want := ProductionParams{Tier: TierLite, Duration: -1, Resolution: "1080p", Ratio: "adaptive", OmniTaskType: TaskAuto, Mode: ModeText}
			if *p != want {
				t.Errorf("got %+v, want %+v", *p, want)
			}
		}},
		{name: "production without the package denied", p: pLite, e: entNone, body: prod(nil), kind: deny, param: "model"},
		{name: "production without the package denied before body checks", p: pPro, e: entNone, body: prod(M{"fps": 1}), kind: deny, param: "model"},
		{name: "production 2k accepted", p: pStdTier, e: entAll, body: prod(M{"resolution": "2k"}), check: wantProd(func(p *ProductionParams) bool { return p.Resolution == "2k" }, "2k")},
		{name: "production 4k accepted", p: pPro, e: entAll, body: prod(M{"resolution": "4k"})},
		{name: "production 4k not in package denied", p: pLite, e: only1080, body: prod(M{"resolution": "4k"}), kind: deny, param: "metadata.resolution"},
		{name: "production 2k not in package denied", p: pLite, e: only1080, body: prod(M{"resolution": "2k"}), kind: deny, param: "metadata.resolution"},
		{name: "production invalid field reported before the resolution denial", p: pLite, e: only1080, body: prod(M{"resolution": "4k", "fps": 999}), kind: bad, param: "metadata.fps"},
		{name: "production resolution missing rejected", p: pLite, e: entAll, body: prod(M{"resolution": omit}), kind: bad, param: "metadata.resolution"},
		{name: "production metadata missing rejected", p: pLite, e: entAll, body: `{"model":"prod","prompt":"a cat"}`, kind: bad, param: "metadata.resolution"},
		{name: "production resolution 720p rejected", p: pLite, e: entAll, body: prod(M{"resolution": "720p"}), kind: bad, param: "metadata.resolution"},
		{name: "production resolution 8k rejected", p: pPro, e: entAll, body: prod(M{"resolution": "8k"}), kind: bad, param: "metadata.resolution"},
		{name: "production resolution 6k rejected", p: pPro, e: entAll, body: prod(M{"resolution": "6k"}), kind: bad, param: "metadata.resolution"},
		{name: "production resolution 1080P rejected", p: pPro, e: entAll, body: prod(M{"resolution": "1080P"}), kind: bad, param: "metadata.resolution"},
		{name: "production resolution null rejected", p: pPro, e: entAll, body: prod(M{"resolution": nil}), kind: bad, param: "metadata.resolution"},

		{name: "production duration -1 accepted", p: pLite, e: entAll, body: prod(M{"duration": -1})},
		{name: "production duration 4 accepted", p: pLite, e: entAll, body: prod(M{"duration": 4})},
		{name: "production duration 30 accepted", p: pLite, e: entAll, body: prod(M{"duration": 30}), check: wantProd(func(p *ProductionParams) bool { return p.Duration == 30 }, "duration 30")},
		{name: "production duration 31 rejected", p: pLite, e: entAll, body: prod(M{"duration": 31}), kind: bad, param: "metadata.duration"},
		{name: "production duration 3 rejected", p: pLite, e: entAll, body: prod(M{"duration": 3}), kind: bad, param: "metadata.duration"},
		{name: "production duration 5.0 rejected", p: pLite, e: entAll, body: prod(M{"duration": raw("5.0")}), kind: bad, param: "metadata.duration"},
		{name: "production duration string rejected", p: pLite, e: entAll, body: prod(M{"duration": "5"}), kind: bad, param: "metadata.duration"},
		{name: "production edit with video accepted", p: pStdTier, e: entAll, body: edit(M{"duration": -1}), check: wantProd(func(p *ProductionParams) bool {
			return p.Mode == ModeEdit && p.HasVideoInput && p.Duration == -1
		}, "edit with video input")},
		{name: "production edit duration 5 rejected", p: pStdTier, e: entAll, body: edit(M{"duration": 5}), kind: bad, param: "metadata.duration"},
		{name: "production edit ratio 16:9 rejected", p: pStdTier, e: entAll, body: edit(M{"ratio": "16:9"}), kind: bad, param: "metadata.ratio"},
		{name: "production edit without video rejected", p: pStdTier, e: entAll, body: prod(M{"omni_reference_task_type": "edit", "content": items(img("reference_image", imgURL))}), kind: bad, param: "metadata.omni_reference_task_type"},
		{name: "production extend duration 10 accepted", p: pPro, e: entAll, body: prod(M{"omni_reference_task_type": "extend", "duration": 10, "content": items(vid(vidURL))}), check: wantProd(func(p *ProductionParams) bool { return p.Mode == ModeExtend }, "extend")},
		{name: "production omni type unknown rejected", p: pPro, e: entAll, body: prod(M{"omni_reference_task_type": "i2v"}), kind: bad, param: "metadata.omni_reference_task_type"},
		{name: "production text ratio 9:16 accepted", p: pLite, e: entAll, body: prod(M{"ratio": "9:16"}), check: wantProd(func(p *ProductionParams) bool { return p.Ratio == "9:16" }, "9:16")},
		{name: "production ratio 5:4 rejected", p: pLite, e: entAll, body: prod(M{"ratio": "5:4"}), kind: bad, param: "metadata.ratio"},
		{name: "production first frame ratio 16:9 rejected", p: pLite, e: entAll, body: prod(M{"ratio": "16:9", "content": items(img("first_frame", imgURL))}), kind: bad, param: "metadata.ratio"},
		{name: "production image reference has no video input", p: pLite, e: entAll, body: prod(M{"content": items(img("reference_image", imgURL), aud(audURL))}, M{"prompt": omit}),
			check: wantProd(func(p *ProductionParams) bool { return !p.HasVideoInput && p.Mode == ModeReference }, "no video input")},
		{name: "production asset video reference accepted", p: pLite, e: entAll, body: prod(M{"content": items(vid("asset://asset-7"))}), check: func(t *testing.T, r *VideoRequest) {
			if !prodOf(t, r).HasVideoInput || !r.Content[0].IsAsset || r.Content[0].AssetID != "asset-7" {
				t.Errorf("got %+v", r.Content)
			}
		}},
		{name: "production http video reference rejected", p: pLite, e: entAll, body: prod(M{"content": items(vid("http://cdn.example.com/a.mp4"))}), kind: bad, param: "metadata.content[0].video_url.url"},
		{name: "production text without prompt rejected", p: pLite, e: entAll, body: prod(nil, M{"prompt": omit}), kind: bad, param: "prompt"},
		{name: "production user accepted", p: pLite, e: entAll, body: prod(nil, M{"user": "end-user-9"})},
		{name: "production generate_audio and watermark accepted", p: pLite, e: entAll, body: prod(M{"generate_audio": true, "watermark": false}), check: wantProd(func(p *ProductionParams) bool {
			return p.GenerateAudio != nil && *p.GenerateAudio && p.Watermark != nil && !*p.Watermark
		}, "audio on, watermark off")},
		{name: "production watermark string rejected", p: pLite, e: entAll, body: prod(M{"watermark": "no"}), kind: bad, param: "metadata.watermark"},
		{name: "production generate_audio null rejected", p: pLite, e: entAll, body: prod(M{"generate_audio": nil}), kind: bad, param: "metadata.generate_audio"},

		{name: "production fps 15 accepted", p: pLite, e: entAll, body: prod(M{"fps": 15})},
		{name: "production fps 120 accepted", p: pLite, e: entAll, body: prod(M{"fps": 120}), check: wantProd(func(p *ProductionParams) bool { return p.FPS != nil && *p.FPS == 120 }, "fps 120")},
		{name: "production fps 14 rejected", p: pLite, e: entAll, body: prod(M{"fps": 14}), kind: bad, param: "metadata.fps"},
		{name: "production fps 121 rejected", p: pLite, e: entAll, body: prod(M{"fps": 121}), kind: bad, param: "metadata.fps"},
		{name: "production fps 29.97 rejected", p: pLite, e: entAll, body: prod(M{"fps": 29.97}), kind: bad, param: "metadata.fps"},
		{name: "production fps string rejected", p: pLite, e: entAll, body: prod(M{"fps": "30"}), kind: bad, param: "metadata.fps"},
		{name: "production bitrate 10 accepted", p: pLite, e: entAll, body: prod(M{"bitrate": 10})},
		{name: "production bitrate 150000 accepted", p: pLite, e: entAll, body: prod(M{"bitrate": 150000})},
		{name: "production bitrate 9 rejected", p: pLite, e: entAll, body: prod(M{"bitrate": 9}), kind: bad, param: "metadata.bitrate"},
		{name: "production bitrate 150001 rejected", p: pLite, e: entAll, body: prod(M{"bitrate": 150001}), kind: bad, param: "metadata.bitrate"},
		{name: "production bitrate and bitrate_level both kept", p: pLite, e: entAll, body: prod(M{"bitrate": 8000, "bitrate_level": "low"}), check: wantProd(func(p *ProductionParams) bool {
			return p.Bitrate != nil && *p.Bitrate == 8000 && p.BitrateLevel == "low"
		}, "both bitrate controls")},
		{name: "production bitrate_level high accepted", p: pLite, e: entAll, body: prod(M{"bitrate_level": "high"})},
		{name: "production bitrate_level ultra rejected", p: pLite, e: entAll, body: prod(M{"bitrate_level": "ultra"}), kind: bad, param: "metadata.bitrate_level"},

		{name: "production lite scene rejected", p: pLite, e: entAll, body: prod(M{"scene": "ugc"}), kind: bad, param: "metadata.scene"},
		{name: "production lite enhance_style rejected", p: pLite, e: entAll, body: prod(M{"enhance_style": "hd"}), kind: bad, param: "metadata.enhance_style"},
		{name: "production lite bit_depth rejected", p: pLite, e: entAll, body: prod(M{"bit_depth": 10}), kind: bad, param: "metadata.bit_depth"},
		{name: "production standard scene accepted", p: pStdTier, e: entAll, body: prod(M{"scene": "short_series", "enhance_style": "natural"}), check: wantProd(func(p *ProductionParams) bool {
			return p.Scene == "short_series" && p.EnhanceStyle == "natural"
		}, "scene and style")},
		{name: "production standard scene old_film accepted", p: pStdTier, e: entAll, body: prod(M{"scene": "old_film"})},
		{name: "production standard scene unknown rejected", p: pStdTier, e: entAll, body: prod(M{"scene": "sports"}), kind: bad, param: "metadata.scene"},
		{name: "production standard bit_depth rejected", p: pStdTier, e: entAll, body: prod(M{"bit_depth": 10}), kind: bad, param: "metadata.bit_depth"},
		{name: "production pro bit_depth 10 accepted", p: pPro, e: entAll, body: prod(M{"bit_depth": 10, "enhance_style": "hd"}), check: wantProd(func(p *ProductionParams) bool { return p.BitDepth != nil && *p.BitDepth == 10 }, "bit_depth 10")},
		{name: "production pro bit_depth 16 accepted", p: pPro, e: entAll, body: prod(M{"bit_depth": 16})},
		{name: "production pro bit_depth 9 rejected", p: pPro, e: entAll, body: prod(M{"bit_depth": 9}), kind: bad, param: "metadata.bit_depth"},
		{name: "production pro bit_depth 10.0 rejected", p: pPro, e: entAll, body: prod(M{"bit_depth": raw("10.0")}), kind: bad, param: "metadata.bit_depth"},
		{name: "production pro enhance_style vivid rejected", p: pPro, e: entAll, body: prod(M{"enhance_style": "vivid"}), kind: bad, param: "metadata.enhance_style"},
		{name: "production pro scene rejected", p: pPro, e: entAll, body: prod(M{"scene": "common"}), kind: bad, param: "metadata.scene"},

		{name: "production return_last_frame with package accepted", p: pLite, e: entAll, body: prod(M{"return_last_frame": true}), check: wantProd(func(p *ProductionParams) bool { return p.ReturnLastFrame }, "last frame")},
		{name: "production return_last_frame without package denied", p: pLite, e: only1080, body: prod(M{"return_last_frame": true}), kind: deny, param: "metadata.return_last_frame"},
		{name: "production return_last_frame false without package accepted", p: pLite, e: only1080, body: prod(M{"return_last_frame": false})},
		{name: "production return_last_frame string rejected", p: pLite, e: entAll, body: prod(M{"return_last_frame": "true"}), kind: bad, param: "metadata.return_last_frame"},
		{name: "production client_request_id trimmed", p: pLite, e: entAll, body: prod(M{"client_request_id": " p-1 "}), check: func(t *testing.T, r *VideoRequest) {
			if r.ClientRequestID != "p-1" {
				t.Errorf("client_request_id %q", r.ClientRequestID)
			}
		}},
		{name: "production client_request_id empty rejected", p: pLite, e: entAll, body: prod(M{"client_request_id": ""}), kind: bad, param: "metadata.client_request_id"},

		// The contract's forbidden list.
		{name: "production top-level mode rejected", p: pLite, e: entAll, body: prod(nil, M{"mode": "production"}), kind: bad, param: "mode"},
		{name: "production top-level task_type rejected", p: pLite, e: entAll, body: prod(nil, M{"task_type": "t2v"}), kind: bad, param: "task_type"},
		{name: "production metadata task_type rejected", p: pLite, e: entAll, body: prod(M{"task_type": "t2v"}), kind: bad, param: "metadata.task_type"},
		{name: "production metadata video_url rejected", p: pLite, e: entAll, body: prod(M{"video_url": vidURL}), kind: bad, param: "metadata.video_url"},
		{name: "production tool_version rejected", p: pPro, e: entAll, body: prod(M{"tool_version": "professional"}), kind: bad, param: "metadata.tool_version"},
		{name: "production resolution_limit rejected", p: pPro, e: entAll, body: prod(M{"resolution_limit": 1080}), kind: bad, param: "metadata.resolution_limit"},
		{name: "production output_format mov rejected", p: pPro, e: entAll, body: prod(M{"output_format": "mov"}), kind: bad, param: "metadata.output_format"},
		{name: "production output_format mp4 rejected too", p: pPro, e: entAll, body: prod(M{"output_format": "mp4"}), kind: bad, param: "metadata.output_format"},
		{name: "production metadata callback_url rejected", p: pLite, e: entAll, body: prod(M{"callback_url": "https://hooks.example.com"}), kind: bad, param: "metadata.callback_url"},
		{name: "production top-level webhook rejected", p: pLite, e: entAll, body: prod(nil, M{"webhook": "https://hooks.example.com"}), kind: bad, param: "webhook"},
		{name: "production project_id rejected", p: pLite, e: entAll, body: prod(M{"project_id": "p1"}), kind: bad, param: "metadata.project_id"},
		{name: "production top-level region rejected", p: pLite, e: entAll, body: prod(nil, M{"region": "cn-beijing"}), kind: bad, param: "region"},
		{name: "production api_key rejected", p: pLite, e: entAll, body: prod(M{"api_key": "sk-1"}), kind: bad, param: "metadata.api_key"},
		{name: "production metadata input_duration rejected", p: pLite, e: entAll, body: prod(M{"input_duration": 5.0, "content": items(vid(vidURL))}), kind: bad, param: "metadata.input_duration"},
		{name: "production content item duration rejected", p: pLite, e: entAll, body: prod(M{"content": items(merge(vid(vidURL), M{"duration": 5}))}), kind: bad, param: "metadata.content[0].duration"},
		{name: "production top-level seed rejected", p: pLite, e: entAll, body: prod(nil, M{"seed": 1}), kind: bad, param: "seed"},
		{name: "production top-level duration rejected", p: pLite, e: entAll, body: prod(nil, M{"duration": 5}), kind: bad, param: "duration"},
		{name: "production metadata unknown field rejected", p: pLite, e: entAll, body: prod(M{"foo": true}), kind: bad, param: "metadata.foo"},
	}
}
