package contract

import (
	"strings"
	"testing"
)

func TestEnhancementContract(t *testing.T) { runTable(t, enhancementCases()) }

func enhOf(t *testing.T, r *VideoRequest) *EnhancementParams {
	t.Helper()
	if r.Route != RouteEnhancement || r.Enhancement == nil || r.Native != nil || r.Production != nil {
		t.Fatalf("not an enhancement request: %+v", r)
	}
	return r.Enhancement
}

func wantEnh(f func(p *EnhancementParams) bool, what string) func(*testing.T, *VideoRequest) {
	return func(t *testing.T, r *VideoRequest) {
		t.Helper()
		if p := enhOf(t, r); !f(p) {
			t.Errorf("want %s, got %+v", what, *p)
		}
	}
}

func wantBand(band string) func(*testing.T, *VideoRequest) {
	return wantEnh(func(p *EnhancementParams) bool { return p.Band == band }, "band "+band)
}

func limit(n any) M { return M{"resolution": omit, "resolution_limit": n} }

func enhancementCases() []tc {
	no8k := Entitlements{}
	cases := []tc{
		{name: "enhancement lite 1080p accepted", p: eLite, body: enh(nil), check: func(t *testing.T, r *VideoRequest) {
			p := enhOf(t, r)
			want := EnhancementParams{VideoURL: "https://cdn.example.com/in.mp4", Duration: 5.5, Resolution: "1080p", Band: "1080p"}
			if *p != want {
				t.Errorf("got %+v, want %+v", *p, want)
			}
			if r.HasPrompt || r.Model != "enh" {
				t.Errorf("top level: %+v", r)
			}
		}},
		{name: "enhancement lite 2k accepted", p: eLite, body: enh(M{"resolution": "2k"}), check: wantBand("2k")},
		{name: "enhancement lite 4k accepted", p: eLite, body: enh(M{"resolution": "4k"}), check: wantBand("4k")},
		{name: "enhancement lite 8k rejected even with the 8k package", p: eLite, e: entAll, body: enh(M{"resolution": "8k"}), kind: bad, param: "metadata.resolution"},
		{name: "enhancement standard defaults to tool_version standard", p: eStd, body: enh(nil), check: wantEnh(func(p *EnhancementParams) bool { return p.ToolVersion == ToolStandard }, "tool_version standard")},
		{name: "enhancement standard 8k with package accepted", p: eStd, e: entAll, body: enh(M{"resolution": "8k"}), check: wantBand("8k")},
		{name: "enhancement standard 8k without package denied", p: eStd, e: no8k, body: enh(M{"resolution": "8k"}), kind: deny, param: "metadata.resolution"},
		{name: "enhancement professional 8k without package denied", p: eStd, e: no8k, body: enh(M{"resolution": "8k", "tool_version": "professional"}), kind: deny, param: "metadata.resolution"},
		{name: "enhancement invalid field reported before the 8k denial", p: eStd, e: no8k, body: enh(M{"resolution": "8k", "fps": 7}), kind: bad, param: "metadata.fps"},
		{name: "enhancement resolution 720p rejected", p: eStd, e: entAll, body: enh(M{"resolution": "720p"}), kind: bad, param: "metadata.resolution"},
		{name: "enhancement resolution lte_720p rejected", p: eStd, e: entAll, body: enh(M{"resolution": "lte_720p"}), kind: bad, param: "metadata.resolution"},
		{name: "enhancement resolution up-to-720p rejected", p: eLite, body: enh(M{"resolution": "up-to-720p"}), kind: bad, param: "metadata.resolution"},
		{name: "enhancement resolution 6k rejected", p: eStd, e: entAll, body: enh(M{"resolution": "6k"}), kind: bad, param: "metadata.resolution"},
		{name: "enhancement resolution 1080P rejected", p: eLite, body: enh(M{"resolution": "1080P"}), kind: bad, param: "metadata.resolution"},
		{name: "enhancement resolution number rejected", p: eLite, body: enh(M{"resolution": 1080}), kind: bad, param: "metadata.resolution"},
		{name: "enhancement resolution null rejected", p: eLite, body: enh(M{"resolution": nil}), kind: bad, param: "metadata.resolution"},
		{name: "enhancement both selectors rejected", p: eLite, body: enh(M{"resolution_limit": 1080}), kind: bad, param: "metadata.resolution_limit"},
		{name: "enhancement no selector rejected", p: eLite, body: enh(M{"resolution": omit}), kind: bad, param: "metadata.resolution"},

		{name: "enhancement resolution_limit 128 is the 720p band", p: eLite, body: enh(limit(128)), check: wantEnh(func(p *EnhancementParams) bool {
			return p.ResolutionLimit == 128 && p.Resolution == "" && p.Band == "720p"
		}, "limit 128 in the 720p band")},
		{name: "enhancement resolution_limit 720 is the 720p band", p: eLite, body: enh(limit(720)), check: wantBand("720p")},
		{name: "enhancement resolution_limit 721 is the 1080p band", p: eLite, body: enh(limit(721)), check: wantBand("1080p")},
		{name: "enhancement resolution_limit 1080 is the 1080p band", p: eLite, body: enh(limit(1080)), check: wantBand("1080p")},
		{name: "enhancement resolution_limit 1440 is the 2k band", p: eLite, body: enh(limit(1440)), check: wantBand("2k")},
		{name: "enhancement resolution_limit 1441 is the 4k band", p: eLite, body: enh(limit(1441)), check: wantBand("4k")},
		{name: "enhancement lite resolution_limit 2160 accepted", p: eLite, body: enh(limit(2160)), check: wantBand("4k")},
		{name: "enhancement lite resolution_limit 2161 rejected", p: eLite, e: entAll, body: enh(limit(2161)), kind: bad, param: "metadata.resolution_limit"},
		{name: "enhancement standard resolution_limit 2161 is the 8k band", p: eStd, e: entAll, body: enh(limit(2161)), check: wantBand("8k")},
		{name: "enhancement standard resolution_limit 4320 accepted", p: eStd, e: entAll, body: enh(limit(4320)), check: wantBand("8k")},
		{name: "enhancement standard resolution_limit 4321 rejected", p: eStd, e: entAll, body: enh(limit(4321)), kind: bad, param: "metadata.resolution_limit"},
		{name: "enhancement standard resolution_limit 2161 without 8k package denied", p: eStd, e: no8k, body: enh(limit(2161)), kind: deny, param: "metadata.resolution_limit"},
		{name: "enhancement resolution_limit 127 rejected", p: eStd, body: enh(limit(127)), kind: bad, param: "metadata.resolution_limit"},
		{name: "enhancement resolution_limit 720.5 rejected", p: eStd, body: enh(limit(720.5)), kind: bad, param: "metadata.resolution_limit"},
		{name: "enhancement resolution_limit string rejected", p: eStd, body: enh(limit("720")), kind: bad, param: "metadata.resolution_limit"},
		{name: "enhancement resolution_limit null rejected", p: eStd, body: enh(limit(nil)), kind: bad, param: "metadata.resolution_limit"},

		{name: "enhancement lite tool_version fast rejected", p: eLite, body: enh(M{"tool_version": "fast"}), kind: bad, param: "metadata.tool_version"},
		{name: "enhancement lite tool_version standard rejected", p: eLite, body: enh(M{"tool_version": "standard"}), kind: bad, param: "metadata.tool_version"},
		{name: "enhancement lite tool_version null rejected", p: eLite, body: enh(M{"tool_version": nil}), kind: bad, param: "metadata.tool_version"},
		{name: "enhancement standard tool_version standard accepted", p: eStd, body: enh(M{"tool_version": "standard"})},
		{name: "enhancement standard tool_version professional accepted", p: eStd, body: enh(M{"tool_version": "professional"}), check: wantEnh(func(p *EnhancementParams) bool { return p.ToolVersion == ToolProfessional }, "professional")},
		{name: "enhancement standard tool_version fast rejected", p: eStd, body: enh(M{"tool_version": "fast"}), kind: bad, param: "metadata.tool_version"},
		{name: "enhancement standard tool_version Professional rejected", p: eStd, body: enh(M{"tool_version": "Professional"}), kind: bad, param: "metadata.tool_version"},
		{name: "enhancement standard tool_version null rejected", p: eStd, body: enh(M{"tool_version": nil}), kind: bad, param: "metadata.tool_version"},

		{name: "enhancement duration integer accepted", p: eLite, body: enh(M{"duration": 5}), check: wantEnh(func(p *EnhancementParams) bool { return p.Duration == 5 }, "duration 5")},
		{name: "enhancement duration 0.1 accepted", p: eLite, body: enh(M{"duration": 0.1})},
		{name: "enhancement duration 5.084 accepted", p: eLite, body: enh(M{"duration": 5.084}), check: wantEnh(func(p *EnhancementParams) bool { return p.Duration == 5.084 }, "duration 5.084")},
		{name: "enhancement duration missing rejected", p: eLite, body: enh(M{"duration": omit}), kind: bad, param: "metadata.duration"},
		{name: "enhancement duration 0 rejected", p: eLite, body: enh(M{"duration": 0}), kind: bad, param: "metadata.duration"},
		{name: "enhancement duration negative rejected", p: eLite, body: enh(M{"duration": -3}), kind: bad, param: "metadata.duration"},
		{name: "enhancement duration string rejected", p: eLite, body: enh(M{"duration": "5.5"}), kind: bad, param: "metadata.duration"},
		{name: "enhancement duration null rejected", p: eLite, body: enh(M{"duration": nil}), kind: bad, param: "metadata.duration"},
		{name: "enhancement duration overflow rejected", p: eLite, body: enh(M{"duration": raw("1e999")}), kind: bad, param: "metadata.duration"},
		{name: "enhancement duration underflow to zero rejected", p: eLite, body: enh(M{"duration": raw("1e-999")}), kind: bad, param: "metadata.duration"},
		{name: "enhancement duration over a day rejected", p: eLite, body: enh(M{"duration": 86401}), kind: bad, param: "metadata.duration"},

		{name: "enhancement video_url http accepted", p: eLite, body: enh(M{"video_url": "http://cdn.example.com/in.mp4"})},
		{name: "enhancement video_url missing rejected", p: eLite, body: enh(M{"video_url": omit}), kind: bad, param: "metadata.video_url"},
		{name: "enhancement video_url asset rejected", p: eLite, body: enh(M{"video_url": "asset://v1"}), kind: bad, param: "metadata.video_url"},
		{name: "enhancement video_url data rejected", p: eLite, body: enh(M{"video_url": "data:video/mp4;base64,AAAA"}), kind: bad, param: "metadata.video_url"},
		{name: "enhancement video_url ftp rejected", p: eLite, body: enh(M{"video_url": "ftp://cdn.example.com/in.mp4"}), kind: bad, param: "metadata.video_url"},
		{name: "enhancement video_url relative rejected", p: eLite, body: enh(M{"video_url": "in.mp4"}), kind: bad, param: "metadata.video_url"},
		{name: "enhancement video_url without host rejected", p: eLite, body: enh(M{"video_url": "https://"}), kind: bad, param: "metadata.video_url"},
		{name: "enhancement video_url with credentials rejected", p: eLite, body: enh(M{"video_url": "https://me:pw@cdn.example.com/in.mp4"}), kind: bad, param: "metadata.video_url"},
		{name: "enhancement video_url null rejected", p: eLite, body: enh(M{"video_url": nil}), kind: bad, param: "metadata.video_url"},
		{name: "enhancement video_url over 4096 bytes rejected", p: eLite, body: enh(M{"video_url": "https://cdn.example.com/" + strings.Repeat("v", MaxURLBytes)}), kind: bad, param: "metadata.video_url"},

		{name: "enhancement prompt text accepted and ignored", p: eLite, body: enh(nil, M{"prompt": "make it sharp"}), check: func(t *testing.T, r *VideoRequest) {
			if r.HasPrompt || r.Prompt != "" {
				t.Errorf("prompt not ignored: %+v", r)
			}
		}},
		{name: "enhancement prompt empty accepted", p: eLite, body: enh(nil, M{"prompt": ""})},
		{name: "enhancement prompt null accepted", p: eLite, body: enh(nil, M{"prompt": nil})},
		{name: "enhancement prompt object accepted", p: eLite, body: enh(nil, M{"prompt": M{"text": "x", "n": []any{1, nil}}})},
		{name: "enhancement prompt number accepted", p: eStd, body: enh(nil, M{"prompt": 3})},
		{name: "enhancement top-level user rejected", p: eLite, body: enh(nil, M{"user": "u"}), kind: bad, param: "user"},
		{name: "enhancement top-level seed rejected", p: eLite, body: enh(nil, M{"seed": 1}), kind: bad, param: "seed"},
		{name: "enhancement top-level video_url rejected", p: eLite, body: enh(nil, M{"video_url": vidURL}), kind: bad, param: "video_url"},
		{name: "enhancement top-level mode rejected", p: eLite, body: enh(nil, M{"mode": "enhance"}), kind: bad, param: "mode"},
		{name: "enhancement metadata missing rejected", p: eLite, body: `{"model":"enh","prompt":null}`, kind: bad, param: "metadata"},
		{name: "enhancement metadata array rejected", p: eLite, body: `{"model":"enh","metadata":[]}`, kind: bad, param: "metadata"},

		{name: "enhancement lite scene rejected", p: eLite, body: enh(M{"scene": "ugc"}), kind: bad, param: "metadata.scene"},
		{name: "enhancement lite scene of wrong type still rejected as a field", p: eLite, body: enh(M{"scene": 5}), kind: bad, param: "metadata.scene"},
		{name: "enhancement lite enhance_style rejected", p: eLite, body: enh(M{"enhance_style": "hd"}), kind: bad, param: "metadata.enhance_style"},
		{name: "enhancement lite bit_depth rejected", p: eLite, body: enh(M{"bit_depth": 8}), kind: bad, param: "metadata.bit_depth"},
		{name: "enhancement standard scene ugc accepted", p: eStd, body: enh(M{"scene": "ugc", "enhance_style": "hd"}), check: wantEnh(func(p *EnhancementParams) bool { return p.Scene == "ugc" && p.EnhanceStyle == "hd" }, "scene and style")},
		{name: "enhancement standard scene aigc accepted", p: eStd, body: enh(M{"scene": "aigc", "tool_version": "standard"})},
		{name: "enhancement standard scene unknown rejected", p: eStd, body: enh(M{"scene": "anime"}), kind: bad, param: "metadata.scene"},
		{name: "enhancement standard bit_depth rejected", p: eStd, body: enh(M{"bit_depth": 10}), kind: bad, param: "metadata.bit_depth"},
		{name: "enhancement professional scene rejected", p: eStd, body: enh(M{"tool_version": "professional", "scene": "common"}), kind: bad, param: "metadata.scene"},
		{name: "enhancement professional enhance_style natural accepted", p: eStd, body: enh(M{"tool_version": "professional", "enhance_style": "natural"})},
		{name: "enhancement professional bit_depth 12 accepted", p: eStd, body: enh(M{"tool_version": "professional", "bit_depth": 12}), check: wantEnh(func(p *EnhancementParams) bool { return p.BitDepth != nil && *p.BitDepth == 12 }, "bit_depth 12")},
		{name: "enhancement professional bit_depth 16 accepted", p: eStd, body: enh(M{"tool_version": "professional", "bit_depth": 16})},
		{name: "enhancement professional bit_depth 9 rejected", p: eStd, body: enh(M{"tool_version": "professional", "bit_depth": 9}), kind: bad, param: "metadata.bit_depth"},
		{name: "enhancement professional enhance_style unknown rejected", p: eStd, body: enh(M{"tool_version": "professional", "enhance_style": "sharp"}), kind: bad, param: "metadata.enhance_style"},

		{name: "enhancement fps 60 accepted", p: eLite, body: enh(M{"fps": 60}), check: wantEnh(func(p *EnhancementParams) bool { return p.FPS != nil && *p.FPS == 60 }, "fps 60")},
		{name: "enhancement fps 14 rejected", p: eLite, body: enh(M{"fps": 14}), kind: bad, param: "metadata.fps"},
		{name: "enhancement fps 121 rejected", p: eLite, body: enh(M{"fps": 121}), kind: bad, param: "metadata.fps"},
		{name: "enhancement fps null rejected", p: eLite, body: enh(M{"fps": nil}), kind: bad, param: "metadata.fps"},
		{name: "enhancement bitrate wins but both are kept", p: eLite, body: enh(M{"bitrate": 5000, "bitrate_level": "medium"}), check: wantEnh(func(p *EnhancementParams) bool {
			return p.Bitrate != nil && *p.Bitrate == 5000 && p.BitrateLevel == "medium"
		}, "both bitrate controls")},
		{name: "enhancement bitrate 0 rejected", p: eLite, body: enh(M{"bitrate": 0}), kind: bad, param: "metadata.bitrate"},
		{name: "enhancement bitrate_level max rejected", p: eLite, body: enh(M{"bitrate_level": "max"}), kind: bad, param: "metadata.bitrate_level"},
		{name: "enhancement client_request_id trimmed", p: eLite, body: enh(M{"client_request_id": "\t job-42 \n"}), check: func(t *testing.T, r *VideoRequest) {
			if r.ClientRequestID != "job-42" {
				t.Errorf("client_request_id %q", r.ClientRequestID)
			}
		}},
		{name: "enhancement client_request_id with inner space accepted", p: eLite, body: enh(M{"client_request_id": "job 42"})},
		{name: "enhancement client_request_id 64 bytes after trimming accepted", p: eLite, body: enh(M{"client_request_id": "  " + strings.Repeat("x", 64) + "  "})},
		{name: "enhancement client_request_id 65 bytes rejected", p: eLite, body: enh(M{"client_request_id": strings.Repeat("x", 65)}), kind: bad, param: "metadata.client_request_id"},
		{name: "enhancement client_request_id empty rejected", p: eLite, body: enh(M{"client_request_id": ""}), kind: bad, param: "metadata.client_request_id"},
		{name: "enhancement client_request_id non-ASCII rejected", p: eLite, body: enh(M{"client_request_id": "ключ"}), kind: bad, param: "metadata.client_request_id"},

		{name: "enhancement metadata content rejected", p: eLite, body: enh(M{"content": items(vid(vidURL))}), kind: bad, param: "metadata.content"},
		{name: "enhancement metadata ratio rejected", p: eLite, body: enh(M{"ratio": "16:9"}), kind: bad, param: "metadata.ratio"},
		{name: "enhancement metadata output_format rejected", p: eLite, body: enh(M{"output_format": "mov"}), kind: bad, param: "metadata.output_format"},
		{name: "enhancement metadata unknown field rejected", p: eStd, body: enh(M{"denoise": true}), kind: bad, param: "metadata.denoise"},
		{name: "enhancement metadata task_type rejected", p: eStd, body: enh(M{"task_type": "enhance"}), kind: bad, param: "metadata.task_type"},
		{name: "enhancement metadata callback_url rejected", p: eStd, body: enh(M{"callback_url": "https://hooks.example.com"}), kind: bad, param: "metadata.callback_url"},
		{name: "enhancement metadata Duration (case) rejected", p: eStd, body: enh(M{"Duration": 5}), kind: bad, param: "metadata.Duration"},
	}
	return cases
}
