package admin_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"mediagen/internal/admin"
	"mediagen/internal/apierr"
	"mediagen/internal/catalog"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
)

// countingStore counts token lookups.
type countingStore struct {
	store.Store
	lookups atomic.Int64
}

func (c *countingStore) AdminTokenByHash(ctx context.Context, hash []byte) (store.AdminToken, error) {
	c.lookups.Add(1)
	return c.Store.AdminTokenByHash(ctx, hash)
}

func newService(t *testing.T) (*admin.Service, *countingStore) {
	t.Helper()
	db := testkit.SQLite(t)
	cs := &countingStore{Store: db}
	cat := catalog.Demo()
	return admin.New(admin.Config{Store: cs, Catalog: func() *catalog.Catalog { return cat }}), cs
}

func TestMalformedTokensRefusedWithoutAStoreRead(t *testing.T) {
	svc, cs := newService(t)
	good, _, _ := admin.GenerateToken()
	for _, bad := range []string{"", "mga_", "mg_" + strings.Repeat("a", 40), good + "a", good[:len(good)-1], strings.ToUpper(good),
		"mga_" + strings.Repeat("1", 52), good[:10] + "\x00" + good[11:]} {
		_, err := svc.Authenticate(context.Background(), bad)
		var e *apierr.Error
		if !errors.As(err, &e) || e.Kind != apierr.KindAuthentication || e.Code != "invalid_admin_token" {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if n := cs.lookups.Load(); n != 0 {
		t.Errorf("%d store reads for malformed tokens, want 0", n)
	}
	if _, err := svc.Authenticate(context.Background(), good); err == nil || cs.lookups.Load() != 1 {
		t.Errorf("a well-formed unknown token: %v after %d reads", err, cs.lookups.Load())
	}
}

func TestRolesIncludeTheOnesBelow(t *testing.T) {
	for _, tc := range []struct {
		have, need admin.Role
		ok         bool
	}{
		{admin.RoleOwner, admin.RoleOperator, true}, {admin.RoleOwner, admin.RoleViewer, true}, {admin.RoleOperator, admin.RoleViewer, true},
		{admin.RoleOperator, admin.RoleOwner, false}, {admin.RoleViewer, admin.RoleOperator, false}, {admin.Role("root"), admin.RoleViewer, false},
		{admin.Role(""), admin.RoleViewer, false},
	} {
		if got := tc.have.Allows(tc.need); got != tc.ok {
			t.Errorf("%q allows %q = %v, want %v", tc.have, tc.need, got, tc.ok)
		}
	}
}

// The service checks the role itself too, so no caller can skip the check.
func TestServiceRefusesLowRolesWithNothingWritten(t *testing.T) {
	svc, cs := newService(t)
	ctx := context.Background()
	viewer := admin.Actor{TokenID: "adt_v", Name: "v", Role: admin.RoleViewer, Via: admin.ViaAPI}
	operator := admin.Actor{TokenID: "adt_o", Name: "o", Role: admin.RoleOperator, Via: admin.ViaAPI}
	calls := []struct {
		name string
		who  admin.Actor
		do   func(admin.Actor) error
	}{
		{"key create", viewer, func(a admin.Actor) error { _, err := svc.CreateKey(ctx, a, admin.KeyInput{Tenant: "demo"}); return err }},
		{"credit", viewer, func(a admin.Actor) error {
			_, err := svc.Credit(ctx, a, "key_x", admin.CreditInput{Amount: 1})
			return err
		}},
		{"group grant", viewer, func(a admin.Actor) error {
			_, err := svc.GrantGroup(ctx, a, admin.GroupInput{Tenant: "demo", Name: "g"})
			return err
		}},
		{"token create", operator, func(a admin.Actor) error {
			_, err := svc.CreateToken(ctx, a, admin.TokenInput{Name: "t", Role: "owner"})
			return err
		}},
		{"token revoke", operator, func(a admin.Actor) error { _, err := svc.RevokeToken(ctx, a, "adt_x"); return err }},
	}
	for _, c := range calls {
		err := c.do(c.who)
		var e *apierr.Error
		if !errors.As(err, &e) || e.Kind != apierr.KindPermission {
			t.Errorf("%s as %s: %v", c.name, c.who.Role, err)
		}
	}
	if list, _ := cs.Audit(ctx, store.AuditQuery{}); len(list) != 0 {
		t.Errorf("refused calls audited: %+v", list)
	}
	// An operator may not make itself an owner.
	if _, err := svc.CreateToken(ctx, operator, admin.TokenInput{Name: "me", Role: "owner"}); err == nil {
		t.Error("an operator made an owner token")
	}
}
