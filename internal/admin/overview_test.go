package admin_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/store"
)

func TestUpstreamSlotListNamesEveryAccountOfTheCatalogAndLeftovers(t *testing.T) {
	svc, cs := newService(t)
	ctx := context.Background()
	take := func(account, task string) {
		t.Helper()
		st := store.SlotTaker{SlotHolder: store.SlotHolder{Account: account, TaskID: task, TenantID: "demo", KeyID: "key_a"},
			Limit: 5, Now: time.Now(), WaitFor: time.Minute}
		if err := cs.Transact(ctx, func(tx store.Tx) error { _, err := tx.TakeSlot(ctx, st); return err }); err != nil {
			t.Fatal(err)
		}
	}
	take("sandbox", "t1")
	take("gone-account", "t2") // an account a reloaded catalog no longer names
	viewer := admin.Actor{Name: "v", Role: admin.RoleViewer, Via: admin.ViaAPI}
	got, err := svc.UpstreamSlotList(ctx, viewer)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range got {
		names = append(names, fmt.Sprintf("%s:%d", u.Account, u.InFlight))
	}
	if names[0] != "sandbox:1" || names[len(names)-1] != "gone-account:1" {
		t.Errorf("accounts: %v; want sandbox first with its slot, the leftover last", names)
	}
	if _, err := svc.JobQueue(ctx, admin.Actor{Name: "nobody"}); err == nil {
		t.Error("an actor without a role read the job queue")
	}
	if q, err := svc.JobQueue(ctx, viewer); err != nil || len(q) != 0 {
		t.Errorf("empty queue: %+v %v", q, err)
	}
}
