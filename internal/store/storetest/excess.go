package storetest

import (
	"errors"
	"testing"
	"time"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

// testUpstreamExcess: records written in a transaction are listed newest first, by account
// and by ref, limited, and summed per account, kind and currency; a transaction that fails
// leaves none.
func testUpstreamExcess(t *testing.T, s store.Store) {
	ctx := t.Context()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rec := func(id, upstream, ref, kind string, amount money.Micros, i int) store.UpstreamExcess {
		return store.UpstreamExcess{ID: id, Upstream: upstream, Route: "native", Ref: ref, KeyID: "key_1", TenantID: "acme", Kind: kind,
			Claimed: amount + 100, Charged: 100, Amount: amount, Currency: "USD", Detail: "60.000 s cut to 5.150 s", CreatedAt: at.Add(time.Duration(i) * time.Second)}
	}
	all := []store.UpstreamExcess{
		rec("ex_1", "ark-main", "task_a", "duration", 1_000, 0),
		rec("ex_2", "ark-main", "task_a", "usage_over", 2_000, 1),
		rec("ex_3", "openai-main", "sp_b", "duration", 40, 2),
		rec("ex_4", "ark-main", "task_c", "duration", 500, 3),
	}
	err := s.Transact(ctx, func(tx store.Tx) error {
		for _, e := range all {
			if err := tx.RecordUpstreamExcess(ctx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("settlement failed")
	if err := s.Transact(ctx, func(tx store.Tx) error {
		if err := tx.RecordUpstreamExcess(ctx, rec("ex_5", "ark-main", "task_d", "duration", 9, 4)); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("failing transaction: %v", err)
	}
	ids := func(es []store.UpstreamExcess) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    store.ExcessFilter
		want []string
	}{
		{"every record, newest first", store.ExcessFilter{}, []string{"ex_4", "ex_3", "ex_2", "ex_1"}},
		{"one account", store.ExcessFilter{Upstream: "ark-main"}, []string{"ex_4", "ex_2", "ex_1"}},
		{"one task", store.ExcessFilter{Ref: "task_a"}, []string{"ex_2", "ex_1"}},
		{"limited", store.ExcessFilter{Limit: 1}, []string{"ex_4"}},
	} {
		got, err := s.UpstreamExcess(ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if g := ids(got); len(g) != len(tc.want) || (len(g) > 0 && (g[0] != tc.want[0] || g[len(g)-1] != tc.want[len(tc.want)-1])) {
			t.Errorf("%s: %v, want %v", tc.name, g, tc.want)
		}
	}
	got, _ := s.UpstreamExcess(ctx, store.ExcessFilter{Ref: "sp_b"})
	if len(got) != 1 || got[0] != all[2] {
		t.Errorf("read back %+v, want %+v", got, all[2])
	}
	sum, err := s.UpstreamExcessSummary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.ExcessSummary{
		{Upstream: "ark-main", Kind: "duration", Currency: "USD", Count: 2, Amount: 1_500},
		{Upstream: "ark-main", Kind: "usage_over", Currency: "USD", Count: 1, Amount: 2_000},
		{Upstream: "openai-main", Kind: "duration", Currency: "USD", Count: 1, Amount: 40},
	}
	if len(sum) != len(want) {
		t.Fatalf("summary %+v, want %+v", sum, want)
	}
	for i := range want {
		if sum[i] != want[i] {
			t.Errorf("summary row %d = %+v, want %+v", i, sum[i], want[i])
		}
	}
}
