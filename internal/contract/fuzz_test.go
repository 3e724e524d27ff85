package contract

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Entitlements are fuzzed as bits so the fuzzer can explore every package combination.
func entFromBits(b uint8) Entitlements {
	return Entitlements{
		Native4K: b&1 != 0, Enhance8K: b&2 != 0, Production: b&4 != 0, LastFrame: b&8 != 0,
		ProductionResolutions: map[string]bool{"1080p": b&16 != 0, "2k": b&32 != 0, "4k": b&64 != 0},
	}
}

func bitsFromEnt(e Entitlements) uint8 {
	var b uint8
	for i, on := range []bool{e.Native4K, e.Enhance8K, e.Production, e.LastFrame,
		e.ProductionResolutions["1080p"], e.ProductionResolutions["2k"], e.ProductionResolutions["4k"]} {
		if on {
			b |= 1 << i
		}
	}
	return b
}

func fuzzRoute(f *testing.F, products []Product) {
	for _, c := range allCases() {
		if i := slices.Index(products, c.p); i >= 0 {
			f.Add([]byte(c.body), uint8(i), bitsFromEnt(c.e))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, pi, eb uint8) {
		p, e := products[int(pi)%len(products)], entFromBits(eb)
		r, err := decodeVideo(body, p, e)
		if err != nil {
			if r != nil {
				t.Fatal("request and error both returned")
			}
			checkMessage(t, err)
			return
		}
		checkAccepted(t, r, p, e)
		// Idempotency relies on this: the canonical form of an accepted body decodes the same.
		canon, cerr := Canonical(body)
		if cerr != nil {
			t.Fatalf("accepted body does not canonicalize: %v", cerr)
		}
		r2, err2 := decodeVideo(canon, p, e)
		if err2 != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("canonical form decodes differently: %v\n%+v\n%+v", err2, r, r2)
		}
	})
}

func FuzzDecodeVideoNative(f *testing.F) { fuzzRoute(f, []Product{p25, pStd20, pFast20, pMini20}) }

func FuzzDecodeVideoProduction(f *testing.F) { fuzzRoute(f, []Product{pLite, pStdTier, pPro}) }

func FuzzDecodeVideoEnhancement(f *testing.F) { fuzzRoute(f, []Product{eLite, eStd}) }

func FuzzPeekModel(f *testing.F) {
	for _, c := range allCases() {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := peekModel(body)
		if err != nil {
			checkMessage(t, err)
			return
		}
		if strings.TrimSpace(m) == "" || len(m) > MaxModelBytes {
			t.Fatalf("bad model %q accepted", m)
		}
	})
}

// checkAccepted asserts what every accepted request must satisfy, whatever the body was.
func checkAccepted(t *testing.T, r *VideoRequest, p Product, e Entitlements) {
	t.Helper()
	if r.Route != p.Route || strings.TrimSpace(r.Model) == "" {
		t.Fatalf("route/model: %+v", r)
	}
	set := 0
	for _, x := range []bool{r.Native != nil, r.Production != nil, r.Enhancement != nil} {
		if x {
			set++
		}
	}
	if set != 1 {
		t.Fatalf("%d parameter blocks set", set)
	}
	if len(r.ClientRequestID) > MaxClientRequestIDBytes || strings.TrimSpace(r.ClientRequestID) != r.ClientRequestID {
		t.Fatalf("client_request_id %q", r.ClientRequestID)
	}
	if len(r.Content) > MaxContentItems {
		t.Fatalf("%d items", len(r.Content))
	}
	for _, it := range r.Content {
		if it.URL == "" || it.Label == "" || it.IsAsset != (it.AssetID != "") || roleType[it.Role] != it.Type {
			t.Fatalf("bad item %+v", it)
		}
		if !it.IsAsset && !strings.HasPrefix(strings.ToLower(it.URL), "https://") {
			t.Fatalf("non-https reference %q", it.URL)
		}
	}
	switch {
	case r.Native != nil:
		n := r.Native
		if n.Duration != -1 && (n.Duration < 4 || n.Duration > 30) {
			t.Fatalf("duration %d", n.Duration)
		}
		if !slices.Contains(nativeResolutions(p.Family), n.Resolution) || (n.Resolution == "4k" && !e.Native4K) {
			t.Fatalf("resolution %q on %s", n.Resolution, p.Family)
		}
		if !slices.Contains(allRatios, n.Ratio) || (n.Mode != ModeText && n.Mode != ModeReference && n.Ratio != "adaptive") {
			t.Fatalf("ratio %q in %s", n.Ratio, n.Mode)
		}
		if n.Mode == ModeText && !hasText(r.Prompt) {
			t.Fatal("text mode without prompt")
		}
		if p.Family == Family25 && r.Seed != nil {
			t.Fatal("seed on 2.5")
		}
	case r.Production != nil:
		pp := r.Production
		if !e.Production || !e.ProductionResolutions[pp.Resolution] || (pp.ReturnLastFrame && !e.LastFrame) {
			t.Fatalf("entitlement bypassed: %+v with %+v", pp, e)
		}
		if pp.Mode == ModeEdit && pp.Duration != -1 {
			t.Fatalf("edit duration %d", pp.Duration)
		}
		if (pp.Scene != "" && p.Tier != TierStandard) || (pp.BitDepth != nil && p.Tier != TierPro) || (pp.EnhanceStyle != "" && p.Tier == TierLite) {
			t.Fatalf("tier field on %s: %+v", p.Tier, pp)
		}
	default:
		ep := r.Enhancement
		if !(ep.Duration > 0) || math.IsInf(ep.Duration, 0) || ep.Band == "" || (ep.Resolution == "") == (ep.ResolutionLimit == 0) {
			t.Fatalf("enhancement %+v", ep)
		}
		if ep.Band == "8k" && (!e.Enhance8K || p.Enh == EnhLite) {
			t.Fatalf("8k bypassed: %+v", ep)
		}
		if r.HasPrompt {
			t.Fatal("enhancement prompt kept")
		}
	}
}
