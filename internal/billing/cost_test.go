package billing

import (
	"testing"

	"mediagen/internal/catalog"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

func testAccounts(name string) (catalog.UpstreamAccount, bool) {
	tokens, chars := catalog.Rate(900_000), catalog.Rate(15)
	switch name {
	case "ark":
		return catalog.UpstreamAccount{Name: name, Cost: &catalog.Cost{Currency: "USD", PerMillionTokens: &tokens,
			PerSecond: map[string]catalog.Rate{"480p": 10_000, "720p": 20_000, "1080p": 40_000}}}, true
	case "oai":
		return catalog.UpstreamAccount{Name: name, Cost: &catalog.Cost{Currency: "EUR", PerSecond: map[string]catalog.Rate{"720p": 100_000},
			PerCharacter: &chars}}, true
	case "sandbox":
		return catalog.UpstreamAccount{Name: name}, true
	}
	return catalog.UpstreamAccount{}, false
}

func TestTaskCostByUnitAndResolution(t *testing.T) {
	t.Parallel()
	native := func(account, res string) string {
		return `{"upstream":"` + account + `","request":{"Native":{"Resolution":"` + res + `"}}}`
	}
	tests := []struct {
		name, request, pricing, status, result string
		reported                               int64
		accounts                               Accounts
		wantCurrency                           string
		want                                   money.Micros
	}{
		{"reported tokens priced per million", native("ark", "1080p"), ``, store.StatusCompleted, `{"duration":5.042,"completion_tokens":108900}`, 0, testAccounts, "USD", 98_010},
		{"the tokens the upstream reported, not the tokens billed", native("ark", "1080p"), ``, store.StatusCompleted, `{"duration":5.042,"completion_tokens":108900}`, 100000, testAccounts, "USD", 90_000},
		{"no tokens: seconds at the requested resolution", native("ark", "480p"), ``, store.StatusCompleted, `{"duration":5.042}`, 0, testAccounts, "USD", 50_420},
		{"1080p seconds", native("ark", "1080p"), ``, store.StatusCompleted, `{"duration":2.5}`, 0, testAccounts, "USD", 100_000},
		{"production: the generation resolution", `{"upstream":"ark","generate_resolution":"720p"}`, ``, store.StatusCompleted, `{"duration":10}`, 0, testAccounts, "USD", 200_000},
		{"production: the generation half's reported tokens", `{"upstream":"ark","generate_resolution":"720p"}`, ``, store.StatusCompleted, `{"duration":10}`, 1000000, testAccounts, "USD", 900_000},
		{"enhancement: the band", `{"upstream":"ark"}`, `{"route":"enhancement","band":"480p"}`, store.StatusCompleted, `{"duration":3,"resolution":"854x480"}`, 0, testAccounts, "USD", 30_000},
		{"an account without tokens uses seconds even when tokens are reported", native("oai", "720p"), ``, store.StatusCompleted, `{"duration":8,"completion_tokens":5}`, 0, testAccounts, "EUR", 800_000},
		{"an unpriced resolution is unknown", native("oai", "1080p"), ``, store.StatusCompleted, `{"duration":8}`, 0, testAccounts, "", 0},
		{"an account without a cost block is unknown", native("sandbox", "720p"), ``, store.StatusCompleted, `{"duration":8}`, 0, testAccounts, "", 0},
		{"an unknown account is unknown", native("gone", "720p"), ``, store.StatusCompleted, `{"duration":8}`, 0, testAccounts, "", 0},
		{"no catalog: unknown", native("ark", "720p"), ``, store.StatusCompleted, `{"duration":8}`, 0, nil, "", 0},
		{"a failed task costs 0 on a priced account", native("ark", "720p"), ``, store.StatusFailed, ``, 0, testAccounts, "USD", 0},
		{"an expired task on an unpriced account is unknown", native("sandbox", "720p"), ``, store.StatusExpired, ``, 0, testAccounts, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pricing := tt.pricing
			if pricing == "" {
				pricing = `{"currency":"USD"}`
			}
			task := store.Task{ID: "vid_1", Route: "native", Status: tt.status, Request: []byte(tt.request), Result: []byte(tt.result), Pricing: []byte(pricing)}
			d := WithTaskCost(TaskUsage(task), task, tt.reported, tt.accounts)
			if d.CostCurrency != tt.wantCurrency || d.Cost != tt.want {
				t.Errorf("cost %s %q, want %s %q", d.Cost, d.CostCurrency, tt.want, tt.wantCurrency)
			}
			if d.CostAccount == "" {
				t.Error("the account it ran on is not recorded")
			}
		})
	}
}

func TestSpeechCostPerCharacter(t *testing.T) {
	t.Parallel()
	sp := store.Speech{ID: "sp_1", Status: store.SpeechCompleted, Request: []byte(`{"upstream":"oai"}`),
		Pricing: []byte(`{"currency":"USD","characters":1234}`), Result: []byte(`{"duration_us":2000000}`)}
	d := WithSpeechCost(SpeechUsage(sp), sp, testAccounts)
	if d.CostCurrency != "EUR" || d.Cost != 1234*15 || d.CostAccount != "oai" {
		t.Errorf("speech cost %s %q on %q, want 0.01851 EUR on oai", d.Cost, d.CostCurrency, d.CostAccount)
	}
	sp.Request = []byte(`{"upstream":"ark"}`) // prices no characters
	if d := WithSpeechCost(SpeechUsage(sp), sp, testAccounts); d.CostCurrency != "" {
		t.Errorf("an account that prices no characters: %s %q, want unknown", d.Cost, d.CostCurrency)
	}
	sp.Request, sp.Status = []byte(`{"upstream":"oai"}`), store.SpeechFailed
	if d := WithSpeechCost(SpeechUsage(sp), sp, testAccounts); d.CostCurrency != "EUR" || d.Cost != 0 {
		t.Errorf("a failed speech: %s %q, want 0 EUR", d.Cost, d.CostCurrency)
	}
}

// An upstream that reports the seconds it bills (DashScope's usage.video_duration) costs those
// seconds, not the stored result's (cut to the request); without a report, the stored ones.
func TestTaskCostUsesTheReportedSeconds(t *testing.T) {
	t.Parallel()
	task := store.Task{ID: "vid_1", Route: "native", Status: store.StatusCompleted, Pricing: []byte(`{"currency":"USD"}`),
		Request: []byte(`{"upstream":"oai","request":{"Native":{"Resolution":"720p"}}}`), Result: []byte(`{"duration":5.25}`)}
	for _, tc := range []struct {
		reported float64
		want     money.Micros
	}{{60, 6_000_000}, {5, 500_000}, {0, 525_000}} {
		if d := WithTaskCostSeconds(TaskUsage(task), task, 0, tc.reported, testAccounts); d.Cost != tc.want || d.CostCurrency != "EUR" {
			t.Errorf("reported %v s: cost %s %q, want %s EUR", tc.reported, d.Cost, d.CostCurrency, tc.want)
		}
	}
}
