package main

import (
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
)

// The key lifecycle commands: create with expiry, caps and credit in one go; list shows them;
// rotate prints a new secret; update changes and clears; debit moves money back and refuses to
// take a limited key below zero; the ledger still checks.
func TestAdminKeyLifecycleCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := admin(t, dir, "key", "create", "--tenant", "demo", "--name", "ci", "--expires", "2099-01-01T00:00:00Z",
		"--daily-cap", "5.00", "--monthly-cap", "100", "--credit", "10")
	id := regexp.MustCompile(`key id:\s+(key_\S+)`).FindStringSubmatch(out)
	first := reKey.FindString(out)
	if id == nil || first == "" || !strings.Contains(out, "expires: 2099-01-01T00:00:00Z") || !strings.Contains(out, "credit:  10 USD") {
		t.Fatalf("key create output:\n%s", out)
	}
	list := admin(t, dir, "key", "list")
	for _, want := range []string{"active", "10 USD", "2099-01-01T00:00:00Z", "5 (0 spent)", "100 (0 spent)"} {
		if !strings.Contains(list, want) {
			t.Errorf("key list lacks %q:\n%s", want, list)
		}
	}

	out = admin(t, dir, "key", "rotate", id[1], "--grace", "24h")
	second := reKey.FindString(out)
	if second == "" || second == first || !strings.Contains(out, "the previous secret works until") {
		t.Fatalf("key rotate output:\n%s", out)
	}
	if list := admin(t, dir, "key", "list"); !strings.Contains(list, "rotating") || !strings.Contains(list, second[:10]) {
		t.Errorf("key list after rotate:\n%s", list)
	}
	if get := admin(t, dir, "key", "get", id[1]); !strings.Contains(get, "rotating") || !strings.Contains(get, "previous secret valid until") ||
		!strings.Contains(get, "daily cap:  5 (0 spent)") || !strings.Contains(get, "expires:    2099-01-01T00:00:00Z") {
		t.Errorf("key get:\n%s", get)
	}
	out = admin(t, dir, "key", "rotate", id[1])
	if !strings.Contains(out, "the previous secret no longer works") {
		t.Errorf("rotate without grace:\n%s", out)
	}

	out = admin(t, dir, "key", "update", id[1], "--name", "renamed", "--no-expiry", "--daily-cap", "none", "--monthly-cap", "50")
	if !strings.Contains(out, `name "renamed", expires -`) || strings.Contains(out, "daily cap") || !strings.Contains(out, "monthly cap: 50 USD") {
		t.Errorf("key update output:\n%s", out)
	}

	out = admin(t, dir, "debit", "--key", id[1], "--amount", "2.5", "--note", "duplicate top-up")
	if !strings.Contains(out, "debited 2.5 USD") || !strings.Contains(out, "available now 7.5 USD") {
		t.Errorf("debit output:\n%s", out)
	}
	err := run(context.Background(), []string{"admin", "debit", "--key", id[1], "--amount", "7.500001", "--note", "x", "--data-dir", dir}, env(nil), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "never taken below zero") {
		t.Errorf("debit below zero: %v", err)
	}
	if out := admin(t, dir, "ledger", "check"); !strings.Contains(out, "ledger: OK") {
		t.Errorf("ledger check:\n%s", out)
	}
	// Every write went through admin.Service: audited as the CLI's user.
	audit := admin(t, dir, "audit", "--target", id[1])
	for _, action := range []string{"key.create", "key.rotate", "key.update", "debit.create"} {
		if !strings.Contains(audit, action) {
			t.Errorf("no %s in the audit log:\n%s", action, audit)
		}
	}

	for _, args := range [][]string{
		{"key", "create", "--tenant", "demo", "--expires", "2001-01-01T00:00:00Z"},
		{"key", "create", "--tenant", "demo", "--expires", "soon"},
		{"key", "create", "--tenant", "demo", "--daily-cap", "-1"},
		{"key", "create", "--tenant", "demo", "--credit", "0"},
		{"key", "rotate", id[1], "--grace", "-1h"},
		{"key", "rotate", "key_missing"},
		{"key", "update", id[1]},
		{"key", "update", id[1], "--expires", "1h", "--no-expiry"},
		{"key", "update", id[1], "--monthly-cap", "lots"},
		{"key", "update", "key_missing", "--name", "x"},
		{"debit", "--key", id[1], "--amount", "1"},
		{"debit", "--key", id[1], "--amount", "-1", "--note", "x"},
		{"debit", "--key", "key_missing", "--amount", "1", "--note", "x"},
	} {
		err := run(context.Background(), append(append([]string{"admin"}, args...), "--data-dir", dir), env(nil), io.Discard, io.Discard)
		if err == nil || exitCode(err) == 0 {
			t.Errorf("%v: err = %v", args, err)
		}
	}
	if list := admin(t, dir, "key", "list"); strings.Count(list, "\n") != 2 {
		t.Errorf("refused creates made keys:\n%s", list)
	}
}

// The CLI's money rules: a cap of 0 is a cap and none removes it; amounts above their ceiling
// are refused naming it; a revoked key is credited or debited only with --force and a note,
// and the forced write is audited.
func TestAdminMoneyCommandsKeepCeilingsCapsAndRevokedKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := admin(t, dir, "key", "create", "--tenant", "demo", "--name", "z", "--daily-cap", "0", "--credit", "3")
	id := regexp.MustCompile(`key id:\s+(key_\S+)`).FindStringSubmatch(out)
	if id == nil || !strings.Contains(out, "daily cap:   0 USD per UTC day") {
		t.Fatalf("key create with --daily-cap 0:\n%s", out)
	}
	fail := func(want string, args ...string) {
		t.Helper()
		err := run(context.Background(), append(append([]string{"admin"}, args...), "--data-dir", dir), env(nil), io.Discard, io.Discard)
		if err == nil || exitCode(err) == 0 || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: err = %v, want one saying %q", args, err, want)
		}
	}
	fail("1000000000000", "credit", "--key", id[1], "--amount", "9223372036774.775807")
	fail("1000000000000", "key", "update", id[1], "--monthly-cap", "1000000000000.5")
	admin(t, dir, "key", "revoke", id[1])
	fail("revoked", "credit", "--key", id[1], "--amount", "1")
	fail("revoked", "debit", "--key", id[1], "--amount", "1", "--note", "x")
	fail("--note", "credit", "--key", id[1], "--amount", "1", "--force")
	if out := admin(t, dir, "credit", "--key", id[1], "--amount", "1", "--force", "--note", "refund owed"); !strings.Contains(out, "available now 4 USD") {
		t.Errorf("forced credit:\n%s", out)
	}
	if out := admin(t, dir, "debit", "--key", id[1], "--amount", "2", "--force", "--note", "correction"); !strings.Contains(out, "available now 2 USD") {
		t.Errorf("forced debit:\n%s", out)
	}
	if out := admin(t, dir, "ledger", "check"); !strings.Contains(out, "ledger: OK") {
		t.Errorf("ledger check:\n%s", out)
	}
}
