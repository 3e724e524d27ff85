package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

var reAdminToken = regexp.MustCompile(`mga_[a-z2-7]{52}`)

// adminAs runs an admin command as the OS user user and returns its output.
func adminAs(t *testing.T, dataDir, user string, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	all := append(append([]string{"admin"}, args...), "--data-dir", dataDir)
	if err := run(context.Background(), all, env(map[string]string{"USER": user}), &out, &errOut); err != nil {
		t.Fatalf("admin %v: %v\n%s", args, err, errOut.String())
	}
	return out.String()
}

func send(t *testing.T, method, url, token, idem, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// The admin API is served on --admin-listen only: on the public address every /admin/ path
// is the ordinary 404, whatever the credentials, and the admin listener serves nothing of the
// public API. The first owner token comes from the CLI.
func TestAdminAPIOnlyOnItsOwnListener(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := adminAs(t, dir, "root", "token", "create", "--name", "bootstrap", "--role", "owner")
	token := reAdminToken.FindString(out)
	if token == "" {
		t.Fatalf("token create printed no secret:\n%s", out)
	}
	m, _ := startMain(t, dir, "--admin-listen", "127.0.0.1:0")
	if m.AdminURL() == "" {
		t.Fatal("no admin listener")
	}
	if status, body := get(t, m.AdminURL()+"/admin/v1/whoami", token); status != 200 || !strings.Contains(body, `"role":"owner"`) {
		t.Fatalf("whoami on the admin listener: %d %s", status, body)
	}
	_, notFound := get(t, m.URL()+"/v1/no-such-route", "")
	for _, path := range []string{"/admin/v1/whoami", "/admin/v1/keys", "/admin/", "/admin/v1/audit"} {
		for _, tok := range []string{"", token, m.DemoKey} {
			status, body := get(t, m.URL()+path, tok)
			if status != 404 || body != notFound {
				t.Errorf("public GET %s: %d %s, want the ordinary 404 %s", path, status, body, notFound)
			}
		}
	}
	if status, _ := send(t, "POST", m.URL()+"/admin/v1/keys", token, "k1", `{"tenant":"demo"}`); status != 404 {
		t.Errorf("public POST /admin/v1/keys: %d", status)
	}
	for _, path := range []string{"/v1/videos", "/v1/billing/balance", "/healthz", "/metrics", "/v1/videos/task_x"} {
		for _, tok := range []string{token, m.DemoKey} {
			if status, body := get(t, m.AdminURL()+path, tok); status != 404 || !strings.Contains(body, `"not_found_error"`) {
				t.Errorf("admin listener GET %s: %d %s, want 404", path, status, body)
			}
		}
	}
	// A write on the admin listener works and is audited with the token.
	status, body := send(t, "POST", m.AdminURL()+"/admin/v1/keys", token, "create-1", `{"tenant":"demo","name":"from-api"}`)
	if status != 201 || !reKey.MatchString(body) {
		t.Fatalf("create a key through the API: %d %s", status, body)
	}
	if status, body := get(t, m.AdminURL()+"/admin/v1/audit?action=key.create", token); status != 200 || !strings.Contains(body, `"name":"bootstrap"`) || !strings.Contains(body, `"via":"api"`) {
		t.Errorf("audit of the API write: %d %s", status, body)
	}
}

// Every CLI write goes through the same service as the API, and is audited as cli with the OS
// user.
func TestAdminCLIWritesAreAudited(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := adminAs(t, dir, "alice", "key", "create", "--tenant", "demo", "--name", "ci")
	id := regexp.MustCompile(`key id:\s+(key_\S+)`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("key create:\n%s", out)
	}
	adminAs(t, dir, "alice", "credit", "--key", id[1], "--amount", "3.5", "--note", "welcome")
	if got := adminAs(t, dir, "alice", "key", "get", id[1]); !strings.Contains(got, "available:  3.5 USD") || !strings.Contains(got, "state:      active") {
		t.Errorf("key get:\n%s", got)
	}
	adminAs(t, dir, "alice", "key", "revoke", id[1])
	tok := adminAs(t, dir, "bob", "token", "create", "--name", "ops", "--role", "operator", "--expires", "24h")
	tokID := regexp.MustCompile(`token id:\s+(adt_\S+)`).FindStringSubmatch(tok)
	if tokID == nil {
		t.Fatalf("token create:\n%s", tok)
	}
	adminAs(t, dir, "bob", "token", "revoke", tokID[1])
	grp := adminAs(t, dir, "bob", "asset-group", "grant", "--tenant", "demo", "--name", "Stock")
	gid := regexp.MustCompile(`group (grp_\S+)`).FindStringSubmatch(grp)
	if gid == nil {
		t.Fatalf("asset-group grant:\n%s", grp)
	}
	adminAs(t, dir, "bob", "asset-group", "revoke", gid[1])
	audit := adminAs(t, dir, "carol", "audit")
	for _, want := range []string{"key.create", "credit.create", "key.revoke", "token.create", "token.revoke", "asset_group.grant", "asset_group.revoke",
		"alice (cli)", "bob (cli)", `"state":"revoked"`, `"note":"welcome"`} {
		if !strings.Contains(audit, want) {
			t.Errorf("admin audit lacks %q:\n%s", want, audit)
		}
	}
	if strings.Contains(audit, "mga_") && regexp.MustCompile(`mga_[a-z2-7]{52}`).MatchString(audit) || reKey.MatchString(audit) {
		t.Errorf("the audit log shows a secret:\n%s", audit)
	}
	only := adminAs(t, dir, "carol", "audit", "--action", "key.revoke", "--target", "key:"+id[1], "--since", "1h")
	if strings.Count(only, "key.revoke") != 1 || strings.Contains(only, "credit.create") {
		t.Errorf("filtered audit:\n%s", only)
	}
	list := adminAs(t, dir, "carol", "token", "list")
	if !strings.Contains(list, tokID[1]) || !strings.Contains(list, "revoked") || !strings.Contains(list, "cli:bob") {
		t.Errorf("token list:\n%s", list)
	}
	// A refused write leaves no entry.
	var errOut bytes.Buffer
	err := run(context.Background(), []string{"admin", "token", "create", "--name", "x", "--role", "root", "--data-dir", dir}, env(nil), io.Discard, &errOut)
	if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "--role") {
		t.Errorf("token create with a bad role: %v", err)
	}
	if n := strings.Count(adminAs(t, dir, "carol", "audit"), "token.create"); n != 1 {
		t.Errorf("%d token.create entries after a refused create, want 1", n)
	}
}
