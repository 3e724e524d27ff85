package billing

import (
	"testing"

	"mediagen/internal/contract"
	"mediagen/internal/money"
)

// Final bounds every charge both ways: never above the reservation (what the request could
// legitimately produce), never below what the stored result implies; what the upstream did
// beyond the request comes back as excess of the right kind, never as charge.
func TestFinalChargeIsBoundedByTheRequestAndTheMeasuredResult(t *testing.T) {
	t.Parallel()
	ten := demoTenant(t)
	native, err := EstimateNative(ten, alias(t, ten, "demo-video-fast"), &contract.NativeParams{Resolution: "480p", Ratio: "16:9", Duration: 5})
	if err != nil {
		t.Fatal(err)
	}
	fps30 := 30
	enh, err := EstimateEnhancement(ten, contract.EnhLite, &contract.EnhancementParams{Band: "1080p", Duration: 10, FPS: &fps30}, 10)
	if err != nil {
		t.Fatal(err)
	}
	prod, err := EstimateProduction(ten, &contract.ProductionParams{Tier: "standard", Resolution: "1080p", Duration: 5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, h := contract.Dimensions("480p", "16:9")
	tokens := func(w, h int, fps, secs float64) int64 { return NativeTokens(w, h, fps, secs) }
	cost := func(q Quote, tokens int64) money.Micros { c, _ := TokenCost(q.Rate, tokens); return c }
	us := SecondsToMicros
	honest := tokens(w, h, 24, 5.042)
	tests := []struct {
		name   string
		q      Quote
		d      Delivered
		charge money.Micros
		kinds  []string
	}{
		{"native within the request, usage as reported", native, Delivered{Micros: us(5.042), FPS: 24, Width: w, Height: h, ReportedTokens: honest + 100},
			cost(native, honest+100), nil},
		{"native without usage: the measured tokens", native, Delivered{Micros: us(5.042), FPS: 24, Width: w, Height: h},
			cost(native, honest), nil},
		{"native usage above the reservation: the ceiling", native, Delivered{Micros: us(5.042), FPS: 24, Width: w, Height: h, ReportedTokens: 10 * honest},
			native.Amount, []string{ExcessUsageOver}},
		{"native usage above 125% of the measured: 125%", native, Delivered{Micros: us(3), FPS: 24, Width: w, Height: h, ReportedTokens: tokens(w, h, 24, 5)},
			cost(native, UsageLimit(tokens(w, h, 24, 3))), []string{ExcessUsageOver}},
		{"native usage below the measured: the measured", native, Delivered{Micros: us(5.042), FPS: 24, Width: w, Height: h, ReportedTokens: 5},
			cost(native, honest), []string{ExcessUsageUnder}},
		{"native at 60 fps: billed at the request's 24", native, Delivered{Micros: us(5.042), FPS: 60, Width: w, Height: h},
			cost(native, honest), []string{ExcessOverRequest}},
		{"native 720p for a 480p request: billed the 480p frame", native, Delivered{Micros: us(5.042), FPS: 24, Width: 1280, Height: 720},
			cost(native, tokens(w, h, 24, 5.042)), []string{ExcessOverRequest}},
		{"native longer than its bound (uncut): the bound", native, Delivered{Micros: us(60), FPS: 24, Width: w, Height: h},
			cost(native, tokens(w, h, 24, 5.25)), []string{ExcessOverRequest}},
		{"native quote without bounds: the reservation caps", Quote{Route: native.Route, Rate: native.Rate, Amount: native.Amount, EstimatedTokens: native.EstimatedTokens},
			Delivered{Micros: us(60), FPS: 24, Width: 1280, Height: 720}, native.Amount, []string{ExcessOverRequest}},
		{"enhancement within the request", enh, Delivered{Micros: us(10.02), FPS: 30}, 11 * enh.Rate, nil},
		{"enhancement at 60 fps for fps 30: the reserved band", enh, Delivered{Micros: us(10.02), FPS: 60}, 11 * enh.Rate, []string{ExcessOverRequest}},
		{"enhancement shorter than its source: what it measures", enh, Delivered{Micros: us(4.5), FPS: 30}, 5 * enh.Rate, nil},
		{"production within the request", prod, Delivered{Micros: us(5.042)}, prod.Amount, nil},
		{"production longer than its bound (uncut): the bound", prod, Delivered{Micros: us(60)}, prod.Amount, []string{ExcessOverRequest}},
		{"production shorter: what it measures", prod, Delivered{Micros: us(4.2)}, 5 * prod.Rate, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Final(tc.q, tc.d)
			if err != nil {
				t.Fatal(err)
			}
			if s.Charge != tc.charge {
				t.Errorf("charge %s, want %s", s.Charge, tc.charge)
			}
			if s.Charge > tc.q.Amount {
				t.Errorf("charge %s above the reservation %s", s.Charge, tc.q.Amount)
			}
			var kinds []string
			for _, e := range s.Excess {
				kinds = append(kinds, e.Kind)
				if e.Amount <= 0 || e.Detail == "" {
					t.Errorf("excess %+v", e)
				}
			}
			if len(kinds) != len(tc.kinds) {
				t.Fatalf("excess kinds %v, want %v", kinds, tc.kinds)
			}
			for i := range kinds {
				if kinds[i] != tc.kinds[i] {
					t.Errorf("excess kinds %v, want %v", kinds, tc.kinds)
				}
			}
		})
	}
}

// Speech: the stored audio's measured duration, never above the reservation; audio past the
// bound is over_request.
func TestSpeechFinalIsBoundedByTheReservation(t *testing.T) {
	t.Parallel()
	q, err := EstimateSpeech("USD", 200, 2_695_000, 3)
	if err != nil {
		t.Fatal(err)
	}
	if q.BoundMicros != 2_695_000 || q.Amount != 600 {
		t.Fatalf("quote %+v", q)
	}
	for _, tc := range []struct {
		name   string
		micros int64
		charge money.Micros
		excess bool
	}{
		{"within its bound", 2_664_000, 533, false},
		{"past its bound", 600_048_000, 539, true}, // 2.695 s × 200
	} {
		charge, ex, err := SpeechFinal(q, tc.micros)
		if err != nil || charge != tc.charge || (len(ex) > 0) != tc.excess {
			t.Errorf("%s: %s, %+v, %v; want %s, excess %v", tc.name, charge, ex, err, tc.charge, tc.excess)
		}
	}
}
