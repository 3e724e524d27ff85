package adminapi

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/apierr"
	"mediagen/internal/billing"
	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

// TestNoAcceptedSequenceBreaksALaterValidOperation is the property of issue 41 §3: random
// sequences of operations (credits, debits, key creates with credit and caps, cap updates,
// reservations and settlements, forced writes on revoked keys), with amounts at and around
// every ceiling, each either done or refused as the client's error (400 or 402), never an
// internal error; and afterwards a fixed set of valid operations all succeed, the ledger's
// invariants hold, and every balance is within its ceiling. Both stores.
func TestNoAcceptedSequenceBreaksALaterValidOperation(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		for seed := range uint64(6) {
			runMoneySequence(t, e, seed, 80)
		}
	})
}

// amounts around the ceilings, and ordinary ones.
func pickAmount(r *rand.Rand) money.Micros {
	near := []money.Micros{money.MaxAmount, money.MaxAmount - 1, money.MaxAmount + 1, money.MaxBalance / 2,
		money.MaxFunding / 3, money.MaxFunding, 9_223_372_036_774_775_807, 1, 1_000_000}
	if r.IntN(3) == 0 {
		return money.Micros(r.Int64N(100_000_000)) + 1
	}
	return near[r.IntN(len(near))]
}

func runMoneySequence(t *testing.T, e *env, seed uint64, steps int) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 41))
	a := admin.CLIActor("property")
	var ids []string
	type open struct {
		key    string
		ref    string
		amount money.Micros
	}
	var opens []open
	n := 0
	check := func(op string, err error) {
		t.Helper()
		if err == nil {
			return
		}
		switch apierr.As(err).Kind {
		case apierr.KindInvalid, apierr.KindInsufficientBalance:
			return // refused as the client's error: fine
		}
		if billing.IsCapRefusal(err) || errors.Is(err, store.ErrInsufficientFunds) {
			return // a reservation refused by a cap or the balance (402 on the public API)
		}
		t.Fatalf("seed %d: %s: an internal error: %v", seed, op, err)
	}
	pickKey := func() string { return ids[r.IntN(len(ids))] }
	for i := range 4 {
		k, err := e.svc.CreateKey(ctx, a, admin.KeyInput{Tenant: "demo", Name: fmt.Sprint("p", i), Unlimited: i%2 == 1})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, k.ID)
	}
	for range steps {
		switch op := r.IntN(8); op {
		case 0:
			_, err := e.svc.Credit(ctx, a, pickKey(), admin.CreditInput{Amount: pickAmount(r), Note: "n", Force: r.IntN(2) == 0})
			check("credit", err)
		case 1:
			_, err := e.svc.Debit(ctx, a, pickKey(), admin.DebitInput{Amount: pickAmount(r), Note: "n", Force: r.IntN(2) == 0})
			check("debit", err)
		case 2:
			in := admin.KeyInput{Tenant: "demo", Unlimited: r.IntN(2) == 0, Credit: pickAmount(r)}
			if r.IntN(2) == 0 {
				in.Caps.Daily = money.CapOf(pickAmount(r) - 1)
			}
			k, err := e.svc.CreateKey(ctx, a, in)
			check("key create", err)
			if err == nil {
				ids = append(ids, k.ID)
			}
		case 3:
			c := money.CapOf(pickAmount(r) - 1)
			if r.IntN(3) == 0 {
				c = money.NoCap
			}
			_, err := e.svc.UpdateKey(ctx, a, pickKey(), admin.KeyUpdate{Daily: &c, Monthly: &c})
			check("cap update", err)
		case 4, 5:
			id := pickKey()
			k, err := e.st.Key(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			n++
			ref := fmt.Sprintf("task_p%d_%d", seed, n)
			amount := pickAmount(r)
			err = e.st.Transact(ctx, func(tx store.Tx) error {
				return billing.Reserve(ctx, tx, keys.Caller{Key: k}, ref, amount, time.Now())
			})
			check("reserve", err)
			if err == nil {
				opens = append(opens, open{id, ref, amount})
			}
		case 6:
			if len(opens) == 0 {
				continue
			}
			i := r.IntN(len(opens))
			o := opens[i]
			opens = append(opens[:i], opens[i+1:]...)
			final := money.Micros(r.Int64N(int64(o.amount) + 1)) // a charge never exceeds its reservation
			err := e.st.Transact(ctx, func(tx store.Tx) error {
				_, err := billing.Settle(ctx, tx, o.key, o.ref, o.amount, final, time.Now())
				return err
			})
			if err != nil {
				t.Fatalf("seed %d: settlement of %s: %v", seed, o.ref, err) // a settlement must never fail
			}
		case 7:
			_, err := e.svc.RevokeKey(ctx, a, pickKey())
			check("revoke", err)
		}
	}
	// Settle what is still open: every settlement succeeds.
	for _, o := range opens {
		err := e.st.Transact(ctx, func(tx store.Tx) error {
			_, err := billing.Settle(ctx, tx, o.key, o.ref, o.amount, o.amount, time.Now())
			return err
		})
		if err != nil {
			t.Fatalf("seed %d: final settlement of %s: %v", seed, o.ref, err)
		}
	}
	if err := e.st.CheckLedger(ctx); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	// Every balance within its ceiling (spent aside: settlements are exempt, docs/billing.md).
	for _, id := range ids {
		b, err := e.st.Balance(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if b.Available > money.MaxBalance || b.Available < -money.MaxBalance || b.Reserved > money.MaxBalance {
			t.Fatalf("seed %d: key %s outside its ceiling: %+v", seed, id, b)
		}
	}

	// The fixed set of later valid operations. Whether a credit fits depends only on the
	// funding total, which the sequence may have filled: then it is refused with the ceiling
	// named, else it lands. Everything else always lands.
	funding := fundingBalance(t, e)
	fresh, err := e.svc.CreateKey(ctx, a, admin.KeyInput{Tenant: "demo", Name: "after", Unlimited: true})
	if err != nil {
		t.Fatalf("seed %d: key create after the sequence: %v", seed, err)
	}
	_, err = e.svc.Credit(ctx, a, fresh.ID, admin.CreditInput{Amount: money.Scale})
	if fits := funding-money.Scale >= -money.MaxFunding; fits != (err == nil) {
		t.Fatalf("seed %d: credit of 1 with the funding account at %s: %v", seed, funding, err)
	} else if err != nil && apierr.As(err).Param != "amount" {
		t.Fatalf("seed %d: the refused credit names %q", seed, apierr.As(err).Param)
	}
	k, _ := e.st.Key(ctx, fresh.ID)
	err = e.st.Transact(ctx, func(tx store.Tx) error {
		return billing.Reserve(ctx, tx, keys.Caller{Key: k}, fmt.Sprintf("task_after_%d", seed), 2*money.Scale, time.Now())
	})
	if err != nil {
		t.Fatalf("seed %d: reservation after the sequence: %v", seed, err)
	}
	err = e.st.Transact(ctx, func(tx store.Tx) error {
		_, err := billing.Settle(ctx, tx, fresh.ID, fmt.Sprintf("task_after_%d", seed), 2*money.Scale, money.Scale, time.Now())
		return err
	})
	if err != nil {
		t.Fatalf("seed %d: settlement after the sequence: %v", seed, err)
	}
	zero, none := money.CapOf(0), money.NoCap
	if _, err := e.svc.UpdateKey(ctx, a, fresh.ID, admin.KeyUpdate{Daily: &zero, Monthly: &none}); err != nil {
		t.Fatalf("seed %d: cap update after the sequence: %v", seed, err)
	}
	if _, err := e.svc.RotateKey(ctx, a, fresh.ID, time.Hour); err != nil {
		t.Fatalf("seed %d: rotation after the sequence: %v", seed, err)
	}
	if _, err := e.svc.Keys(ctx, a, admin.KeyFilter{}); err != nil {
		t.Fatalf("seed %d: key listing after the sequence: %v", seed, err)
	}
	if err := e.st.CheckLedger(ctx); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
}

// fundingBalance sums the funding account's entries.
func fundingBalance(t *testing.T, e *env) money.Micros {
	t.Helper()
	es, err := e.st.Entries(context.Background(), store.FundingAccountID("USD"))
	if err != nil {
		t.Fatal(err)
	}
	var sum money.Micros
	for _, x := range es {
		var ok bool
		if sum, ok = money.Add(sum, x.Amount); !ok {
			t.Fatal("funding entries overflow")
		}
	}
	return sum
}
