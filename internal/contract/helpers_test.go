package contract

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"mediagen/internal/apierr"
)

// decodeVideo is what the video service does with a POST /v1/videos body: one strict parse,
// then Decode for the product of its alias.
func decodeVideo(body []byte, p Product, e Entitlements) (*VideoRequest, *apierr.Error) {
	v, err := ParseVideo(body)
	if err != nil {
		return nil, err
	}
	return v.Decode(p, e)
}

// peekModel is how the service finds the alias: one strict parse, then Model.
func peekModel(body []byte) (string, *apierr.Error) {
	v, err := ParseVideo(body)
	if err != nil {
		return "", err
	}
	return v.Model()
}

// M is a JSON object under construction; tests write bodies as maps and let builders fill in
// a valid baseline, so each case shows only what it changes.
type M = map[string]any

type omitT struct{}

// omit removes a baseline field.
var omit = omitT{}

// raw embeds JSON text verbatim, for values a Go map cannot express (5.0, 1e999…).
func raw(s string) jsontext.Value { return jsontext.Value(s) }

var (
	p25      = Product{Route: RouteNative, Family: Family25}
	pStd20   = Product{Route: RouteNative, Family: FamilyStandard20}
	pFast20  = Product{Route: RouteNative, Family: FamilyFast20}
	pMini20  = Product{Route: RouteNative, Family: FamilyMini20}
	pLite    = Product{Route: RouteProduction, Tier: TierLite}
	pStdTier = Product{Route: RouteProduction, Tier: TierStandard}
	pPro     = Product{Route: RouteProduction, Tier: TierPro}
	eLite    = Product{Route: RouteEnhancement, Enh: EnhLite}
	eStd     = Product{Route: RouteEnhancement, Enh: EnhStandard}

	entAll = Entitlements{Native4K: true, Enhance8K: true, Production: true,
		ProductionResolutions: map[string]bool{"1080p": true, "2k": true, "4k": true}, LastFrame: true}
	entNone = Entitlements{}
)

func merge(base, over M) M {
	out := M{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if _, ok := v.(omitT); ok {
			delete(out, k)
			continue
		}
		out[k] = v
	}
	return out
}

func first(ms []M) M {
	if len(ms) == 0 {
		return nil
	}
	return ms[0]
}

func encode(v any) string {
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// body builds {top..., "metadata": meta}; a nil meta leaves metadata out.
func body(top, meta M) string {
	t := merge(top, nil)
	if meta != nil {
		t["metadata"] = meta
	}
	return encode(t)
}

// nat is a valid text-to-video body with metadata meta (nil: no metadata) and top overrides.
func nat(meta M, top ...M) string {
	return body(merge(M{"model": "vid", "prompt": "a cat surfing"}, first(top)), meta)
}

// prod is a valid text production body at 1080p, changed by meta and top.
func prod(meta M, top ...M) string {
	return body(merge(M{"model": "prod", "prompt": "a cat surfing"}, first(top)), merge(M{"resolution": "1080p"}, meta))
}

// enh is a valid standalone enhancement body at 1080p, changed by meta and top.
func enh(meta M, top ...M) string {
	return body(merge(M{"model": "enh"}, first(top)),
		merge(M{"video_url": "https://cdn.example.com/in.mp4", "duration": 5.5, "resolution": "1080p"}, meta))
}

func img(role, url string) M { return M{"type": "image_url", "role": role, "image_url": M{"url": url}} }
func vid(url string) M {
	return M{"type": "video_url", "role": "reference_video", "video_url": M{"url": url}}
}
func aud(url string) M {
	return M{"type": "audio_url", "role": "reference_audio", "audio_url": M{"url": url}}
}

const (
	imgURL = "https://cdn.example.com/a.png"
	vidURL = "https://cdn.example.com/a.mp4"
	audURL = "https://cdn.example.com/a.mp3"
)

func items(ms ...M) []any {
	out := make([]any, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

func repeat(m M, n int) []M {
	out := make([]M, n)
	for i := range out {
		out[i] = m
	}
	return out
}

// tc is one contract table row. kind 0 means accepted.
type tc struct {
	name  string
	p     Product
	e     Entitlements
	body  string
	kind  apierr.Kind
	param string
	check func(t *testing.T, r *VideoRequest)
}

const (
	ok   = apierr.KindInternal // never a contract rejection: the zero kind means accepted
	bad  = apierr.KindInvalid
	deny = apierr.KindPermission
)

// leaks are fragments that would mean a decoder internal reached a client message.
var leaks = []string{"jsontext", "json:", "int64", "float64", "*contract", "map[", "Token", "syntactic"}

func checkMessage(t *testing.T, e *apierr.Error) {
	t.Helper()
	if e.Kind != apierr.KindInvalid && e.Kind != apierr.KindPermission {
		t.Errorf("kind %d is neither invalid nor permission", e.Kind)
	}
	if strings.TrimSpace(e.Message) == "" {
		t.Errorf("empty message for param %q", e.Param)
	}
	for _, l := range leaks {
		if strings.Contains(e.Message, l) {
			t.Errorf("message %q leaks %q", e.Message, l)
		}
	}
	if e.Kind == apierr.KindPermission && !strings.Contains(e.Message, "operator") {
		t.Errorf("permission message %q does not point to the operator", e.Message)
	}
}

func runTable(t *testing.T, cases []tc) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Errorf("duplicate case name %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			r, err := decodeVideo([]byte(c.body), c.p, c.e)
			if c.kind == ok {
				if err != nil {
					t.Fatalf("rejected: %v (kind %d)\nbody: %s", err, err.Kind, c.body)
				}
				if r == nil {
					t.Fatal("nil request without error")
				}
				if c.check != nil {
					c.check(t, r)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want kind %d param %q\nbody: %s", c.kind, c.param, c.body)
			}
			if r != nil {
				t.Error("request returned with an error")
			}
			checkMessage(t, err)
			t.Logf("%s (%s)", err.Message, err.Param)
			if err.Kind != c.kind || err.Param != c.param {
				t.Fatalf("got kind %d param %q (%s), want kind %d param %q\nbody: %s", err.Kind, err.Param, err.Message, c.kind, c.param, c.body)
			}
		})
	}
}

// allCases gathers every table, for fuzz seeds and the case count.
func allCases() []tc {
	var all []tc
	for _, f := range []func() []tc{nativeCases, contentCases, productionCases, enhancementCases, strictCases} {
		all = append(all, f()...)
	}
	return all
}

func TestCaseCount(t *testing.T) {
	n := len(allCases())
	t.Logf("%d contract table cases", n)
	if n < 200 {
		t.Errorf("only %d table cases", n)
	}
}
