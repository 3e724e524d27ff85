package contract

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"mediagen/internal/apierr"
)

// stc is one speech contract table row; param "" with fail false means accepted.
type stc struct {
	name  string
	body  string
	fail  bool
	param string
	// msg, when set, must appear in the error message (used to prove a specific hint fired).
	msg   string
	check func(t *testing.T, r *SpeechRequest)
}

const (
	spAudURL = "https://cdn.example.com/voice.wav"
	spImgURL = "https://cdn.example.com/face.png"
)

// sp builds a valid text-mode speech body changed by top; meta nil leaves metadata out.
func sp(top, meta M) string {
	return body(merge(M{"model": "tts", "input": "Hello there."}, top), meta)
}

func sref(typ, url string) M { return M{"type": typ, "url": url} }

// withRefs is a valid body whose metadata.references are refs.
func withRefs(refs ...M) string { return sp(nil, M{"references": items(refs...)}) }

// withURL is a valid audio-mode body with one reference of url.
func withURL(url string) string { return withRefs(sref("audio_url", url)) }

func runSpeechTable(t *testing.T, cases []stc) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Errorf("duplicate case name %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			r, err := DecodeSpeech([]byte(c.body))
			if !c.fail {
				if err != nil {
					t.Fatalf("rejected: %v\nbody: %.300s", err, c.body)
				}
				checkSpeechAccepted(t, r)
				if c.check != nil {
					c.check(t, r)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want param %q\nbody: %.300s", c.param, c.body)
			}
			if r != nil {
				t.Error("request returned with an error")
			}
			checkSpeechError(t, err)
			t.Logf("%s (%s)", err.Message, err.Param)
			if err.Param != c.param {
				t.Fatalf("got param %q (%s), want %q\nbody: %.300s", err.Param, err.Message, c.param, c.body)
			}
			if c.msg != "" && !strings.Contains(err.Message, c.msg) {
				t.Fatalf("message %q does not contain %q", err.Message, c.msg)
			}
		})
	}
}

func checkSpeechError(t *testing.T, e *apierr.Error) {
	t.Helper()
	checkMessage(t, e)
	if e.Kind != apierr.KindInvalid {
		t.Errorf("kind %d, want KindInvalid", e.Kind)
	}
	if e.Status() != 400 || e.Type() != "invalid_request_error" {
		t.Errorf("kind maps to %d %s", e.Status(), e.Type())
	}
	// Messages are sentences: capital or field name first, full stop last.
	if !strings.HasSuffix(e.Message, ".") {
		t.Errorf("message %q does not end with a full stop", e.Message)
	}
}

// checkSpeechAccepted asserts what every accepted request satisfies, whatever the body was.
func checkSpeechAccepted(t *testing.T, r *SpeechRequest) {
	t.Helper()
	if r == nil {
		t.Fatal("nil request without error")
	}
	if strings.TrimSpace(r.Model) == "" || len(r.Model) > MaxModelBytes {
		t.Fatalf("model %q", r.Model)
	}
	if r.Input != strings.TrimSpace(r.Input) || r.Instructions != strings.TrimSpace(r.Instructions) {
		t.Fatalf("untrimmed text %q / %q", r.Input, r.Instructions)
	}
	var want string
	switch {
	case r.Input != "" && r.Instructions != "":
		want = r.Input + "\n" + r.Instructions
	case r.Input != "":
		want = r.Input
	default:
		want = r.Instructions
	}
	if r.Text == "" || r.Text != want {
		t.Fatalf("text %q, want %q", r.Text, want)
	}
	if n := utf8.RuneCountInString(r.Text); n > MaxSpeechChars || !utf8.ValidString(r.Text) {
		t.Fatalf("text of %d characters (valid %v)", n, utf8.ValidString(r.Text))
	}
	if len(r.ClientRequestID) > MaxClientRequestIDBytes || strings.TrimSpace(r.ClientRequestID) != r.ClientRequestID {
		t.Fatalf("client_request_id %q", r.ClientRequestID)
	}
	audio, image := 0, 0
	for _, ref := range r.References {
		switch ref.Type {
		case SpeechRefAudio:
			audio++
		case SpeechRefImage:
			image++
		default:
			t.Fatalf("reference type %q", ref.Type)
		}
		if !strings.HasPrefix(strings.ToLower(ref.URL), "https://") || len(ref.URL) > MaxURLBytes {
			t.Fatalf("reference url %q", ref.URL)
		}
	}
	switch r.Mode {
	case SpeechModeText:
		if r.References != nil {
			t.Fatalf("text mode with references %+v", r.References)
		}
	case SpeechModeAudio:
		if audio < 1 || audio > MaxSpeechAudioReferences || image != 0 {
			t.Fatalf("audio mode with %d audio, %d image", audio, image)
		}
	case SpeechModeImage:
		if image != 1 || audio != 0 {
			t.Fatalf("image mode with %d audio, %d image", audio, image)
		}
	default:
		t.Fatalf("mode %q", r.Mode)
	}
}

func wantText(text string) func(*testing.T, *SpeechRequest) {
	return func(t *testing.T, r *SpeechRequest) {
		t.Helper()
		if r.Text != text {
			t.Errorf("text %q, want %q", r.Text, text)
		}
	}
}

func wantSpeechMode(mode string, refs ...SpeechReference) func(*testing.T, *SpeechRequest) {
	return func(t *testing.T, r *SpeechRequest) {
		t.Helper()
		if r.Mode != mode || !slices.Equal(r.References, refs) {
			t.Errorf("mode %q refs %+v, want %q %+v", r.Mode, r.References, mode, refs)
		}
	}
}

func TestSpeechContract(t *testing.T) { runSpeechTable(t, speechCases()) }

func TestSpeechCaseCount(t *testing.T) {
	n := len(speechCases())
	t.Logf("%d speech contract table cases", n)
	if n < 80 {
		t.Errorf("only %d speech table cases", n)
	}
}

func speechCases() []stc {
	var cs []stc
	for _, f := range []func() []stc{speechBasicCases, speechStrictCases, speechTextCases, speechMetadataCases,
		speechReferenceCases, speechURLCases, speechForbiddenCases} {
		cs = append(cs, f()...)
	}
	return cs
}

func speechBasicCases() []stc {
	return []stc{
		{name: "speech minimal text request accepted", body: `{"model":"tts","input":"Hello there."}`, check: func(t *testing.T, r *SpeechRequest) {
			want := SpeechRequest{Model: "tts", Input: "Hello there.", Text: "Hello there.", Mode: SpeechModeText}
			if fmt.Sprint(*r) != fmt.Sprint(want) {
				t.Errorf("got %+v", *r)
			}
		}},
		{name: "speech full request accepted", body: sp(M{"instructions": "Warm and slow."}, M{"client_request_id": "req-1", "references": items(sref("audio_url", spAudURL))}),
			check: func(t *testing.T, r *SpeechRequest) {
				if r.Text != "Hello there.\nWarm and slow." || r.ClientRequestID != "req-1" || r.Instructions != "Warm and slow." {
					t.Errorf("got %+v", *r)
				}
				wantSpeechMode(SpeechModeAudio, SpeechReference{Type: SpeechRefAudio, URL: spAudURL})(t, r)
			}},
		{name: "speech empty metadata accepted", body: sp(nil, M{}), check: wantSpeechMode(SpeechModeText)},
		{name: "speech field order is free", body: `{"metadata":{"references":[{"url":"` + spAudURL + `","type":"audio_url"}]},"input":"Hi","model":"tts"}`,
			check: wantSpeechMode(SpeechModeAudio, SpeechReference{Type: SpeechRefAudio, URL: spAudURL})},
	}
}

func speechStrictCases() []stc {
	return []stc{
		{name: "speech Model capitalised rejected", body: `{"Model":"tts","input":"x"}`, fail: true, param: "Model", msg: "case-sensitive"},
		{name: "speech Input capitalised rejected", body: `{"model":"tts","Input":"x"}`, fail: true, param: "Input", msg: "use input"},
		{name: "speech escaped name is the same name", body: `{"model":"tts","\u0069nput":"x"}`, check: wantText("x")},
		{name: "speech duplicate input rejected", body: `{"model":"tts","input":"a","input":"b"}`, fail: true, param: "input"},
		{name: "speech duplicate via escape rejected", body: `{"model":"tts","input":"a","inp\u0075t":"b"}`, fail: true, param: "input"},
		{name: "speech duplicate metadata key rejected", body: `{"model":"tts","input":"a","metadata":{"client_request_id":"a","client_request_id":"b"}}`, fail: true, param: "metadata.client_request_id"},
		{name: "speech duplicate reference key rejected", body: `{"model":"tts","input":"a","metadata":{"references":[{"type":"audio_url","url":"` + spAudURL + `","url":"` + spAudURL + `"}]}}`, fail: true, param: "metadata.references[0].url"},
		{name: "speech trailing data rejected", body: `{"model":"tts","input":"a"} {}`, fail: true, param: ""},
		{name: "speech trailing white space accepted", body: "{\"model\":\"tts\",\"input\":\"a\"}\n\t "},
		{name: "speech array body rejected", body: `[{"model":"tts","input":"a"}]`, fail: true, param: ""},
		{name: "speech null body rejected", body: `null`, fail: true, param: ""},
		{name: "speech empty body rejected", body: ``, fail: true, param: ""},
		{name: "speech truncated body rejected", body: `{"model":"tts","input":"a"`, fail: true, param: ""},
		{name: "speech invalid UTF-8 rejected", body: "{\"model\":\"tts\",\"input\":\"caf\xc3\"}", fail: true, param: ""},
		{name: "speech lone surrogate escape rejected", body: `{"model":"tts","input":"\ud83d"}`, fail: true, param: "input"},
		{name: "speech model missing rejected", body: `{"input":"a"}`, fail: true, param: "model"},
		{name: "speech model empty rejected", body: sp(M{"model": ""}, nil), fail: true, param: "model"},
		{name: "speech model blank rejected", body: sp(M{"model": "  "}, nil), fail: true, param: "model"},
		{name: "speech model number rejected", body: sp(M{"model": 1}, nil), fail: true, param: "model"},
		{name: "speech model null rejected", body: sp(M{"model": nil}, nil), fail: true, param: "model"},
		{name: "speech model too long rejected", body: sp(M{"model": strings.Repeat("m", MaxModelBytes+1)}, nil), fail: true, param: "model"},
		{name: "speech input number rejected", body: sp(M{"input": 5}, nil), fail: true, param: "input", msg: "must be a string"},
		{name: "speech input null rejected", body: sp(M{"input": nil}, nil), fail: true, param: "input", msg: "null"},
		{name: "speech input array rejected", body: sp(M{"input": []any{"a"}}, nil), fail: true, param: "input"},
		{name: "speech input boolean rejected", body: sp(M{"input": true}, nil), fail: true, param: "input"},
		{name: "speech instructions null rejected", body: sp(M{"instructions": nil}, nil), fail: true, param: "instructions"},
		{name: "speech instructions object rejected", body: sp(M{"instructions": M{"tone": "warm"}}, nil), fail: true, param: "instructions"},
		{name: "speech metadata null rejected", body: sp(M{"metadata": nil}, nil), fail: true, param: "metadata"},
		{name: "speech metadata array rejected", body: sp(M{"metadata": []any{}}, nil), fail: true, param: "metadata"},
		{name: "speech metadata string rejected", body: sp(M{"metadata": "x"}, nil), fail: true, param: "metadata"},
		{name: "speech unknown top-level field rejected", body: sp(M{"foo": 1}, nil), fail: true, param: "foo", msg: "not a supported field"},
		{name: "speech unknown top-level user rejected", body: sp(M{"user": "u1"}, nil), fail: true, param: "user"},
		{name: "speech unknown metadata field rejected", body: sp(nil, M{"foo": "bar"}), fail: true, param: "metadata.foo"},
		{name: "speech unknown reference field rejected", body: withRefs(sref("audio_url", spAudURL), merge(sref("audio_url", spAudURL), M{"foo": 1})), fail: true, param: "metadata.references[1].foo"},
		{name: "speech reference URL capitalised rejected", body: withRefs(M{"type": "audio_url", "URL": spAudURL}), fail: true, param: "metadata.references[0].URL", msg: "use metadata.references[0].url"},
		{name: "speech unknown field rejected before a bad model", body: `{"model":5,"foo":1}`, fail: true, param: "foo"},
		{name: "speech deep nesting rejected", body: sp(nil, M{"references": raw(nested(MaxDepth))}), fail: true, param: "metadata.references" + strings.Repeat("[0]", MaxDepth-2)},
	}
}

func speechTextCases() []stc {
	rep := strings.Repeat
	return []stc{
		{name: "speech text trimmed", body: sp(M{"input": "  \n\tHello.\r\n "}, nil), check: func(t *testing.T, r *SpeechRequest) {
			if r.Input != "Hello." || r.Text != "Hello." {
				t.Errorf("got %+v", *r)
			}
		}},
		{name: "speech text Unicode white space trimmed", body: sp(M{"input": "\u3000\u00a0Hi\u2003", "instructions": "\u00a0calm\u3000"}, nil), check: wantText("Hi\ncalm")},
		{name: "speech inner newlines and tabs kept", body: sp(M{"input": "line 1\n\tline 2\r\nline 3"}, nil), check: wantText("line 1\n\tline 2\r\nline 3")},
		{name: "speech input and instructions joined by newline", body: sp(M{"input": " a ", "instructions": " b "}, nil), check: wantText("a\nb")},
		{name: "speech instructions only holds the full text", body: sp(M{"input": omit, "instructions": "Say hello."}, nil), check: func(t *testing.T, r *SpeechRequest) {
			if r.Input != "" || r.Instructions != "Say hello." || r.Text != "Say hello." {
				t.Errorf("got %+v", *r)
			}
		}},
		{name: "speech empty input with instructions accepted", body: sp(M{"input": "", "instructions": "Say hello."}, nil), check: wantText("Say hello.")},
		{name: "speech blank instructions add no newline", body: sp(M{"input": "Hi", "instructions": " \n "}, nil), check: wantText("Hi")},
		{name: "speech empty instructions add no newline", body: sp(M{"input": "Hi", "instructions": ""}, nil), check: wantText("Hi")},
		{name: "speech input and instructions missing rejected", body: `{"model":"tts"}`, fail: true, param: "input", msg: "required"},
		{name: "speech only metadata rejected", body: sp(M{"input": omit}, M{"client_request_id": "a"}), fail: true, param: "input"},
		{name: "speech empty input rejected", body: sp(M{"input": ""}, nil), fail: true, param: "input"},
		{name: "speech blank input rejected", body: sp(M{"input": " \t\n\u3000"}, nil), fail: true, param: "input"},
		{name: "speech blank input and instructions rejected", body: sp(M{"input": " ", "instructions": "  "}, nil), fail: true, param: "input"},
		{name: "speech blank instructions alone rejected", body: sp(M{"input": omit, "instructions": " "}, nil), fail: true, param: "input"},
		{name: "speech NUL in input rejected", body: sp(M{"input": "a\u0000b"}, nil), fail: true, param: "input", msg: "control characters"},
		{name: "speech escape control in input rejected", body: sp(M{"input": "a\u001bb"}, nil), fail: true, param: "input"},
		{name: "speech DEL in instructions rejected", body: sp(M{"instructions": "a\u007fb"}, nil), fail: true, param: "instructions"},
		{name: "speech C1 control in instructions rejected", body: sp(M{"instructions": "a\u0085b"}, nil), fail: true, param: "instructions"},

		{name: "speech 3000 ASCII characters accepted", body: sp(M{"input": rep("a", 3000)}, nil)},
		{name: "speech 3001 ASCII characters rejected", body: sp(M{"input": rep("a", 3001)}, nil), fail: true, param: "input", msg: "3001 characters"},
		{name: "speech 3000 é accepted", body: sp(M{"input": rep("é", 3000)}, nil), check: func(t *testing.T, r *SpeechRequest) {
			if len(r.Text) != 6000 {
				t.Errorf("%d bytes", len(r.Text))
			}
		}},
		{name: "speech 3001 é rejected", body: sp(M{"input": rep("é", 3001)}, nil), fail: true, param: "input", msg: "3001"},
		{name: "speech 3000 escaped é accepted", body: `{"model":"tts","input":"` + rep(`\u00e9`, 3000) + `"}`},
		{name: "speech 3001 escaped é rejected", body: `{"model":"tts","input":"` + rep(`\u00e9`, 3001) + `"}`, fail: true, param: "input"},
		{name: "speech 3000 漢 accepted", body: sp(M{"input": rep("漢", 3000)}, nil)},
		{name: "speech 3001 漢 rejected", body: sp(M{"input": rep("漢", 3001)}, nil), fail: true, param: "input"},
		{name: "speech 3000 emoji accepted", body: sp(M{"input": rep("😀", 3000)}, nil), check: func(t *testing.T, r *SpeechRequest) {
			if len(r.Text) != 12000 {
				t.Errorf("%d bytes", len(r.Text))
			}
		}},
		{name: "speech 3001 emoji rejected", body: sp(M{"input": rep("😀", 3001)}, nil), fail: true, param: "input"},
		{name: "speech 3000 escaped surrogate-pair emoji accepted", body: `{"model":"tts","input":"` + rep(`\ud83d\ude00`, 3000) + `"}`},
		{name: "speech 3001 escaped surrogate-pair emoji rejected", body: `{"model":"tts","input":"` + rep(`\ud83d\ude00`, 3001) + `"}`, fail: true, param: "input"},
		{name: "speech combining marks count as code points: 3000 accepted", body: sp(M{"input": rep("e\u0301", 1500)}, nil)},
		{name: "speech combining marks count as code points: 3002 rejected", body: sp(M{"input": rep("e\u0301", 1501)}, nil), fail: true, param: "input"},
		{name: "speech ZWJ family emoji counts 5 each: 600 accepted", body: sp(M{"input": rep("👨\u200d👩\u200d👧", 600)}, nil)},
		{name: "speech ZWJ family emoji counts 5 each: one more character rejected", body: sp(M{"input": rep("👨\u200d👩\u200d👧", 600) + "!"}, nil), fail: true, param: "input"},
		{name: "speech mixed scripts 3000 accepted", body: sp(M{"input": rep("aé漢😀", 750)}, nil)},
		{name: "speech mixed scripts 3001 rejected", body: sp(M{"input": rep("aé漢😀", 750) + "a"}, nil), fail: true, param: "input"},
		{name: "speech combined 1500+newline+1499 accepted", body: sp(M{"input": rep("漢", 1500), "instructions": rep("é", 1499)}, nil), check: func(t *testing.T, r *SpeechRequest) {
			if utf8.RuneCountInString(r.Text) != 3000 {
				t.Errorf("%d characters", utf8.RuneCountInString(r.Text))
			}
		}},
		{name: "speech combined 1500+newline+1500 rejected on input", body: sp(M{"input": rep("漢", 1500), "instructions": rep("é", 1500)}, nil), fail: true, param: "input", msg: "3001"},
		{name: "speech instructions only 3000 accepted", body: sp(M{"input": omit, "instructions": rep("😀", 3000)}, nil)},
		{name: "speech instructions only 3001 rejected on input", body: sp(M{"input": omit, "instructions": rep("😀", 3001)}, nil), fail: true, param: "input"},
		{name: "speech white space outside the limit is trimmed first", body: sp(M{"input": "  " + rep("é", 3000) + "\n\u3000", "instructions": "\t"}, nil)},
	}
}

func speechMetadataCases() []stc {
	crid := "metadata.client_request_id"
	return []stc{
		{name: "speech client_request_id trimmed", body: sp(nil, M{"client_request_id": "  order-42\t"}), check: func(t *testing.T, r *SpeechRequest) {
			if r.ClientRequestID != "order-42" {
				t.Errorf("got %q", r.ClientRequestID)
			}
		}},
		{name: "speech client_request_id 64 bytes accepted", body: sp(nil, M{"client_request_id": strings.Repeat("x", 64)})},
		{name: "speech client_request_id printable punctuation accepted", body: sp(nil, M{"client_request_id": "a b~!@#$%^&*()_+{}|:<>?"})},
		{name: "speech client_request_id 65 bytes rejected", body: sp(nil, M{"client_request_id": strings.Repeat("x", 65)}), fail: true, param: crid},
		{name: "speech client_request_id empty rejected", body: sp(nil, M{"client_request_id": ""}), fail: true, param: crid},
		{name: "speech client_request_id blank rejected", body: sp(nil, M{"client_request_id": "   "}), fail: true, param: crid},
		{name: "speech client_request_id non-ASCII rejected", body: sp(nil, M{"client_request_id": "café"}), fail: true, param: crid},
		{name: "speech client_request_id control rejected", body: sp(nil, M{"client_request_id": "a\u0001b"}), fail: true, param: crid},
		{name: "speech client_request_id number rejected", body: sp(nil, M{"client_request_id": 42}), fail: true, param: crid},
		{name: "speech client_request_id null rejected", body: sp(nil, M{"client_request_id": nil}), fail: true, param: crid},
	}
}

func speechReferenceCases() []stc {
	a := func(i int) M { return sref("audio_url", fmt.Sprintf("https://cdn.example.com/a%d.wav", i)) }
	ar := func(i int) SpeechReference {
		return SpeechReference{Type: SpeechRefAudio, URL: fmt.Sprintf("https://cdn.example.com/a%d.wav", i)}
	}
	img := sref("image_url", spImgURL)
	refs := "metadata.references"
	return []stc{
		{name: "speech references empty array is text mode", body: sp(nil, M{"references": []any{}}), check: wantSpeechMode(SpeechModeText)},
		{name: "speech one audio reference", body: withRefs(a(1)), check: wantSpeechMode(SpeechModeAudio, ar(1))},
		{name: "speech three audio references keep order", body: withRefs(a(3), a(1), a(2)), check: wantSpeechMode(SpeechModeAudio, ar(3), ar(1), ar(2))},
		{name: "speech duplicate audio URLs accepted", body: withRefs(a(1), a(1)), check: wantSpeechMode(SpeechModeAudio, ar(1), ar(1))},
		{name: "speech one image reference", body: withRefs(img), check: wantSpeechMode(SpeechModeImage, SpeechReference{Type: SpeechRefImage, URL: spImgURL})},
		{name: "speech image mode with instructions only accepted", body: sp(M{"input": omit, "instructions": "Read the sign."}, M{"references": items(img)}), check: wantSpeechMode(SpeechModeImage, SpeechReference{Type: SpeechRefImage, URL: spImgURL})},
		{name: "speech four audio references rejected", body: withRefs(a(1), a(2), a(3), a(4)), fail: true, param: refs, msg: "at most 3"},
		{name: "speech two image references rejected", body: withRefs(img, img), fail: true, param: refs, msg: "exactly 1"},
		{name: "speech audio then image rejected", body: withRefs(a(1), img), fail: true, param: refs, msg: "never both"},
		{name: "speech image then audio rejected", body: withRefs(img, a(1)), fail: true, param: refs, msg: "never both"},
		{name: "speech three audio and an image rejected", body: withRefs(a(1), a(2), a(3), img), fail: true, param: refs, msg: "never both"},
		{name: "speech references null rejected", body: sp(nil, M{"references": nil}), fail: true, param: refs},
		{name: "speech references object rejected", body: sp(nil, M{"references": a(1)}), fail: true, param: refs},
		{name: "speech references string rejected", body: sp(nil, M{"references": spAudURL}), fail: true, param: refs},
		{name: "speech reference string item rejected", body: sp(nil, M{"references": []any{spAudURL}}), fail: true, param: refs + "[0]"},
		{name: "speech reference null item rejected", body: sp(nil, M{"references": []any{nil}}), fail: true, param: refs + "[0]"},
		{name: "speech reference type missing rejected", body: withRefs(M{"url": spAudURL}), fail: true, param: refs + "[0].type"},
		{name: "speech reference type video_url rejected", body: withRefs(sref("video_url", spAudURL)), fail: true, param: refs + "[0].type"},
		{name: "speech reference type case-sensitive", body: withRefs(sref("AUDIO_URL", spAudURL)), fail: true, param: refs + "[0].type"},
		{name: "speech reference type number rejected", body: withRefs(M{"type": 1, "url": spAudURL}), fail: true, param: refs + "[0].type"},
		{name: "speech reference url missing rejected", body: withRefs(M{"type": "audio_url"}), fail: true, param: refs + "[0].url"},
		{name: "speech reference url null rejected", body: withRefs(M{"type": "audio_url", "url": nil}), fail: true, param: refs + "[0].url"},
		{name: "speech reference url object rejected", body: withRefs(M{"type": "audio_url", "url": M{"url": spAudURL}}), fail: true, param: refs + "[0].url"},
		{name: "speech reference video-style audio_url object rejected", body: withRefs(M{"type": "audio_url", "audio_url": M{"url": spAudURL}}), fail: true, param: refs + "[0].audio_url", msg: "a speech reference is"},
		{name: "speech reference role rejected", body: withRefs(merge(a(1), M{"role": "reference_audio"})), fail: true, param: refs + "[0].role"},
		{name: "speech second reference error names its index", body: withRefs(a(1), sref("audio_url", "http://cdn.example.com/a.wav")), fail: true, param: refs + "[1].url"},
		{name: "speech item error comes before the count rule", body: withRefs(a(1), a(2), a(3), M{"type": "audio_url"}), fail: true, param: refs + "[3].url"},
	}
}

func speechURLCases() []stc {
	u0 := "metadata.references[0].url"
	good := []struct{ name, url string }{
		{"plain https", "https://cdn.example.com/voice.wav"},
		{"https with port query and fragment", "https://cdn.example.com:8443/v.wav?sig=abc&x=1#t=2"},
		{"uppercase scheme and host", "HTTPS://CDN.Example.COM/v.wav"},
		{"underscore in host label", "https://my_bucket.s3.example.com/v.wav"},
		{"percent-encoded path", "https://cdn.example.com/a%20b.wav"},
		{"public IPv4 literal", "https://8.8.8.8/v.wav"},
		{"public IPv6 literal", "https://[2606:4700:4700::1111]/v.wav"},
		{"IPv4-mapped public IPv6", "https://[::ffff:8.8.8.8]/v.wav"},
		{"punycode host", "https://xn--bcher-kva.example/v.wav"},
		{"4096 bytes", "https://cdn.example.com/" + strings.Repeat("a", MaxURLBytes-len("https://cdn.example.com/"))},
		{"at sign in query", "https://cdn.example.com/v.wav?by=me@example.com"},
	}
	bad := []struct{ name, url, msg string }{
		{"http", "http://cdn.example.com/v.wav", "https"},
		{"file absolute", "file:///etc/passwd", "file://"},
		{"file with host", "file://server/share/v.wav", "file://"},
		{"asset", "asset://abc123", "asset://"},
		{"asset uppercase", "ASSET://abc123", "asset://"},
		{"data", "data:audio/wav;base64,UklGRiQAAABXQVZFZm10IBAAAAABAAEA", "data:"},
		{"data uppercase", "DATA:audio/wav;base64,AAAA", "data:"},
		{"bare base64", "UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA=", "Base64"},
		{"ftp", "ftp://cdn.example.com/v.wav", "ftp"},
		{"javascript", "javascript:alert(1)", "scheme"},
		{"blob", "blob:https://cdn.example.com/0b1c", "scheme"},
		{"relative", "/v.wav", "absolute https"},
		{"scheme-relative", "//cdn.example.com/v.wav", "absolute https"},
		{"single slash", "https:/cdn.example.com/v.wav", "host"},
		{"opaque", "https:cdn.example.com/v.wav", "host"},
		{"no host", "https:///v.wav", "host"},
		{"empty", "", "empty"},
		{"localhost", "https://localhost/v.wav", "public host"},
		{"localhost uppercase with port", "https://LOCALHOST:8443/v.wav", "public host"},
		{"subdomain of localhost", "https://api.localhost/v.wav", "public host"},
		{"localhost trailing dot", "https://localhost./v.wav", "dot"},
		{"dot local", "https://printer.local/v.wav", "public host"},
		{"dot internal", "https://metadata.google.internal/v.wav", "public host"},
		{"home.arpa", "https://nas.home.arpa/v.wav", "public host"},
		{"single-label host", "https://intranet/v.wav", "single-label"},
		{"loopback 127.0.0.1", "https://127.0.0.1/v.wav", "public host"},
		{"loopback 127.0.0.1 with port", "https://127.0.0.1:8443/v.wav", "public host"},
		{"private 10.x", "https://10.0.0.5/v.wav", "public host"},
		{"private 172.16", "https://172.16.3.4/v.wav", "public host"},
		{"private 192.168", "https://192.168.1.1/v.wav", "public host"},
		{"link-local metadata endpoint", "https://169.254.169.254/latest/meta-data", "public host"},
		{"CGNAT", "https://100.64.0.1/v.wav", "public host"},
		{"unspecified IPv4", "https://0.0.0.0/v.wav", "public host"},
		{"multicast IPv4", "https://224.0.0.1/v.wav", "public host"},
		{"broadcast", "https://255.255.255.255/v.wav", "public host"},
		{"documentation IPv4", "https://192.0.2.10/v.wav", "public host"},
		{"IPv6 loopback", "https://[::1]/v.wav", "public host"},
		{"IPv6 loopback with port", "https://[::1]:443/v.wav", "public host"},
		{"IPv6 unspecified", "https://[::]/v.wav", "public host"},
		{"IPv6 link-local", "https://[fe80::1]/v.wav", "public host"},
		{"IPv6 link-local zoned", "https://[fe80::1%25eth0]/v.wav", "public host"},
		{"IPv6 unique-local fc", "https://[fc00::1]/v.wav", "public host"},
		{"IPv6 unique-local fd", "https://[fd12:3456::1]/v.wav", "public host"},
		{"IPv6 multicast", "https://[ff02::1]/v.wav", "public host"},
		{"IPv4-mapped loopback", "https://[::ffff:127.0.0.1]/v.wav", "public host"},
		{"IPv4-mapped loopback hex", "https://[::ffff:7f00:1]/v.wav", "public host"},
		{"IPv4-mapped private", "https://[::ffff:10.0.0.1]/v.wav", "public host"},
		{"NAT64 loopback", "https://[64:ff9b::7f00:1]/v.wav", "public host"},
		{"6to4", "https://[2002:7f00:1::1]/v.wav", "public host"},
		{"IPv6 documentation", "https://[2001:db8::1]/v.wav", "public host"},
		{"hex IPv4", "https://0x7f000001/v.wav", "numeric"},
		{"decimal IPv4", "https://2130706433/v.wav", "numeric"},
		{"octal IPv4", "https://0177.0.0.1/v.wav", "numeric"},
		{"octal single number", "https://017700000001/v.wav", "numeric"},
		{"hex dotted IPv4", "https://0x7f.0.0.1/v.wav", "numeric"},
		{"short IPv4", "https://127.1/v.wav", "numeric"},
		{"numeric public spelling", "https://134744072/v.wav", "numeric"},
		{"user and password", "https://user:pass@cdn.example.com/v.wav", "credentials"},
		{"user only", "https://user@cdn.example.com/v.wav", "credentials"},
		{"empty user info", "https://@cdn.example.com/v.wav", "credentials"},
		{"user info hiding loopback", "https://cdn.example.com@127.0.0.1/v.wav", "credentials"},
		{"space", "https://cdn.example.com/a b.wav", "spaces"},
		{"leading space", " https://cdn.example.com/a.wav", "spaces"},
		{"tab", "https://cdn.example.com/a\t.wav", "control"},
		{"newline", "https://cdn.example.com/a.wav\n", "control"},
		{"NUL", "https://cdn.example.com/a\x00.wav", "control"},
		{"backslash", "https://cdn.example.com\\@127.0.0.1/v.wav", "backslash"},
		{"non-ASCII host", "https://bücher.example/v.wav", "punycode"},
		{"percent-encoded host", "https://%6c%6fcalhost/v.wav", "not a valid URL"},
		{"bad percent escape in path", "https://cdn.example.com/%zz.wav", "not a valid URL"},
		{"port zero", "https://cdn.example.com:0/v.wav", "port"},
		{"port too large", "https://cdn.example.com:65536/v.wav", "port"},
		{"over 4096 bytes", "https://cdn.example.com/" + strings.Repeat("a", MaxURLBytes), "4096"},
	}
	var cs []stc
	for _, g := range good {
		u := g.url
		cs = append(cs, stc{name: "speech url " + g.name + " accepted", body: withURL(u), check: func(t *testing.T, r *SpeechRequest) {
			if r.References[0].URL != u {
				t.Errorf("url %q, want it kept as sent", r.References[0].URL)
			}
		}})
	}
	for _, b := range bad {
		cs = append(cs, stc{name: "speech url " + b.name + " rejected", body: withURL(b.url), fail: true, param: u0, msg: b.msg})
	}
	// The image reference goes through the same rules.
	cs = append(cs, stc{name: "speech image url loopback rejected", body: withRefs(sref("image_url", "https://127.0.0.1/face.png")), fail: true, param: u0})
	return cs
}

// speechForbidden are the fields the brief and the contract name, each with a fragment of
// its specific message.
var speechForbidden = []struct{ name, msg string }{
	{"voice", "voice or custom-voice"},
	{"custom_voice", "voice or custom-voice"},
	{"voice_id", "voice or custom-voice"},
	{"speaker", "voice or custom-voice"},
	{"voice_clone", "voice clone"},
	{"clone", "voice clone"},
	{"audio_data", "Base64"},
	{"image_data", "Base64"},
	{"base64", "Base64"},
	{"response_format", "download link"},
	{"speed", "instructions"},
	{"project_id", "project and routing"},
	{"project", "project and routing"},
	{"app_id", "project and routing"},
	{"appid", "project and routing"},
	{"cluster", "project and routing"},
	{"resource_id", "project and routing"},
}

func speechForbiddenCases() []stc {
	var cs []stc
	for _, f := range speechForbidden {
		cs = append(cs,
			stc{name: "speech top-level " + f.name + " rejected", body: sp(M{f.name: "x"}, nil), fail: true, param: f.name, msg: f.msg},
			stc{name: "speech metadata." + f.name + " rejected", body: sp(nil, M{f.name: "x"}), fail: true, param: "metadata." + f.name, msg: f.msg},
		)
	}
	refs := "metadata.references[0]."
	return append(cs, []stc{
		{name: "speech forbidden field matched case-insensitively", body: sp(M{"Voice_ID": "x"}, nil), fail: true, param: "Voice_ID", msg: "voice or custom-voice"},
		{name: "speech forbidden field with an object value rejected", body: sp(M{"voice": M{"id": "alloy"}}, nil), fail: true, param: "voice"},
		{name: "speech forbidden field in a reference rejected", body: withRefs(merge(sref("audio_url", spAudURL), M{"voice_id": "v1"})), fail: true, param: refs + "voice_id", msg: "voice or custom-voice"},
		{name: "speech inline audio in a reference rejected", body: withRefs(M{"type": "audio_url", "audio_data": "UklGRg=="}), fail: true, param: refs + "audio_data", msg: "Base64"},
		{name: "speech output_format rejected", body: sp(M{"output_format": "mp3"}, nil), fail: true, param: "output_format", msg: "download link"},
		{name: "speech stream rejected", body: sp(M{"stream": true}, nil), fail: true, param: "stream", msg: "not streamed"},
		{name: "speech pitch rejected", body: sp(nil, M{"pitch": 2}), fail: true, param: "metadata.pitch", msg: "instructions"},
		{name: "speech api_key rejected", body: sp(M{"api_key": "sk-1"}, nil), fail: true, param: "api_key", msg: "credentials"},
		{name: "speech callback_url rejected", body: sp(nil, M{"callback_url": "https://a.example/cb"}), fail: true, param: "metadata.callback_url", msg: "callbacks"},
		{name: "speech top-level client_request_id rejected", body: sp(M{"client_request_id": "a"}, nil), fail: true, param: "client_request_id", msg: "belongs under metadata"},
		{name: "speech top-level references rejected", body: sp(M{"references": items(sref("audio_url", spAudURL))}, nil), fail: true, param: "references", msg: "belongs under metadata"},
		{name: "speech top-level mode rejected", body: sp(M{"mode": "audio"}, nil), fail: true, param: "mode", msg: "metadata.references"},
		{name: "speech top-level prompt rejected", body: sp(M{"prompt": "hi"}, nil), fail: true, param: "prompt", msg: "input"},
		{name: "speech top-level text rejected", body: sp(M{"text": "hi"}, nil), fail: true, param: "text", msg: "input"},
		{name: "speech metadata.input rejected", body: sp(nil, M{"input": "hi"}), fail: true, param: "metadata.input", msg: "top-level field"},
		{name: "speech metadata.model rejected", body: sp(nil, M{"model": "tts"}), fail: true, param: "metadata.model", msg: "top-level field"},
	}...)
}

func TestSpeechCanonicalForIdempotency(t *testing.T) {
	decode := func(t *testing.T, b string) *SpeechRequest {
		t.Helper()
		r, err := DecodeSpeech([]byte(b))
		if err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		return r
	}
	base := `{"model":"tts","input":"Hello","instructions":"calm","metadata":{"client_request_id":"k1","references":[{"type":"audio_url","url":"https://a.example/1.wav"}]}}`
	same := []struct{ name, body string }{
		{"member order and white space", " {\"metadata\":{\"references\":[{\"url\":\"https://a.example/1.wav\",\"type\":\"audio_url\"}],\"client_request_id\":\"k1\"},\n\"instructions\":\"calm\",\"input\":\"Hello\",\"model\":\"tts\"} "},
		{"string escapes", `{"model":"tts","input":"H\u0065llo","instructions":"calm","metadata":{"client_request_id":"k1","references":[{"type":"audio_url","url":"https:\/\/a.example\/1.wav"}]}}`},
		{"text trimmed", `{"model":"tts","input":"  Hello\n","instructions":" calm ","metadata":{"client_request_id":"k1","references":[{"type":"audio_url","url":"https://a.example/1.wav"}]}}`},
		{"client_request_id is the key, not the payload", `{"model":"tts","input":"Hello","instructions":"calm","metadata":{"client_request_id":"other","references":[{"type":"audio_url","url":"https://a.example/1.wav"}]}}`},
	}
	want := decode(t, base).CanonicalForIdempotency()
	t.Logf("%s", want)
	if !bytes.HasPrefix(want, []byte(`{"v":1,`)) {
		t.Errorf("unversioned fingerprint %s", want)
	}
	for _, c := range same {
		if got := decode(t, c.body).CanonicalForIdempotency(); !bytes.Equal(got, want) {
			t.Errorf("%s: %s != %s", c.name, got, want)
		}
	}
	textOnly := decode(t, `{"model":"tts","input":"Hi"}`).CanonicalForIdempotency()
	for _, b := range []string{`{"model":"tts","input":"Hi","instructions":""}`, `{"model":"tts","input":"Hi","metadata":{}}`,
		`{"model":"tts","input":"Hi","metadata":{"references":[]}}`, `{"model":"tts","input":" Hi ","instructions":"  "}`} {
		if got := decode(t, b).CanonicalForIdempotency(); !bytes.Equal(got, textOnly) {
			t.Errorf("%s: %s != %s", b, got, textOnly)
		}
	}
	differ := []struct{ name, body string }{
		{"model", strings.Replace(base, `"tts"`, `"tts-2"`, 1)},
		{"input", strings.Replace(base, `"Hello"`, `"Hello!"`, 1)},
		{"instructions", strings.Replace(base, `"calm"`, `"loud"`, 1)},
		{"url", strings.Replace(base, `1.wav`, `2.wav`, 1)},
		{"text moved from instructions to input", `{"model":"tts","input":"Hello\ncalm","metadata":{"references":[{"type":"audio_url","url":"https://a.example/1.wav"}]}}`},
		{"no references", `{"model":"tts","input":"Hello","instructions":"calm"}`},
	}
	for _, c := range differ {
		if got := decode(t, c.body).CanonicalForIdempotency(); bytes.Equal(got, want) {
			t.Errorf("%s: compares equal: %s", c.name, got)
		}
	}
	// Reference order is part of the payload.
	a := decode(t, withRefs(sref("audio_url", "https://a.example/1.wav"), sref("audio_url", "https://a.example/2.wav"))).CanonicalForIdempotency()
	b := decode(t, withRefs(sref("audio_url", "https://a.example/2.wav"), sref("audio_url", "https://a.example/1.wav"))).CanonicalForIdempotency()
	if bytes.Equal(a, b) {
		t.Error("reference order ignored")
	}
	// A hand-built request with invalid UTF-8 does not panic.
	_ = (&SpeechRequest{Model: "m", Input: "\xff"}).CanonicalForIdempotency()
}

func TestSpeechOversizedBody(t *testing.T) {
	b := sp(M{"input": strings.Repeat("a", MaxBodyBytes)}, nil)
	_, err := DecodeSpeech([]byte(b))
	if err == nil || err.Param != "" {
		t.Fatalf("got %v", err)
	}
	checkSpeechError(t, err)
}

func FuzzDecodeSpeech(f *testing.F) {
	for _, c := range speechCases() {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeSpeech(body)
		if err != nil {
			if r != nil {
				t.Fatal("request and error both returned")
			}
			if err.Kind != apierr.KindInvalid || strings.TrimSpace(err.Message) == "" {
				t.Fatalf("bad error %+v", err)
			}
			checkMessage(t, err)
			return
		}
		checkSpeechAccepted(t, r)
		// Canonical(body) must decode to the same request, and the fingerprint is stable.
		canon, cerr := Canonical(body)
		if cerr != nil {
			t.Fatalf("accepted body does not canonicalize: %v", cerr)
		}
		r2, err2 := DecodeSpeech(canon)
		if err2 != nil || fmt.Sprintf("%#v", *r) != fmt.Sprintf("%#v", *r2) {
			t.Fatalf("canonical form decodes differently: %v\n%+v\n%+v", err2, r, r2)
		}
		if !bytes.Equal(r.CanonicalForIdempotency(), r2.CanonicalForIdempotency()) {
			t.Fatal("fingerprint differs for the canonical form")
		}
	})
}
