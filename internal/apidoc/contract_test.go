package apidoc

import (
	"strings"
	"testing"

	"mediagen/internal/contract"
)

// Every body the contract decoder accepts must be accepted by the document too: a stricter
// document would make Check report correct traffic. The decoder is the reference for the
// rules the schemas express (enums, ranges, cross-field mode rules, client_request_id).
func TestDocumentAcceptsWhatTheDecoderAccepts(t *testing.T) {
	var (
		p25     = contract.Product{Route: contract.RouteNative, Family: contract.Family25}
		pStd    = contract.Product{Route: contract.RouteNative, Family: contract.FamilyStandard20}
		pFast   = contract.Product{Route: contract.RouteNative, Family: contract.FamilyFast20}
		pMini   = contract.Product{Route: contract.RouteNative, Family: contract.FamilyMini20}
		prLite  = contract.Product{Route: contract.RouteProduction, Tier: contract.TierLite}
		prStd   = contract.Product{Route: contract.RouteProduction, Tier: contract.TierStandard}
		prPro   = contract.Product{Route: contract.RouteProduction, Tier: contract.TierPro}
		enhLite = contract.Product{Route: contract.RouteEnhancement, Enh: contract.EnhLite}
		enhStd  = contract.Product{Route: contract.RouteEnhancement, Enh: contract.EnhStandard}
		all     = contract.Entitlements{Native4K: true, Enhance8K: true, Production: true,
			ProductionResolutions: map[string]bool{"1080p": true, "2k": true, "4k": true}, LastFrame: true}
	)
	img := func(role string) string {
		return `{"type":"image_url","role":"` + role + `","image_url":{"url":"https://cdn.example.com/i.png"}}`
	}
	vid := `{"type":"video_url","role":"reference_video","video_url":{"url":"asset://clip-1"}}`
	aud := `{"type":"audio_url","role":"reference_audio","audio_url":{"url":"HTTPS://cdn.example.com/a.mp3"}}`
	cases := []struct {
		p    contract.Product
		body string
	}{
		{p25, `{"model":"a","prompt":"p"}`},
		{p25, `{"model":"a","prompt":"p","user":"","metadata":{}}`},
		{p25, `{"model":"a","prompt":"p","metadata":{"duration":30,"resolution":"1080p","ratio":"3:4","watermark":true,"generate_audio":false,"output_format":"mov","return_last_frame":true}}`},
		{p25, `{"model":"a","metadata":{"content":[` + img("first_frame") + `,` + img("last_frame") + `]}}`},
		{p25, `{"model":"a","prompt":"","metadata":{"content":[` + img("first_frame") + `],"ratio":"adaptive","duration":-1}}`},
		{p25, `{"model":"a","metadata":{"content":[` + vid + `,` + aud + `,` + img("reference_image") + `],"omni_reference_task_type":"reference","ratio":"9:16"}}`},
		{p25, `{"model":"a","prompt":"p","metadata":{"content":[` + vid + `],"omni_reference_task_type":"edit","duration":-1}}`},
		{p25, `{"model":"a","prompt":"p","metadata":{"content":[` + vid + `],"omni_reference_task_type":"extend","duration":4}}`},
		{p25, `{"model":"a","metadata":{"content":[` + aud + `]}}`},
		{p25, `{"model":"a","prompt":"p","metadata":{"content":[],"client_request_id":"\t` + strings.Repeat("x", 64) + ` "}}`},
		{pStd, `{"model":"s","prompt":"p","seed":9223372036854775807,"metadata":{"resolution":"4k","duration":15}}`},
		{pFast, `{"model":"f","prompt":"p","seed":0,"metadata":{"resolution":"480p","ratio":"21:9","duration":-1}}`},
		{pMini, `{"model":"m","prompt":"p","metadata":{"duration":4,"resolution":"720p"}}`},
		{prLite, `{"model":"l","prompt":"p","metadata":{"resolution":"1080p","fps":60,"bitrate_level":"medium","bitrate":10}}`},
		{prStd, `{"model":"s","metadata":{"resolution":"2k","content":[` + vid + `],"omni_reference_task_type":"extend","scene":"common","enhance_style":"hd","return_last_frame":true}}`},
		{prPro, `{"model":"p","prompt":"p","user":"u","metadata":{"resolution":"4k","bit_depth":8,"enhance_style":"natural","duration":-1,"ratio":"4:3","generate_audio":true,"watermark":false,"client_request_id":"c"}}`},
		{prPro, `{"model":"p","metadata":{"resolution":"1080p","content":[` + img("first_frame") + `]}}`},
		{enhLite, `{"model":"e","metadata":{"video_url":"https://cdn.example.com/v.mp4","duration":0.5,"resolution":"1080p","fps":30}}`},
		{enhLite, `{"model":"e","prompt":"","metadata":{"video_url":"http://cdn.example.com/v.mp4","duration":86400,"resolution_limit":2160}}`},
		{enhStd, `{"model":"e","prompt":null,"metadata":{"video_url":"https://cdn.example.com/v.mp4","duration":7,"resolution_limit":4320,"scene":"short_series","enhance_style":"natural"}}`},
		{enhStd, `{"model":"e","prompt":[1,2],"metadata":{"video_url":"https://cdn.example.com/v.mp4","duration":7,"resolution":"8k","tool_version":"professional","bit_depth":16,"bitrate":150000,"bitrate_level":"high","client_request_id":"abc"}}`},
	}
	d := doc(t)
	for i, c := range cases {
		v, err := contract.ParseVideo([]byte(c.body))
		if err == nil {
			_, err = v.Decode(c.p, all)
		}
		if err != nil {
			t.Errorf("case %d: test bug, the decoder rejects it (%s: %s)", i, err.Param, err.Message)
			continue
		}
		if err := d.ValidateRequest("POST", "/v1/videos", jsonReq(), []byte(c.body)); err != nil {
			t.Errorf("case %d: the decoder accepts it, the document does not:\n%v", i, err)
		}
	}
}
