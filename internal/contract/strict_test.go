package contract

import (
	"strings"
	"testing"

	"mediagen/internal/apierr"
)

func TestStrictDecoding(t *testing.T) { runTable(t, strictCases()) }

// nested returns n nested arrays around 0, e.g. [[0]] for 2.
func nested(n int) string { return strings.Repeat("[", n) + "0" + strings.Repeat("]", n) }

func strictCases() []tc {
	deepParam := "prompt" + strings.Repeat("[0]", MaxDepth-1)
	return []tc{
		{name: "strict Model capitalised rejected", p: p25, body: `{"Model":"vid","prompt":"x"}`, kind: bad, param: "Model"},
		{name: "strict Prompt capitalised rejected", p: p25, body: `{"model":"vid","Prompt":"x"}`, kind: bad, param: "Prompt"},
		{name: "strict METADATA capitalised rejected", p: p25, body: `{"model":"vid","prompt":"x","METADATA":{}}`, kind: bad, param: "METADATA"},
		{name: "strict escaped field name is the same name", p: p25, body: `{"mo\u0064el":"vid","prompt":"x"}`, check: func(t *testing.T, r *VideoRequest) {
			if r.Model != "vid" {
				t.Errorf("model %q", r.Model)
			}
		}},
		{name: "strict duplicate top-level key rejected", p: p25, body: `{"model":"a","model":"b","prompt":"x"}`, kind: bad, param: "model"},
		{name: "strict duplicate key via escape rejected", p: p25, body: `{"model":"a","prompt":"x","pr\u006fmpt":"y"}`, kind: bad, param: "prompt"},
		{name: "strict duplicate metadata key rejected", p: p25, body: `{"model":"a","prompt":"x","metadata":{"duration":5,"duration":6}}`, kind: bad, param: "metadata.duration"},
		{name: "strict duplicate content item key rejected", p: p25, body: `{"model":"a","metadata":{"content":[{"type":"image_url","role":"reference_image","role":"first_frame"}]}}`, kind: bad, param: "metadata.content[0].role"},
		{name: "strict duplicate key in ignored enhancement prompt rejected", p: eLite, body: `{"model":"e","prompt":{"a":1,"a":2},"metadata":{}}`, kind: bad, param: "prompt.a"},
		{name: "strict trailing garbage rejected", p: p25, body: `{"model":"vid","prompt":"x"} x`, kind: bad, param: ""},
		{name: "strict second object rejected", p: p25, body: `{"model":"vid","prompt":"x"}{}`, kind: bad, param: ""},
		{name: "strict trailing whitespace accepted", p: p25, body: " \n{\"model\":\"vid\",\"prompt\":\"x\"}\r\n\t "},
		{name: "strict array body rejected", p: p25, body: `[]`, kind: bad, param: ""},
		{name: "strict string body rejected", p: p25, body: `"vid"`, kind: bad, param: ""},
		{name: "strict null body rejected", p: p25, body: `null`, kind: bad, param: ""},
		{name: "strict empty body rejected", p: p25, body: ``, kind: bad, param: ""},
		{name: "strict whitespace body rejected", p: p25, body: " \n ", kind: bad, param: ""},
		{name: "strict truncated body rejected", p: p25, body: `{"model":"vid","prompt":"x"`, kind: bad, param: ""},
		{name: "strict truncated metadata names its path", p: p25, body: `{"model":"vid","metadata":{"duration":`, kind: bad, param: "metadata.duration"},
		{name: "strict bare word value names its path", p: p25, body: `{"model":vid}`, kind: bad, param: "model"},
		{name: "strict trailing comma rejected", p: p25, body: `{"model":"vid","prompt":"x",}`, kind: bad, param: ""},
		{name: "strict single quotes rejected", p: p25, body: `{'model':'vid'}`, kind: bad, param: ""},
		{name: "strict comment rejected", p: p25, body: `{"model":"vid", /* c */ "prompt":"x"}`, kind: bad, param: ""},
		{name: "strict NaN rejected", p: eLite, body: `{"model":"e","metadata":{"video_url":"https://a.example/v.mp4","duration":NaN,"resolution":"1080p"}}`, kind: bad, param: "metadata.duration"},
		{name: "strict leading zero number rejected", p: p25, body: `{"model":"vid","prompt":"x","metadata":{"duration":05}}`, kind: bad, param: "metadata"},
		{name: "strict invalid UTF-8 rejected", p: p25, body: "{\"model\":\"vid\",\"prompt\":\"\xff\"}", kind: bad, param: ""},
		{name: "strict lone surrogate escape rejected", p: p25, body: `{"model":"vid","prompt":"\ud800"}`, kind: bad, param: "prompt"},
		{name: "strict depth at the limit accepted", p: eLite, body: enh(nil, M{"prompt": raw(nested(MaxDepth - 1))})},
		{name: "strict depth over the limit rejected", p: eLite, body: enh(nil, M{"prompt": raw(nested(MaxDepth))}), kind: bad, param: deepParam},
		{name: "strict field name over 128 bytes rejected", p: p25, body: nat(M{strings.Repeat("n", MaxNameBytes+1): 1}), kind: bad, param: "metadata"},
		{name: "strict model missing rejected", p: p25, body: `{"prompt":"x"}`, kind: bad, param: "model"},
		{name: "strict model empty rejected", p: p25, body: `{"model":"","prompt":"x"}`, kind: bad, param: "model"},
		{name: "strict model number rejected", p: p25, body: `{"model":25,"prompt":"x"}`, kind: bad, param: "model"},
		{name: "strict model null rejected", p: p25, body: `{"model":null,"prompt":"x"}`, kind: bad, param: "model"},
		{name: "strict speech alias rejected", p: Product{Route: RouteSpeech}, body: nat(nil), kind: bad, param: "model"},
		{name: "strict misconfigured product rejected", p: Product{Route: RouteNative}, body: nat(nil), kind: bad, param: "model"},
		{name: "strict unknown route rejected", p: Product{Route: "image"}, body: nat(nil), kind: bad, param: "model"},
	}
}

func TestLimits(t *testing.T) {
	t.Run("body over MaxBodyBytes rejected", func(t *testing.T) {
		b := nat(nil, M{"prompt": strings.Repeat("a", MaxBodyBytes)})
		_, err := decodeVideo([]byte(b), p25, entNone)
		if err == nil || err.Kind != apierr.KindInvalid || err.Param != "" {
			t.Fatalf("got %v", err)
		}
		checkMessage(t, err)
	})
	t.Run("more than MaxValues values rejected", func(t *testing.T) {
		arr := "[" + strings.TrimSuffix(strings.Repeat("0,", MaxValues), ",") + "]"
		_, err := decodeVideo([]byte(enh(nil, M{"prompt": raw(arr)})), eLite, entNone)
		if err == nil || err.Kind != apierr.KindInvalid || !strings.HasPrefix(err.Param, "prompt[") {
			t.Fatalf("got %v", err)
		}
		checkMessage(t, err)
	})
	t.Run("very deep nesting fails fast", func(t *testing.T) {
		_, err := decodeVideo([]byte(`{"model":"e","prompt":`+nested(100000)+`}`), eLite, entNone)
		if err == nil || err.Kind != apierr.KindInvalid {
			t.Fatalf("got %v", err)
		}
	})
}

func TestPeekModel(t *testing.T) {
	cases := []struct {
		name, body, want, param string
		fail                    bool
	}{
		{name: "model read", body: `{"model":"vid-2.5","metadata":{"duration":99}}`, want: "vid-2.5"},
		{name: "model read from an otherwise unknown body", body: `{"x":1,"model":"m"}`, want: "m"},
		{name: "model missing", body: `{"prompt":"x"}`, fail: true, param: "model"},
		{name: "model empty", body: `{"model":""}`, fail: true, param: "model"},
		{name: "model blank", body: `{"model":"  "}`, fail: true, param: "model"},
		{name: "model number", body: `{"model":1}`, fail: true, param: "model"},
		{name: "model null", body: `{"model":null}`, fail: true, param: "model"},
		{name: "model too long", body: `{"model":"` + strings.Repeat("m", MaxModelBytes+1) + `"}`, fail: true, param: "model"},
		{name: "model duplicated", body: `{"model":"a","model":"b"}`, fail: true, param: "model"},
		{name: "Model is not model", body: `{"Model":"a"}`, fail: true, param: "model"},
		{name: "array body", body: `["model"]`, fail: true, param: ""},
		{name: "invalid JSON", body: `{"model":"a"`, fail: true, param: ""},
		{name: "trailing data", body: `{"model":"a"}]`, fail: true, param: ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := peekModel([]byte(c.body))
			if c.fail {
				if err == nil || err.Param != c.param || err.Kind != apierr.KindInvalid {
					t.Fatalf("got %q, %v; want error on %q", got, err, c.param)
				}
				checkMessage(t, err)
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// The envelope of a rejection is apierr's, the service's one vocabulary: a use case returns
// the error unchanged, so these are the status, type and code the client sees.
func TestRejectionsCarryTheEnvelopeOfTheirKind(t *testing.T) {
	cases := []struct {
		name         string
		err          *apierr.Error
		status       int
		typ, code    string
		param, msgIn string
	}{
		{"invalid", invalidf("metadata.duration", "m %d", 1), 400, "invalid_request_error", "invalid_request_error", "metadata.duration", "m 1"},
		{"denied", deniedf("model", "no"), 403, "permission_error", "permission_denied", "model", "operator"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := c.err
			if e.Status() != c.status || e.Type() != c.typ || e.CodeOrDefault() != c.code || e.Param != c.param {
				t.Errorf("got %d %s %s %q", e.Status(), e.Type(), e.CodeOrDefault(), e.Param)
			}
			if !strings.Contains(e.Message, c.msgIn) {
				t.Errorf("message %q lacks %q", e.Message, c.msgIn)
			}
		})
	}
}

func TestProductValidate(t *testing.T) {
	good := []Product{p25, pStd20, pFast20, pMini20, pLite, pStdTier, pPro, eLite, eStd, {Route: RouteSpeech}}
	for _, p := range good {
		if err := p.Validate(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
	bad := []Product{{}, {Route: RouteNative}, {Route: RouteNative, Family: "3.0"}, {Route: RouteNative, Family: Family25, Tier: TierPro},
		{Route: RouteProduction}, {Route: RouteProduction, Tier: TierPro, Enh: EnhLite}, {Route: RouteEnhancement, Enh: "pro"},
		{Route: RouteEnhancement, Enh: EnhLite, Family: Family25}, {Route: RouteSpeech, Tier: TierLite}, {Route: "image"}}
	for _, p := range bad {
		if p.Validate() == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}
