package billing

import (
	"testing"

	"mediagen/internal/catalog"
	"mediagen/internal/contract"
	"mediagen/internal/money"
)

func demoTenant(t *testing.T) *catalog.Tenant {
	t.Helper()
	ten, ok := catalog.Demo().Tenant("demo")
	if !ok {
		t.Fatal("no demo tenant")
	}
	return ten
}

func intp(v int) *int { return &v }

// The contract's production examples, in chargeable seconds.
func TestProductionChargeableMatchesContractExamples(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		inputs []float64
		output float64
		want   int64 // µs
	}{
		{"output 5.042 s without video input gives 6", nil, 5.042, 6_000_000},
		{"input 5.000 s plus output 5.017 s gives 11", []float64{5.000}, 5.017, 11_000_000},
		{"inputs 2.125 s and 3.000 s plus output 5.042 s gives 11.125", []float64{2.125, 3.000}, 5.042, 11_125_000},
		{"repeated input counted twice", []float64{2.5, 2.5}, 4.0, 9_000_000},
		{"exact whole output not rounded up", nil, 5.0, 5_000_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := Quote{Route: "production"}
			for _, s := range tt.inputs {
				q.InputMicros = append(q.InputMicros, SecondsToMicros(s))
			}
			if got := ProductionChargeable(q, tt.output); got != tt.want {
				t.Fatalf("chargeable = %d µs, want %d", got, tt.want)
			}
		})
	}
}

func TestEnhancementSettlementMatchesContractExample(t *testing.T) {
	t.Parallel()
	// 5.084 s becomes 6 chargeable seconds; 30 fps is multiplier 1.
	q := Quote{Route: "enhancement", Rate: 20_000}
	got, err := SettleAmount(q, Measured{OutputSeconds: 5.084, OutputFPS: 30})
	if err != nil || got != 6*20_000 {
		t.Fatalf("settle = %d, %v; want %d", got, err, 6*20_000)
	}
	for fps, mult := range map[float64]int{24: 1, 29.97: 1, 30: 1, 30.01: 2, 60: 2, 59.94: 2, 61: 4, 120: 4} {
		if FPSMultiplier(fps) != mult {
			t.Errorf("multiplier(%v) = %d, want %d", fps, FPSMultiplier(fps), mult)
		}
	}
	got, _ = SettleAmount(q, Measured{OutputSeconds: 5.084, OutputFPS: 60})
	if got != 6*2*20_000 {
		t.Errorf("60 fps settle = %d", got)
	}
}

func alias(t *testing.T, ten *catalog.Tenant, name string) *catalog.Alias {
	t.Helper()
	a, ok := ten.Alias(name)
	if !ok {
		t.Fatalf("no alias %s", name)
	}
	return a
}

func TestEstimatesAreExactMicroUnits(t *testing.T) {
	t.Parallel()
	ten := demoTenant(t)
	fast := alias(t, ten, "demo-video-fast")
	// Native: 720p 16:9 = 1280x720, 24 fps, 5 s + 0.25 s slack → 1280*720*24*5.25/1024 =
	// 113400 tokens at 1.20/M.
	q, err := EstimateNative(ten, fast, &contract.NativeParams{Duration: 5, Resolution: "720p", Ratio: "16:9"})
	if err != nil {
		t.Fatal(err)
	}
	if q.EstimatedTokens != 113_400 || q.Amount != 136_080 {
		t.Errorf("native = %d tokens, %s; want 113400, 0.13608", q.EstimatedTokens, q.Amount)
	}
	// Production standard 2k with video input: 2.125 + 3 + ceil(10.25) s at 0.18 = 16.125 × 0.18.
	p, err := EstimateProduction(ten, &contract.ProductionParams{Tier: "standard", Resolution: "2k", Duration: 10, HasVideoInput: true}, []float64{2.125, 3})
	if err != nil {
		t.Fatal(err)
	}
	if p.Amount != 2_902_500 || !p.VideoInput || p.Rate != 180_000 {
		t.Errorf("production = %+v", p)
	}
	// Enhancement professional 4k, 5.084 s declared, fps omitted → ceil(5.334) = 6 × 0.08 × 4 = 1.92.
	e, err := EstimateEnhancement(ten, contract.EnhStandard, &contract.EnhancementParams{ToolVersion: "professional", Band: "4k", Duration: 5.084}, 5.084)
	if err != nil {
		t.Fatal(err)
	}
	if e.Amount != 1_920_000 || e.Multiplier != 4 || e.Tier != "professional" {
		t.Errorf("enhancement = %+v", e)
	}
	// Lite up-to-720p with explicit fps 24 → 6 × 0.005 × 1 = 0.03.
	e2, _ := EstimateEnhancement(ten, contract.EnhLite, &contract.EnhancementParams{Band: "720p", Duration: 5.084, FPS: intp(24)}, 5)
	if e2.Amount != 30_000 || e2.Multiplier != 1 || e2.Tier != "lite" {
		t.Errorf("lite = %+v", e2)
	}
}

// Where the request leaves a number to the model, the reservation takes the largest value
// the model can choose: the longest duration of the family, the widest frame of adaptive.
func TestEstimatesTakeTheLargestChoiceOfTheModel(t *testing.T) {
	t.Parallel()
	ten := demoTenant(t)
	// Fast 2.0, -1, adaptive at 720p: 15 s (the family's longest) + 0.25 s at 21:9 (1680x720).
	q, err := EstimateNative(ten, alias(t, ten, "demo-video-fast"), &contract.NativeParams{Duration: -1, Resolution: "720p", Ratio: "adaptive"})
	if err != nil {
		t.Fatal(err)
	}
	if want := NativeTokens(1680, 720, 24, 15.25); q.EstimatedTokens != want {
		t.Errorf("fast -1 adaptive = %d tokens, want %d", q.EstimatedTokens, want)
	}
	// 2.5, -1: 30 s.
	q25, _ := EstimateNative(ten, alias(t, ten, "demo-video-2.5"), &contract.NativeParams{Duration: -1, Resolution: "480p", Ratio: "16:9"})
	if want := NativeTokens(854, 480, 24, 30.25); q25.EstimatedTokens != want {
		t.Errorf("2.5 -1 = %d tokens, want %d", q25.EstimatedTokens, want)
	}
	// Production, -1: 30 s + slack → 31 chargeable s at lite 1080p 0.05 = 1.55.
	p, _ := EstimateProduction(ten, &contract.ProductionParams{Tier: "lite", Resolution: "1080p", Duration: -1}, nil)
	if p.Amount != 1_550_000 || p.VideoInput {
		t.Errorf("production -1 = %+v", p)
	}
}

// A declared source duration can raise an enhancement reservation, never lower it below the
// measured one.
func TestEnhancementReservesTheLargerOfDeclaredAndMeasured(t *testing.T) {
	t.Parallel()
	ten := demoTenant(t)
	for _, tc := range []struct {
		name               string
		declared, measured float64
		wantSeconds        int64
	}{
		{"declared tiny, measured 60 s: measured wins", 0.001, 60, 61},
		{"declared 90 s, measured 60 s: declared wins", 90, 60, 91},
		{"equal", 5, 5, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := EstimateEnhancement(ten, contract.EnhLite, &contract.EnhancementParams{Band: "1080p", Duration: tc.declared, FPS: intp(24)}, tc.measured)
			if err != nil {
				t.Fatal(err)
			}
			if want := money.Micros(tc.wantSeconds) * q.Rate; q.Amount != want {
				t.Errorf("amount %s, want %d s × %s = %s", q.Amount, tc.wantSeconds, q.Rate, want)
			}
		})
	}
}

// The reservation bounds the settlement for every output within the slack of the request.
func TestReservationBoundsSettlementWithinSlack(t *testing.T) {
	t.Parallel()
	ten := demoTenant(t)
	for _, name := range []string{"demo-video-fast", "demo-video-2.5", "demo-video-mini", "demo-video-standard"} {
		a := alias(t, ten, name)
		for _, d := range []int{-1, 4, 5, 15} {
			if a.Family == "mini-2.0" && d == -1 {
				continue
			}
			for _, ratio := range []string{"adaptive", "21:9", "9:16", "1:1"} {
				p := &contract.NativeParams{Duration: d, Resolution: "720p", Ratio: ratio}
				q, err := EstimateNative(ten, a, p)
				if err != nil {
					t.Fatal(err)
				}
				secs := float64(d)
				if d < 0 {
					secs = float64(contract.NativeMaxSeconds(contract.Family(a.Family)))
				}
				w, h := contract.MaxDimensions("720p", ratio)
				got, _ := SettleAmount(q, Measured{CompletionTokens: NativeTokens(w, h, 24, secs+0.249)})
				if got > q.Amount {
					t.Errorf("%s %d s %s: settles %s above the reservation %s", name, d, ratio, got, q.Amount)
				}
			}
		}
	}
}

func TestNativeSettlementUsesTokens(t *testing.T) {
	t.Parallel()
	got, err := SettleAmount(Quote{Route: "native", Rate: money.Micros(2_500_000)}, Measured{CompletionTokens: 108_000})
	if err != nil || got != 270_000 {
		t.Fatalf("settle = %s, %v", got, err)
	}
}

func TestSecondsToMicrosKeepsFractions(t *testing.T) {
	t.Parallel()
	for s, want := range map[float64]int64{2.125: 2_125_000, 3.0: 3_000_000, 5.042: 5_042_000, 0.0000004: 0} {
		if got := SecondsToMicros(s); got != want {
			t.Errorf("SecondsToMicros(%v) = %d", s, got)
		}
	}
}
