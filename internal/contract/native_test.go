package contract

import (
	"strings"
	"testing"
)

func nativeOf(t *testing.T, r *VideoRequest) *NativeParams {
	t.Helper()
	if r.Route != RouteNative || r.Native == nil || r.Production != nil || r.Enhancement != nil {
		t.Fatalf("not a native request: %+v", r)
	}
	return r.Native
}

func wantMode(m Mode) func(*testing.T, *VideoRequest) {
	return func(t *testing.T, r *VideoRequest) {
		t.Helper()
		if got := nativeOf(t, r).Mode; got != m {
			t.Errorf("mode %q, want %q", got, m)
		}
	}
}

func wantNative(f func(n *NativeParams) bool, what string) func(*testing.T, *VideoRequest) {
	return func(t *testing.T, r *VideoRequest) {
		t.Helper()
		if n := nativeOf(t, r); !f(n) {
			t.Errorf("want %s, got %+v", what, *n)
		}
	}
}

func TestNativeContract(t *testing.T) { runTable(t, nativeCases()) }

func nativeCases() []tc {
	frame := items(img("first_frame", imgURL))
	cases := []tc{
		{name: "2.5 text with defaults accepted", p: p25, body: nat(nil), check: func(t *testing.T, r *VideoRequest) {
			n := nativeOf(t, r)
			want := NativeParams{Duration: -1, Resolution: "720p", Ratio: "adaptive", OutputFormat: "mp4", OmniTaskType: TaskAuto, Mode: ModeText}
			if *n != want {
				t.Errorf("got %+v, want %+v", *n, want)
			}
			if r.Model != "vid" || r.Prompt != "a cat surfing" || !r.HasPrompt || r.Seed != nil || r.Content != nil {
				t.Errorf("top level: %+v", r)
			}
		}},
		{name: "2.5 empty metadata accepted", p: p25, body: nat(M{}), check: wantNative(func(n *NativeParams) bool { return n.Duration == -1 }, "duration -1")},
		{name: "2.5 duration -1 accepted", p: p25, body: nat(M{"duration": -1}), check: wantNative(func(n *NativeParams) bool { return n.Duration == -1 }, "duration -1")},
		{name: "2.5 duration 4 accepted", p: p25, body: nat(M{"duration": 4}), check: wantNative(func(n *NativeParams) bool { return n.Duration == 4 }, "duration 4")},
		{name: "2.5 duration 30 accepted", p: p25, body: nat(M{"duration": 30}), check: wantNative(func(n *NativeParams) bool { return n.Duration == 30 }, "duration 30")},
		{name: "2.5 duration 31 rejected", p: p25, body: nat(M{"duration": 31}), kind: bad, param: "metadata.duration"},
		{name: "2.5 duration 3 rejected", p: p25, body: nat(M{"duration": 3}), kind: bad, param: "metadata.duration"},
		{name: "2.5 duration 0 rejected", p: p25, body: nat(M{"duration": 0}), kind: bad, param: "metadata.duration"},
		{name: "2.5 duration -2 rejected", p: p25, body: nat(M{"duration": -2}), kind: bad, param: "metadata.duration"},
		{name: "2.5 duration 5.0 rejected", p: p25, body: nat(M{"duration": raw("5.0")}), kind: bad, param: "metadata.duration"},
		{name: "2.5 duration 5e0 rejected", p: p25, body: nat(M{"duration": raw("5e0")}), kind: bad, param: "metadata.duration"},
		{name: "2.5 duration 5.5 rejected", p: p25, body: nat(M{"duration": 5.5}), kind: bad, param: "metadata.duration"},
		{name: "2.5 duration string rejected", p: p25, body: nat(M{"duration": "5"}), kind: bad, param: "metadata.duration"},
		{name: "2.5 duration null rejected", p: p25, body: nat(M{"duration": nil}), kind: bad, param: "metadata.duration"},
		{name: "2.5 duration boolean rejected", p: p25, body: nat(M{"duration": true}), kind: bad, param: "metadata.duration"},
		{name: "2.5 duration beyond int64 rejected", p: p25, body: nat(M{"duration": raw("99999999999999999999")}), kind: bad, param: "metadata.duration"},
		{name: "2.5 resolution 480p accepted", p: p25, body: nat(M{"resolution": "480p"}), check: wantNative(func(n *NativeParams) bool { return n.Resolution == "480p" }, "480p")},
		{name: "2.5 resolution 720p accepted", p: p25, body: nat(M{"resolution": "720p"})},
		{name: "2.5 resolution 1080p accepted", p: p25, body: nat(M{"resolution": "1080p"}), check: wantNative(func(n *NativeParams) bool { return n.Resolution == "1080p" }, "1080p")},
		{name: "2.5 resolution 4k rejected even with the 4k package", p: p25, e: entAll, body: nat(M{"resolution": "4k"}), kind: bad, param: "metadata.resolution"},
		{name: "2.5 resolution 4k rejected", p: p25, body: nat(M{"resolution": "4k"}), kind: bad, param: "metadata.resolution"},
		{name: "2.5 resolution 2k rejected", p: p25, body: nat(M{"resolution": "2k"}), kind: bad, param: "metadata.resolution"},
		{name: "2.5 resolution 720P rejected (case-sensitive)", p: p25, body: nat(M{"resolution": "720P"}), kind: bad, param: "metadata.resolution"},
		{name: "2.5 resolution number rejected", p: p25, body: nat(M{"resolution": 720}), kind: bad, param: "metadata.resolution"},
		{name: "2.5 resolution null rejected", p: p25, body: nat(M{"resolution": nil}), kind: bad, param: "metadata.resolution"},
		{name: "2.5 seed rejected", p: p25, body: nat(nil, M{"seed": 42}), kind: bad, param: "seed"},
		{name: "2.5 metadata seed rejected", p: p25, body: nat(M{"seed": 42}), kind: bad, param: "metadata.seed"},
		{name: "2.5 watermark true accepted", p: p25, body: nat(M{"watermark": true}), check: wantNative(func(n *NativeParams) bool { return n.Watermark != nil && *n.Watermark }, "watermark true")},
		{name: "2.5 watermark string rejected", p: p25, body: nat(M{"watermark": "true"}), kind: bad, param: "metadata.watermark"},
		{name: "2.5 generate_audio false accepted", p: p25, body: nat(M{"generate_audio": false}), check: wantNative(func(n *NativeParams) bool { return n.GenerateAudio != nil && !*n.GenerateAudio }, "generate_audio false")},
		{name: "2.5 generate_audio string rejected", p: p25, body: nat(M{"generate_audio": "false"}), kind: bad, param: "metadata.generate_audio"},
		{name: "2.5 generate_audio 1 rejected", p: p25, body: nat(M{"generate_audio": 1}), kind: bad, param: "metadata.generate_audio"},
		{name: "2.5 generate_audio null rejected", p: p25, body: nat(M{"generate_audio": nil}), kind: bad, param: "metadata.generate_audio"},
		{name: "2.5 output_format mov accepted", p: p25, body: nat(M{"output_format": "mov"}), check: wantNative(func(n *NativeParams) bool { return n.OutputFormat == "mov" }, "mov")},
		{name: "2.5 output_format mp4 accepted", p: p25, body: nat(M{"output_format": "mp4"})},
		{name: "2.5 output_format webm rejected", p: p25, body: nat(M{"output_format": "webm"}), kind: bad, param: "metadata.output_format"},
		{name: "2.5 output_format MP4 rejected (case-sensitive)", p: p25, body: nat(M{"output_format": "MP4"}), kind: bad, param: "metadata.output_format"},
		{name: "2.5 return_last_frame true accepted without a package", p: p25, body: nat(M{"return_last_frame": true}), check: wantNative(func(n *NativeParams) bool { return n.ReturnLastFrame }, "return_last_frame")},
		{name: "2.5 return_last_frame string rejected", p: p25, body: nat(M{"return_last_frame": "yes"}), kind: bad, param: "metadata.return_last_frame"},
		{name: "2.5 ratio 2:1 rejected", p: p25, body: nat(M{"ratio": "2:1"}), kind: bad, param: "metadata.ratio"},
		{name: "2.5 ratio 16:10 rejected", p: p25, body: nat(M{"ratio": "16:10"}), kind: bad, param: "metadata.ratio"},
		{name: "2.5 ratio null rejected", p: p25, body: nat(M{"ratio": nil}), kind: bad, param: "metadata.ratio"},

		// Omni task types.
		{name: "2.5 omni auto accepted", p: p25, body: nat(M{"omni_reference_task_type": "auto"}), check: wantMode(ModeText)},
		{name: "2.5 omni unknown rejected", p: p25, body: nat(M{"omni_reference_task_type": "remix"}), kind: bad, param: "metadata.omni_reference_task_type"},
		{name: "2.5 omni null rejected", p: p25, body: nat(M{"omni_reference_task_type": nil}), kind: bad, param: "metadata.omni_reference_task_type"},
		{name: "2.5 omni reference without references rejected", p: p25, body: nat(M{"omni_reference_task_type": "reference"}), kind: bad, param: "metadata.omni_reference_task_type"},
		{name: "2.5 omni reference with a first frame only rejected", p: p25, body: nat(M{"omni_reference_task_type": "reference", "content": frame}), kind: bad, param: "metadata.omni_reference_task_type"},
		{name: "2.5 omni reference with an image accepted", p: p25, body: nat(M{"omni_reference_task_type": "reference", "content": items(img("reference_image", imgURL))}), check: wantMode(ModeReference)},
		{name: "2.5 omni reference with audio only accepted", p: p25, body: nat(M{"omni_reference_task_type": "reference", "content": items(aud(audURL))}), check: wantMode(ModeReference)},
		{name: "2.5 omni edit with a video accepted", p: p25, body: nat(M{"omni_reference_task_type": "edit", "content": items(vid(vidURL))}), check: wantMode(ModeEdit)},
		{name: "2.5 omni edit duration -1 accepted", p: p25, body: nat(M{"omni_reference_task_type": "edit", "duration": -1, "content": items(vid(vidURL))}), check: wantMode(ModeEdit)},
		{name: "2.5 omni edit ratio adaptive accepted", p: p25, body: nat(M{"omni_reference_task_type": "edit", "ratio": "adaptive", "content": items(vid(vidURL))})},
		{name: "2.5 omni edit without a video rejected", p: p25, body: nat(M{"omni_reference_task_type": "edit", "content": items(img("reference_image", imgURL))}), kind: bad, param: "metadata.omni_reference_task_type"},
		{name: "2.5 omni edit duration 5 rejected", p: p25, body: nat(M{"omni_reference_task_type": "edit", "duration": 5, "content": items(vid(vidURL))}), kind: bad, param: "metadata.duration"},
		{name: "2.5 omni edit ratio 16:9 rejected", p: p25, body: nat(M{"omni_reference_task_type": "edit", "ratio": "16:9", "content": items(vid(vidURL))}), kind: bad, param: "metadata.ratio"},
		{name: "2.5 omni extend with a video accepted", p: p25, body: nat(M{"omni_reference_task_type": "extend", "content": items(vid(vidURL))}), check: wantMode(ModeExtend)},
		{name: "2.5 omni extend duration 10 accepted", p: p25, body: nat(M{"omni_reference_task_type": "extend", "duration": 10, "content": items(vid(vidURL))}), check: wantNative(func(n *NativeParams) bool { return n.Duration == 10 }, "duration 10")},
		{name: "2.5 omni extend duration -1 accepted", p: p25, body: nat(M{"omni_reference_task_type": "extend", "duration": -1, "content": items(vid(vidURL))})},
		{name: "2.5 omni extend duration 31 rejected", p: p25, body: nat(M{"omni_reference_task_type": "extend", "duration": 31, "content": items(vid(vidURL))}), kind: bad, param: "metadata.duration"},
		{name: "2.5 omni extend ratio 9:16 rejected", p: p25, body: nat(M{"omni_reference_task_type": "extend", "ratio": "9:16", "content": items(vid(vidURL))}), kind: bad, param: "metadata.ratio"},
		{name: "2.5 omni extend without a video rejected", p: p25, body: nat(M{"omni_reference_task_type": "extend", "content": items(aud(audURL))}), kind: bad, param: "metadata.omni_reference_task_type"},
		{name: "2.5 auto with a reference video is reference mode", p: p25, body: nat(M{"content": items(vid(vidURL))}, M{"prompt": omit}), check: wantMode(ModeReference)},

		// Prompt, user, client_request_id.
		{name: "2.5 text without prompt rejected", p: p25, body: nat(nil, M{"prompt": omit}), kind: bad, param: "prompt"},
		{name: "2.5 text with blank prompt rejected", p: p25, body: nat(nil, M{"prompt": " \n "}), kind: bad, param: "prompt"},
		{name: "2.5 text with empty content and no prompt rejected", p: p25, body: nat(M{"content": items()}, M{"prompt": omit}), kind: bad, param: "prompt"},
		{name: "2.5 empty content with prompt is text mode", p: p25, body: nat(M{"content": items()}), check: wantMode(ModeText)},
		{name: "2.5 prompt optional with a first frame", p: p25, body: nat(M{"content": frame}, M{"prompt": omit}), check: func(t *testing.T, r *VideoRequest) {
			if r.HasPrompt || nativeOf(t, r).Mode != ModeFirstFrame {
				t.Errorf("got %+v", r)
			}
		}},
		{name: "2.5 empty prompt with a reference accepted", p: p25, body: nat(M{"content": items(img("reference_image", imgURL))}, M{"prompt": ""}), check: func(t *testing.T, r *VideoRequest) {
			if !r.HasPrompt || r.Prompt != "" {
				t.Errorf("prompt presence lost: %+v", r)
			}
		}},
		{name: "2.5 prompt null rejected", p: p25, body: nat(nil, M{"prompt": nil}), kind: bad, param: "prompt"},
		{name: "2.5 prompt number rejected", p: p25, body: nat(nil, M{"prompt": 7}), kind: bad, param: "prompt"},
		{name: "2.5 prompt over 32 KiB rejected", p: p25, body: nat(nil, M{"prompt": strings.Repeat("a", MaxPromptBytes+1)}), kind: bad, param: "prompt"},
		{name: "2.5 user accepted", p: p25, body: nat(nil, M{"user": "u-1"}), check: func(t *testing.T, r *VideoRequest) {
			if r.User != "u-1" {
				t.Errorf("user %q", r.User)
			}
		}},
		{name: "2.5 user number rejected", p: p25, body: nat(nil, M{"user": 1}), kind: bad, param: "user"},
		{name: "2.5 user too long rejected", p: p25, body: nat(nil, M{"user": strings.Repeat("u", MaxUserBytes+1)}), kind: bad, param: "user"},
		{name: "native client_request_id trimmed", p: p25, body: nat(M{"client_request_id": "  order-1\t"}), check: func(t *testing.T, r *VideoRequest) {
			if r.ClientRequestID != "order-1" {
				t.Errorf("client_request_id %q", r.ClientRequestID)
			}
		}},
		{name: "native client_request_id 64 bytes accepted", p: p25, body: nat(M{"client_request_id": strings.Repeat("k", 64)})},
		{name: "native client_request_id 65 bytes rejected", p: p25, body: nat(M{"client_request_id": strings.Repeat("k", 65)}), kind: bad, param: "metadata.client_request_id"},
		{name: "native client_request_id blank rejected", p: p25, body: nat(M{"client_request_id": "   "}), kind: bad, param: "metadata.client_request_id"},
		{name: "native client_request_id non-ASCII rejected", p: p25, body: nat(M{"client_request_id": "café"}), kind: bad, param: "metadata.client_request_id"},
		{name: "native client_request_id inner tab rejected", p: p25, body: nat(M{"client_request_id": "a\tb"}), kind: bad, param: "metadata.client_request_id"},
		{name: "native client_request_id number rejected", p: p25, body: nat(M{"client_request_id": 12}), kind: bad, param: "metadata.client_request_id"},

		// Frame modes take adaptive only.
		{name: "2.5 first frame accepted", p: p25, body: nat(M{"content": frame}), check: wantMode(ModeFirstFrame)},
		{name: "2.5 first frame ratio 16:9 rejected", p: p25, body: nat(M{"content": frame, "ratio": "16:9"}), kind: bad, param: "metadata.ratio"},
		{name: "2.5 first and last frame accepted", p: p25, body: nat(M{"content": items(img("first_frame", imgURL), img("last_frame", imgURL)), "ratio": "adaptive"}), check: wantMode(ModeFirstLastFrame)},
		{name: "2.5 first and last frame ratio 1:1 rejected", p: p25, body: nat(M{"content": items(img("first_frame", imgURL), img("last_frame", imgURL)), "ratio": "1:1"}), kind: bad, param: "metadata.ratio"},
		{name: "2.5 reference ratio 21:9 accepted", p: p25, body: nat(M{"content": items(img("reference_image", imgURL)), "ratio": "21:9"}), check: wantNative(func(n *NativeParams) bool { return n.Ratio == "21:9" }, "21:9")},

		// Standard 2.0.
		{name: "standard 2.0 default resolution 720p", p: pStd20, body: nat(nil), check: wantNative(func(n *NativeParams) bool { return n.Resolution == "720p" && n.Duration == -1 }, "720p, -1")},
		{name: "standard 2.0 duration 15 accepted", p: pStd20, body: nat(M{"duration": 15})},
		{name: "standard 2.0 duration -1 accepted", p: pStd20, body: nat(M{"duration": -1})},
		{name: "standard 2.0 duration 16 rejected", p: pStd20, body: nat(M{"duration": 16}), kind: bad, param: "metadata.duration"},
		{name: "standard 2.0 resolution 1080p accepted", p: pStd20, body: nat(M{"resolution": "1080p"})},
		{name: "standard 2.0 resolution 4k without package denied", p: pStd20, body: nat(M{"resolution": "4k"}), kind: deny, param: "metadata.resolution"},
		{name: "standard 2.0 resolution 4k with package accepted", p: pStd20, e: entAll, body: nat(M{"resolution": "4k"}), check: wantNative(func(n *NativeParams) bool { return n.Resolution == "4k" }, "4k")},
		{name: "standard 2.0 invalid field reported before the 4k denial", p: pStd20, body: nat(M{"resolution": "4k", "ratio": "5:4"}), kind: bad, param: "metadata.ratio"},
		{name: "standard 2.0 resolution 8k rejected", p: pStd20, e: entAll, body: nat(M{"resolution": "8k"}), kind: bad, param: "metadata.resolution"},
		{name: "standard 2.0 seed accepted", p: pStd20, body: nat(nil, M{"seed": 42}), check: func(t *testing.T, r *VideoRequest) {
			if r.Seed == nil || *r.Seed != 42 {
				t.Errorf("seed %v", r.Seed)
			}
		}},
		{name: "standard 2.0 seed -1 accepted", p: pStd20, body: nat(nil, M{"seed": -1})},
		{name: "standard 2.0 large seed kept exactly", p: pStd20, body: nat(nil, M{"seed": raw("9007199254740993")}), check: func(t *testing.T, r *VideoRequest) {
			if r.Seed == nil || *r.Seed != 9007199254740993 {
				t.Errorf("seed %v", r.Seed)
			}
		}},
		{name: "standard 2.0 seed 1.5 rejected", p: pStd20, body: nat(nil, M{"seed": 1.5}), kind: bad, param: "seed"},
		{name: "standard 2.0 seed string rejected", p: pStd20, body: nat(nil, M{"seed": "42"}), kind: bad, param: "seed"},
		{name: "standard 2.0 seed null rejected", p: pStd20, body: nat(nil, M{"seed": nil}), kind: bad, param: "seed"},
		{name: "standard 2.0 omni task type rejected", p: pStd20, body: nat(M{"omni_reference_task_type": "auto"}), kind: bad, param: "metadata.omni_reference_task_type"},
		{name: "standard 2.0 reference video accepted", p: pStd20, body: nat(M{"content": items(vid(vidURL), aud(audURL))}), check: wantMode(ModeReference)},
		{name: "standard 2.0 watermark accepted", p: pStd20, body: nat(M{"watermark": false})},

		// Fast 2.0.
		{name: "fast 2.0 720p accepted", p: pFast20, body: nat(M{"resolution": "720p"})},
		{name: "fast 2.0 480p accepted", p: pFast20, body: nat(M{"resolution": "480p"})},
		{name: "fast 2.0 1080p rejected", p: pFast20, body: nat(M{"resolution": "1080p"}), kind: bad, param: "metadata.resolution"},
		{name: "fast 2.0 4k rejected even with the 4k package", p: pFast20, e: entAll, body: nat(M{"resolution": "4k"}), kind: bad, param: "metadata.resolution"},
		{name: "fast 2.0 duration 15 accepted", p: pFast20, body: nat(M{"duration": 15})},
		{name: "fast 2.0 duration 16 rejected", p: pFast20, body: nat(M{"duration": 16}), kind: bad, param: "metadata.duration"},
		{name: "fast 2.0 seed accepted", p: pFast20, body: nat(nil, M{"seed": 7})},

		// Mini 2.0.
		{name: "mini 2.0 duration 4 accepted", p: pMini20, body: nat(M{"duration": 4})},
		{name: "mini 2.0 duration 15 accepted", p: pMini20, body: nat(M{"duration": 15})},
		{name: "mini 2.0 duration omitted accepted", p: pMini20, body: nat(nil), check: wantNative(func(n *NativeParams) bool { return n.Duration == -1 }, "duration -1 (model default)")},
		{name: "mini 2.0 duration 16 rejected", p: pMini20, body: nat(M{"duration": 16}), kind: bad, param: "metadata.duration"},
		{name: "mini 2.0 duration 3 rejected", p: pMini20, body: nat(M{"duration": 3}), kind: bad, param: "metadata.duration"},
		{name: "mini 2.0 duration -1 rejected", p: pMini20, body: nat(M{"duration": -1}), kind: bad, param: "metadata.duration"},
		{name: "mini 2.0 480p accepted", p: pMini20, body: nat(M{"resolution": "480p"})},
		{name: "mini 2.0 1080p rejected", p: pMini20, body: nat(M{"resolution": "1080p"}), kind: bad, param: "metadata.resolution"},
		{name: "mini 2.0 4k rejected", p: pMini20, e: entAll, body: nat(M{"resolution": "4k"}), kind: bad, param: "metadata.resolution"},

		// Misplaced and forbidden fields.
		{name: "native top-level duration rejected", p: p25, body: nat(nil, M{"duration": 5}), kind: bad, param: "duration"},
		{name: "native top-level resolution rejected", p: p25, body: nat(nil, M{"resolution": "720p"}), kind: bad, param: "resolution"},
		{name: "native top-level task_type rejected", p: p25, body: nat(nil, M{"task_type": "t2v"}), kind: bad, param: "task_type"},
		{name: "native metadata task_type rejected", p: p25, body: nat(M{"task_type": "t2v"}), kind: bad, param: "metadata.task_type"},
		{name: "native top-level mode rejected", p: p25, body: nat(nil, M{"mode": "text"}), kind: bad, param: "mode"},
		{name: "native metadata fps rejected", p: p25, body: nat(M{"fps": 30}), kind: bad, param: "metadata.fps"},
		{name: "native metadata video_url rejected", p: p25, body: nat(M{"video_url": vidURL}), kind: bad, param: "metadata.video_url"},
		{name: "native metadata tool_version rejected", p: p25, body: nat(M{"tool_version": "standard"}), kind: bad, param: "metadata.tool_version"},
		{name: "native callback_url rejected", p: p25, body: nat(nil, M{"callback_url": "https://x.example"}), kind: bad, param: "callback_url"},
		{name: "native metadata unknown field rejected", p: p25, body: nat(M{"foo": 1}), kind: bad, param: "metadata.foo"},
		{name: "native metadata string rejected", p: p25, body: nat(nil, M{"metadata": "x"}), kind: bad, param: "metadata"},
		{name: "native metadata null rejected", p: p25, body: nat(nil, M{"metadata": nil}), kind: bad, param: "metadata"},
		{name: "native unknown field reported in body order", p: p25, body: `{"model":"vid","zzz":1,"aaa":2,"prompt":"x"}`, kind: bad, param: "zzz"},
	}
	for _, r := range allRatios {
		cases = append(cases, tc{name: "2.5 text ratio " + r + " accepted", p: p25, body: nat(M{"ratio": r}),
			check: wantNative(func(n *NativeParams) bool { return n.Ratio == r }, "ratio "+r)})
	}
	return cases
}
