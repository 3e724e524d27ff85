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
	tests := []struct {
		name, request, status, result string
		accounts                      Accounts
		wantCurrency                  string
		want                          money.Micros
	}{
		{"reported tokens priced per million", `{"upstream":"ark"}`, store.StatusCompleted, `{"duration":5.042,"resolution":"1080p","completion_tokens":108900}`, testAccounts, "USD", 98_010},
		{"no tokens: seconds at the output resolution", `{"upstream":"ark"}`, store.StatusCompleted, `{"duration":5.042,"resolution":"480p"}`, testAccounts, "USD", 50_420},
		{"1080p seconds", `{"upstream":"ark"}`, store.StatusCompleted, `{"duration":2.5,"resolution":"1080p"}`, testAccounts, "USD", 100_000},
		{"production: the generation resolution", `{"upstream":"ark","generate_resolution":"720p"}`, store.StatusCompleted, `{"duration":10,"resolution":"4k"}`, testAccounts, "USD", 200_000},
		{"an account without tokens uses seconds even when tokens are reported", `{"upstream":"oai"}`, store.StatusCompleted, `{"duration":8,"resolution":"720p","completion_tokens":5}`, testAccounts, "EUR", 800_000},
		{"an unpriced resolution is unknown", `{"upstream":"oai"}`, store.StatusCompleted, `{"duration":8,"resolution":"1080p"}`, testAccounts, "", 0},
		{"an account without a cost block is unknown", `{"upstream":"sandbox"}`, store.StatusCompleted, `{"duration":8,"resolution":"720p"}`, testAccounts, "", 0},
		{"an unknown account is unknown", `{"upstream":"gone"}`, store.StatusCompleted, `{"duration":8,"resolution":"720p"}`, testAccounts, "", 0},
		{"no catalog: unknown", `{"upstream":"ark"}`, store.StatusCompleted, `{"duration":8,"resolution":"720p"}`, nil, "", 0},
		{"a failed task costs 0 on a priced account", `{"upstream":"ark"}`, store.StatusFailed, ``, testAccounts, "USD", 0},
		{"an expired task on an unpriced account is unknown", `{"upstream":"sandbox"}`, store.StatusExpired, ``, testAccounts, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			task := store.Task{ID: "vid_1", Route: "native", Status: tt.status, Request: []byte(tt.request), Result: []byte(tt.result), Pricing: []byte(`{"currency":"USD"}`)}
			d := WithTaskCost(TaskUsage(task), task, tt.accounts)
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
