package httpapi

import (
	"fmt"
	"strings"
	"testing"

	"mediagen/internal/store"
)

// spBody builds a speech body: top-level members as raw JSON, metadata as raw JSON ("" leaves
// it out).
func spBody(top, meta string) string {
	b := `{"model":"acme-speech"`
	if top != "" {
		b += "," + top
	}
	if meta != "" {
		b += `,"metadata":` + meta
	}
	return b + "}"
}

func jstr(s string) string { return fmt.Sprintf("%q", s) }

func refsMeta(refs ...string) string { return `{"references":[` + strings.Join(refs, ",") + `]}` }

func ref(typ, url string) string { return `{"type":"` + typ + `","url":` + jstr(url) + `}` }

type speechReject struct {
	name, body, param string
}

// speechRejections are the contract's speech rules at the HTTP level: every row is answered
// 400 invalid_request_error with the field in param, before anything is recorded or charged.
func speechRejections() []speechReject {
	in := `"input":"Hello there."`
	rs := []speechReject{
		// model
		{"model missing", `{"input":"Hi"}`, "model"},
		{"model unknown alias", `{"model":"nope","input":"Hi"}`, "model"},
		{"model is a video alias", `{"model":"acme-video-2.5","input":"Hi"}`, "model"},
		{"model is the upstream model name", `{"model":"sandbox-speech","input":"Hi"}`, "model"},
		{"model is another tenant's alias", `{"model":"lim-video","input":"Hi"}`, "model"},
		{"model not a string", `{"model":5,"input":"Hi"}`, "model"},
		// input and instructions
		{"input and instructions missing", spBody("", ""), "input"},
		{"input blank", spBody(`"input":"  \n "`, ""), "input"},
		{"input null", spBody(`"input":null`, ""), "input"},
		{"input number", spBody(`"input":5`, ""), "input"},
		{"instructions object", spBody(in+`,"instructions":{"tone":"warm"}`, ""), "instructions"},
		{"input control character", spBody(`"input":"a\u0000b"`, ""), "input"},
		{"3001 ASCII characters", spBody(`"input":`+jstr(strings.Repeat("a", 3001)), ""), "input"},
		{"3001 two-byte characters", spBody(`"input":`+jstr(strings.Repeat("é", 3001)), ""), "input"},
		{"3001 three-byte characters", spBody(`"input":`+jstr(strings.Repeat("漢", 3001)), ""), "input"},
		{"3001 four-byte characters", spBody(`"input":`+jstr(strings.Repeat("😀", 3001)), ""), "input"},
		{"1500 + newline + 1500 combined", spBody(`"input":`+jstr(strings.Repeat("漢", 1500))+`,"instructions":`+jstr(strings.Repeat("é", 1500)), ""), "input"},
		{"instructions alone 3001", spBody(`"instructions":`+jstr(strings.Repeat("😀", 3001)), ""), "input"},
		// strict JSON
		{"duplicate member", spBody(in+`,"input":"again"`, ""), "input"},
		{"capitalised member", `{"Model":"acme-speech","input":"Hi"}`, "Model"},
		{"trailing data", spBody(in, "") + ` {}`, ""},
		{"metadata null", spBody(in+`,"metadata":null`, ""), "metadata"},
		// metadata
		{"client_request_id too long", spBody(in, `{"client_request_id":`+jstr(strings.Repeat("x", 65))+`}`), "metadata.client_request_id"},
		{"client_request_id empty", spBody(in, `{"client_request_id":""}`), "metadata.client_request_id"},
		{"client_request_id at top level", spBody(in+`,"client_request_id":"a"`, ""), "client_request_id"},
		{"references at top level", spBody(in+`,"references":[]`, ""), "references"},
		{"unknown metadata field", spBody(in, `{"foo":1}`), "metadata.foo"},
		// modes
		{"four audio references", spBody(in, refsMeta(ref("audio_url", "https://cdn.example.com/1.mp3"), ref("audio_url", "https://cdn.example.com/2.mp3"),
			ref("audio_url", "https://cdn.example.com/3.mp3"), ref("audio_url", "https://cdn.example.com/4.mp3"))), "metadata.references"},
		{"two image references", spBody(in, refsMeta(ref("image_url", "https://cdn.example.com/1.png"), ref("image_url", "https://cdn.example.com/2.png"))), "metadata.references"},
		{"audio and image mixed", spBody(in, refsMeta(ref("audio_url", "https://cdn.example.com/1.mp3"), ref("image_url", "https://cdn.example.com/2.png"))), "metadata.references"},
		{"reference type video_url", spBody(in, refsMeta(ref("video_url", "https://cdn.example.com/1.mp4"))), "metadata.references[0].type"},
		{"reference without url", spBody(in, refsMeta(`{"type":"audio_url"}`)), "metadata.references[0].url"},
		{"reference with role", spBody(in, refsMeta(`{"type":"audio_url","url":"https://cdn.example.com/1.mp3","role":"reference_audio"}`)), "metadata.references[0].role"},
		{"reference not an object", spBody(in, refsMeta(`"https://cdn.example.com/1.mp3"`)), "metadata.references[0]"},
		{"references null", spBody(in, `{"references":null}`), "metadata.references"},
	}
	// Every field the contract names as not accepted, at the top level and under metadata.
	for _, f := range []string{"voice", "voices", "custom_voice", "voice_id", "voice_type", "speaker", "speaker_id",
		"voice_clone", "clone", "clone_voice", "audio_data", "image_data", "base64", "data",
		"project", "project_id", "app_id", "appid", "cluster", "resource_id", "namespace",
		"response_format", "format", "speed", "pitch", "emotion", "stream", "api_key", "callback_url",
		"prompt", "text", "mode", "user", "foo"} {
		rs = append(rs,
			speechReject{"top-level " + f, spBody(in+`,"`+f+`":"x"`, ""), f},
			speechReject{"metadata." + f, spBody(in, `{"`+f+`":"x"}`), "metadata." + f})
	}
	rs = append(rs, speechReject{"voice_id inside a reference", spBody(in, refsMeta(`{"type":"audio_url","url":"https://cdn.example.com/1.mp3","voice_id":"v1"}`)), "metadata.references[0].voice_id"},
		speechReject{"audio_data inside a reference", spBody(in, refsMeta(`{"type":"audio_url","audio_data":"UklGRg=="}`)), "metadata.references[0].audio_data"})
	// Every URL form the contract rejects, for both reference types; the second item of a
	// valid pair is the bad one, so the index in param is checked too.
	for _, u := range []struct{ name, url string }{
		{"http", "http://cdn.example.com/v.mp3"},
		{"file", "file:///etc/passwd"},
		{"asset", "asset://asset-123"},
		{"data", "data:audio/mpeg;base64,SUQzBAAAAAAAAA=="},
		{"bare base64", "SUQzBAAAAAAAI1RTU0UAAAAPAAADTGF2ZjYwLjE2LjEwMAAAAAAAAAAAAAAA"},
		{"localhost", "https://localhost/v.mp3"},
		{"localhost subdomain", "https://api.localhost/v.mp3"},
		{"dot local", "https://nas.local/v.mp3"},
		{"dot internal", "https://metadata.google.internal/v.mp3"},
		{"loopback IPv4", "https://127.0.0.1/v.mp3"},
		{"loopback IPv6", "https://[::1]/v.mp3"},
		{"private 10/8", "https://10.1.2.3/v.mp3"},
		{"private 192.168/16", "https://192.168.0.10/v.mp3"},
		{"link-local metadata", "https://169.254.169.254/latest/meta-data"},
		{"IPv4-mapped loopback", "https://[::ffff:127.0.0.1]/v.mp3"},
		{"numeric host", "https://2130706433/v.mp3"},
		{"hex host", "https://0x7f000001/v.mp3"},
		{"single-label host", "https://intranet/v.mp3"},
		{"credentials", "https://user:pass@cdn.example.com/v.mp3"},
		{"ftp", "ftp://cdn.example.com/v.mp3"},
		{"relative", "/v.mp3"},
		{"empty", ""},
	} {
		rs = append(rs,
			speechReject{"audio url " + u.name, spBody(in, refsMeta(ref("audio_url", "https://cdn.example.com/ok.mp3"), ref("audio_url", u.url))), "metadata.references[1].url"},
			speechReject{"image url " + u.name, spBody(in, refsMeta(ref("image_url", u.url))), "metadata.references[0].url"})
	}
	return rs
}

func TestSpeechContractRejectsWithoutRecordOrCharge(t *testing.T) {
	t.Parallel()
	se := newSpeechEnv(t)
	rs := speechRejections()
	if len(rs) < 140 {
		t.Fatalf("only %d rows", len(rs))
	}
	seen := map[string]bool{}
	for _, c := range rs {
		if seen[c.name] {
			t.Fatalf("duplicate row %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			decodeErr(t, se.post(se.key, c.body), 400, "invalid_request_error", "invalid_request_error", c.param)
		})
	}
	if n := se.engine.calls.Load(); n != 0 {
		t.Errorf("the engine was called %d times", n)
	}
	se.checkUntouched(t)
	// Transport-level rejections are not charged either.
	r := se.do("POST", "/v1/audio/speech", map[string]string{"Authorization": "Bearer " + se.key, "Content-Type": "text/plain"}, spBody(`"input":"Hi"`, ""))
	decodeErr(t, r, 415, "invalid_request_error", "unsupported_media_type", "")
	decodeErr(t, se.post("mg_wrong", spBody(`"input":"Hi"`, "")), 401, "authentication_error", "invalid_api_key", "")
	r = se.do("GET", "/v1/audio/speech", map[string]string{"Authorization": "Bearer " + se.key}, "")
	decodeErr(t, r, 405, "invalid_request_error", "method_not_allowed", "")
	se.checkUntouched(t)
}

// The 3000-character limit counts code points of the combined text: exactly 3000 (multibyte,
// and 1500 + newline + 1499 across input and instructions) is accepted, recorded and reserved.
// The [sandbox:fail] marker inside the text makes the engine fail afterwards, which proves the
// request got past validation (502, not 400) and refunds the reservation in full.
func TestSpeechExactly3000CharactersAccepted(t *testing.T) {
	t.Parallel()
	se := newSpeechEnv(t)
	marker := "[sandbox:fail] "
	fill := func(s string, n int) string { return strings.Repeat(s, n) }
	bodies := []string{
		spBody(`"input":`+jstr(marker+fill("漢", 3000-len(marker))), ""),
		spBody(`"input":`+jstr(marker+fill("😀", 3000-len(marker))), ""),
		spBody(`"input":`+jstr(marker+fill("é", 1500-len(marker)))+`,"instructions":`+jstr(fill("漢", 1499)), ""),
		spBody(`"instructions":`+jstr(marker+fill("😀", 3000-len(marker))), ""),
	}
	for i, b := range bodies {
		r := se.post(se.key, b)
		decodeErr(t, r, 502, "api_error", "speech_generation_failed", "")
		// One more character is a 400.
		over := strings.Replace(b, marker, marker+"x", 1)
		decodeErr(t, se.post(se.key, over), 400, "invalid_request_error", "invalid_request_error", "input")
		if n := se.engine.calls.Load(); n != int64(i+1) {
			t.Fatalf("engine calls %d after %d accepted requests", n, i+1)
		}
	}
	// Each accepted request reserved the engine's bound for its text and got it back.
	res, err := se.store.Entries(t.Context(), store.AccountID(se.keyRec.ID, store.AccountReserved))
	if err != nil || len(res) != 2*len(bodies) {
		t.Fatalf("reserved entries %v, %v", res, err)
	}
	for i := 0; i < len(res); i += 2 {
		if res[i].Amount <= 0 || res[i+1].Amount != -res[i].Amount {
			t.Errorf("reservation %d: %+v %+v", i/2, res[i], res[i+1])
		}
	}
	if b := se.balance(); b.Available != startCredit || b.Used != 0 || b.Reserved != 0 {
		t.Errorf("balance %+v", b)
	}
}
