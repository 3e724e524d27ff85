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

func TestEstimatesAreExactMicroUnits(t *testing.T) {
	ten := demoTenant(t)
	// Native: 720p 16:9 = 1280x720, 24 fps, 5 s → 1280*720*24*5/1024 = 108000 tokens at 1.20/M.
	q, err := EstimateNative(ten, "demo-video-fast", &contract.NativeParams{Duration: 5, Resolution: "720p", Ratio: "16:9"})
	if err != nil {
		t.Fatal(err)
	}
	if q.EstimatedTokens != 108_000 || q.Amount != 129_600 {
		t.Errorf("native = %d tokens, %s; want 108000, 0.1296", q.EstimatedTokens, q.Amount)
	}
	// Duration -1 uses the documented 5 s stand-in.
	q2, _ := EstimateNative(ten, "demo-video-fast", &contract.NativeParams{Duration: -1, Resolution: "720p", Ratio: "adaptive"})
	if q2.Amount != q.Amount {
		t.Errorf("-1 estimate %s, want the 5 s estimate %s", q2.Amount, q.Amount)
	}
	// Production standard 2k with video input: 2.125 + 3 + 10 s at 0.18 = 15.125 × 0.18 = 2.7225.
	p, err := EstimateProduction(ten, &contract.ProductionParams{Tier: "standard", Resolution: "2k", Duration: 10, HasVideoInput: true}, []float64{2.125, 3})
	if err != nil {
		t.Fatal(err)
	}
	if p.Amount != 2_722_500 || !p.VideoInput || p.Rate != 180_000 {
		t.Errorf("production = %+v", p)
	}
	// Production without video input, duration -1 → 5 s at lite 1080p 0.05 = 0.25.
	p2, _ := EstimateProduction(ten, &contract.ProductionParams{Tier: "lite", Resolution: "1080p", Duration: -1}, nil)
	if p2.Amount != 250_000 || p2.VideoInput {
		t.Errorf("production no input = %+v", p2)
	}
	// Enhancement professional 4k, 5.084 s declared, fps omitted → 6 × 0.08 × 4 = 1.92.
	e, err := EstimateEnhancement(ten, contract.EnhStandard, &contract.EnhancementParams{ToolVersion: "professional", Band: "4k", Duration: 5.084})
	if err != nil {
		t.Fatal(err)
	}
	if e.Amount != 1_920_000 || e.Multiplier != 4 || e.Tier != "professional" {
		t.Errorf("enhancement = %+v", e)
	}
	// Lite up-to-720p with explicit fps 24 → 6 × 0.005 × 1 = 0.03.
	e2, _ := EstimateEnhancement(ten, contract.EnhLite, &contract.EnhancementParams{Band: "720p", Duration: 5.084, FPS: intp(24)})
	if e2.Amount != 30_000 || e2.Multiplier != 1 || e2.Tier != "lite" {
		t.Errorf("lite = %+v", e2)
	}
}

func TestNativeSettlementUsesTokens(t *testing.T) {
	got, err := SettleAmount(Quote{Route: "native", Rate: money.Micros(2_500_000)}, Measured{CompletionTokens: 108_000})
	if err != nil || got != 270_000 {
		t.Fatalf("settle = %s, %v", got, err)
	}
}

func TestSecondsToMicrosKeepsFractions(t *testing.T) {
	for s, want := range map[float64]int64{2.125: 2_125_000, 3.0: 3_000_000, 5.042: 5_042_000, 0.0000004: 0} {
		if got := SecondsToMicros(s); got != want {
			t.Errorf("SecondsToMicros(%v) = %d", s, got)
		}
	}
}
