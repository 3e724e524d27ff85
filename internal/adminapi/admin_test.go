package adminapi

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

// writeCase is one write endpoint with a body it accepts.
type writeCase struct {
	name string
	path string
	body string
	need admin.Role
}

// writeCases makes one of every write, with fresh targets.
func (e *env) writeCases() []writeCase {
	key, live := e.makeKey(false), e.makeKey(false) // key is revoked below; live stays active
	g, err := e.svc.GrantGroup(context.Background(), admin.CLIActor("tester"), admin.GroupInput{Tenant: "demo", Name: "fixture group"})
	if err != nil {
		e.t.Fatal(err)
	}
	victim, err := e.svc.CreateToken(context.Background(), admin.CLIActor("tester"), admin.TokenInput{Name: "victim", Role: "viewer"})
	if err != nil {
		e.t.Fatal(err)
	}
	return []writeCase{
		{"token create", "/admin/v1/tokens", `{"name":"ci","role":"viewer","expires_in":3600}`, admin.RoleOwner},
		{"token revoke", "/admin/v1/tokens/" + victim.ID + "/revoke", ``, admin.RoleOwner},
		{"key create", "/admin/v1/keys", `{"tenant":"demo","name":"web"}`, admin.RoleOperator},
		{"key revoke", "/admin/v1/keys/" + key + "/revoke", `{}`, admin.RoleOperator},
		{"credit", "/admin/v1/keys/" + live + "/credits", `{"amount":12.5,"note":"top-up"}`, admin.RoleOperator},
		{"forced credit of a revoked key", "/admin/v1/keys/" + key + "/credits", `{"amount":1,"note":"refund owed","force":true}`, admin.RoleOperator},
		{"asset group grant", "/admin/v1/asset-groups", `{"tenant":"demo","name":"Stock"}`, admin.RoleOperator},
		{"asset group revoke", "/admin/v1/asset-groups/" + g.ID + "/revoke", ``, admin.RoleOperator},
	}
}

func TestWritesRefusedBelowTheirRoleWithNothingWritten(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		tokens := map[admin.Role]string{admin.RoleViewer: e.viewer, admin.RoleOperator: e.oper, admin.RoleOwner: e.owner}
		for _, wc := range e.writeCases() {
			for _, role := range []admin.Role{admin.RoleViewer, admin.RoleOperator} {
				if role.Allows(wc.need) {
					continue
				}
				before := e.snap()
				// The body is garbage on purpose: the role is refused before the body is read.
				for _, body := range []string{wc.body, `{"garbage":`} {
					r := e.write(wc.path, tokens[role], body)
					if code, _ := r.errCodeParam(t); r.status != http.StatusForbidden || code != "insufficient_role" {
						t.Errorf("%s as %s: %d %s, want 403 insufficient_role", wc.name, role, r.status, r.body)
					}
				}
				if after := e.snap(); after != before {
					t.Errorf("%s refused for %s changed the store: %+v → %+v", wc.name, role, before, after)
				}
			}
		}
		// The owner may do everything, each write audited once.
		for _, wc := range e.writeCases() {
			before := e.auditCount()
			r := e.write(wc.path, e.owner, wc.body)
			if r.status != http.StatusOK && r.status != http.StatusCreated {
				t.Errorf("%s as owner: %d %s", wc.name, r.status, r.body)
			}
			if got := e.auditCount(); got != before+1 {
				t.Errorf("%s as owner: %d audit entries written, want 1", wc.name, got-before)
			}
		}
		// The operator may do the operator's writes.
		for _, wc := range e.writeCases() {
			if wc.need != admin.RoleOperator {
				continue
			}
			if r := e.write(wc.path, e.oper, wc.body); r.status >= 300 {
				t.Errorf("%s as operator: %d %s", wc.name, r.status, r.body)
			}
		}
	})
}

func TestViewersReadEverything(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		for _, path := range []string{"/admin/v1/whoami", "/admin/v1/tokens", "/admin/v1/keys", "/admin/v1/asset-groups", "/admin/v1/audit", "/admin/v1/tenants"} {
			if r := e.do("GET", path, e.viewer, "", ""); r.status != 200 {
				t.Errorf("viewer GET %s: %d %s", path, r.status, r.body)
			}
		}
	})
}

func TestBadTokensAreUnauthenticated(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		cli := admin.CLIActor("tester")
		revoked, err := e.svc.CreateToken(ctx, cli, admin.TokenInput{Name: "gone", Role: "owner"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.RevokeToken(ctx, cli, revoked.ID); err != nil {
			t.Fatal(err)
		}
		expiring, err := e.svc.CreateToken(ctx, cli, admin.TokenInput{Name: "short", Role: "owner", ExpiresIn: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if r := e.do("GET", "/admin/v1/whoami", expiring.Secret, "", ""); r.status != 200 {
			t.Fatalf("a token before its expiry: %d %s", r.status, r.body)
		}
		e.clock.Advance(time.Hour)
		unknown, _, _ := admin.GenerateToken()
		for _, tc := range []struct {
			name, header, code string
		}{
			{"no header", "", "missing_admin_token"},
			{"basic scheme", "Basic Zm9vOmJhcg==", "invalid_auth_scheme"},
			{"malformed", "Bearer mga_short", "invalid_admin_token"},
			{"an API key", "Bearer mg_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "invalid_admin_token"},
			{"unknown", "Bearer " + unknown, "invalid_admin_token"},
			{"revoked", "Bearer " + revoked.Secret, "revoked_admin_token"},
			{"expired", "Bearer " + expiring.Secret, "expired_admin_token"},
		} {
			for _, m := range []struct{ method, path string }{{"GET", "/admin/v1/whoami"}, {"POST", "/admin/v1/keys"}} {
				req, _ := http.NewRequest(m.method, e.ts.URL+m.path, strings.NewReader(`{"tenant":"demo"}`))
				if tc.header != "" {
					req.Header.Set("Authorization", tc.header)
				}
				req.Header.Set("Idempotency-Key", newIdem())
				res, err := e.ts.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				_, _ = buf.ReadFrom(res.Body)
				res.Body.Close()
				r := resp{status: res.StatusCode, body: buf.Bytes()}
				if code, _ := r.errCodeParam(t); r.status != 401 || code != tc.code {
					t.Errorf("%s %s %s: %d %s, want 401 %s", tc.name, m.method, m.path, r.status, r.body, tc.code)
				}
			}
		}
		if ks, _ := e.st.Keys(ctx, ""); len(ks) != 0 {
			t.Errorf("refused writes made %d keys", len(ks))
		}
	})
}

func TestReplayAnswersTheFirstAnswerByteForByte(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		idem := newIdem()
		first := e.do("POST", "/admin/v1/keys", e.oper, idem, `{"tenant":"demo","name":"once"}`)
		if first.status != 201 {
			t.Fatalf("create: %d %s", first.status, first.body)
		}
		audits := e.auditCount()
		again := e.do("POST", "/admin/v1/keys", e.oper, idem, `{"tenant":"demo","name":"once"}`)
		if again.status != 201 || !bytes.Equal(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay: %d %s (replayed=%q), want the first answer %s", again.status, again.body, again.header.Get("Idempotent-Replayed"), first.body)
		}
		if ks, _ := e.st.Keys(context.Background(), ""); len(ks) != 1 || e.auditCount() != audits {
			t.Errorf("replay acted again: %d keys, %d audit entries (was %d)", len(ks), e.auditCount(), audits)
		}
		other := e.do("POST", "/admin/v1/keys", e.oper, idem, `{"tenant":"demo","name":"twice"}`)
		if code, param := other.errCodeParam(t); other.status != 409 || code != "idempotency_conflict" || param != "Idempotency-Key" {
			t.Errorf("same key, other body: %d %s", other.status, other.body)
		}
		// The key belongs to the token: another token's identical request is a new request.
		mine := e.do("POST", "/admin/v1/keys", e.owner, idem, `{"tenant":"demo","name":"once"}`)
		if mine.status != 201 || bytes.Equal(mine.body, first.body) {
			t.Errorf("another token's request with the same key: %d %s", mine.status, mine.body)
		}
		// After the stored answer expires the key may be used again.
		e.clock.Advance(DefaultIdempotencyTTL)
		if r := e.do("POST", "/admin/v1/keys", e.oper, idem, `{"tenant":"demo","name":"later"}`); r.status != 201 || r.header.Get("Idempotent-Replayed") != "" {
			t.Errorf("after expiry: %d %s", r.status, r.body)
		}
	})
}

func TestConcurrentReplaysOfACreditMoveMoneyOnce(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		key := e.makeKey(false)
		idem := newIdem()
		var wg sync.WaitGroup
		answers := make([]resp, 10)
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i] = e.do("POST", "/admin/v1/keys/"+key+"/credits", e.oper, idem, `{"amount":7.25,"note":"once"}`)
			}()
		}
		wg.Wait()
		for i, a := range answers {
			if a.status != 201 || !bytes.Equal(a.body, answers[0].body) {
				t.Errorf("answer %d: %d %s, want %s", i, a.status, a.body, answers[0].body)
			}
		}
		b, err := e.st.Balance(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := money.Parse("7.25"); b.Available != want {
			t.Errorf("available %s after 10 replays, want 7.25", b.Available)
		}
		list, _ := e.st.Audit(context.Background(), store.AuditQuery{Action: "credit.create"})
		if len(list) != 1 {
			t.Errorf("%d credit audit entries, want 1", len(list))
		}
		if err := e.st.CheckLedger(context.Background()); err != nil {
			t.Error(err)
		}
	})
}

func TestEveryWriteIsAuditedWithBeforeAndAfter(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		for _, wc := range e.writeCases() {
			r := e.write(wc.path, e.owner, wc.body)
			if r.status >= 300 {
				t.Fatalf("%s: %d %s", wc.name, r.status, r.body)
			}
			list, err := e.st.Audit(context.Background(), store.AuditQuery{Limit: 1})
			if err != nil || len(list) != 1 {
				t.Fatalf("%s: %v %v", wc.name, list, err)
			}
			a := list[0]
			if a.ActorID != e.ownerID || a.ActorRole != "owner" || a.Via != "api" || a.RequestID != r.header.Get("X-Request-Id") ||
				a.RemoteAddr == "" || len(a.After) == 0 {
				t.Errorf("%s: audit entry %+v", wc.name, a)
			}
			// A revocation holds what it revoked; a forced credit the revoked key it overrode.
			hasBefore := strings.HasSuffix(wc.path, "/revoke") || strings.Contains(wc.body, `"force":true`)
			if hasBefore != (a.Before != nil) {
				t.Errorf("%s: before = %s", wc.name, a.Before)
			}
			if strings.Contains(string(a.After), "secret") || strings.Contains(string(a.After), "mga_") && !strings.Contains(string(a.After), `"prefix"`) {
				t.Errorf("%s: the audit entry holds a secret: %s", wc.name, a.After)
			}
		}
		// A failed write leaves no entry.
		before := e.auditCount()
		if r := e.write("/admin/v1/keys/key_nope/credits", e.owner, `{"amount":1}`); r.status != 404 {
			t.Errorf("credit of an unknown key: %d %s", r.status, r.body)
		}
		if e.auditCount() != before {
			t.Error("a failed write was audited")
		}
	})
}

func TestBadInputIs400WithParamAndNothingWritten(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		key := e.makeKey(false)
		for _, tc := range []struct {
			name, path, idem, body, param string
		}{
			{"no Idempotency-Key", "/admin/v1/keys", "-", `{"tenant":"demo"}`, "Idempotency-Key"},
			{"Idempotency-Key too long", "/admin/v1/keys", strings.Repeat("k", 256), `{"tenant":"demo"}`, "Idempotency-Key"},
			{"unknown member", "/admin/v1/keys", "", `{"tenant":"demo","owner":"x"}`, "owner"},
			{"member of another case", "/admin/v1/keys", "", `{"Tenant":"demo"}`, "Tenant"},
			{"wrong type", "/admin/v1/keys", "", `{"tenant":"demo","unlimited":"yes"}`, "unlimited"},
			{"null", "/admin/v1/keys", "", `{"tenant":null}`, "tenant"},
			{"missing tenant", "/admin/v1/keys", "", `{}`, "tenant"},
			{"unknown tenant", "/admin/v1/keys", "", `{"tenant":"nobody"}`, "tenant"},
			{"control characters in a name", "/admin/v1/keys", "", `{"tenant":"demo","name":"a\u0007b"}`, "name"},
			{"name too long", "/admin/v1/keys", "", `{"tenant":"demo","name":"` + strings.Repeat("n", 129) + `"}`, "name"},
			{"duplicate member", "/admin/v1/keys", "", `{"tenant":"demo","tenant":"demo"}`, "tenant"},
			{"negative amount", "/admin/v1/keys/" + key + "/credits", "", `{"amount":-5}`, "amount"},
			{"zero amount", "/admin/v1/keys/" + key + "/credits", "", `{"amount":0}`, "amount"},
			{"amount as a string", "/admin/v1/keys/" + key + "/credits", "", `{"amount":"5"}`, "amount"},
			{"amount with 7 decimals", "/admin/v1/keys/" + key + "/credits", "", `{"amount":1.0000001}`, "amount"},
			{"amount with an exponent", "/admin/v1/keys/" + key + "/credits", "", `{"amount":1e3}`, "amount"},
			{"body on a revoke", "/admin/v1/keys/" + key + "/revoke", "", `{"reason":"x"}`, "reason"},
			{"query on a write", "/admin/v1/keys?tenant=demo", "", `{"tenant":"demo"}`, "tenant"},
			{"bad role", "/admin/v1/tokens", "", `{"name":"x","role":"root"}`, "role"},
			{"bad expiry", "/admin/v1/tokens", "", `{"name":"x","role":"viewer","expires_in":-1}`, "expires_in"},
			{"bad group id", "/admin/v1/asset-groups", "", `{"tenant":"demo","id":"no spaces!","name":"x"}`, "id"},
			{"new group without a name", "/admin/v1/asset-groups", "", `{"tenant":"demo"}`, "name"},
		} {
			before := e.snap()
			b, _ := e.st.Balance(context.Background(), key)
			idem := tc.idem
			switch idem {
			case "":
				idem = newIdem()
			case "-":
				idem = ""
			}
			r := e.do("POST", tc.path, e.owner, idem, tc.body)
			if _, param := r.errCodeParam(t); r.status != 400 || param != tc.param {
				t.Errorf("%s: %d %s, want 400 with param %q", tc.name, r.status, r.body, tc.param)
			}
			if after := e.snap(); after != before {
				t.Errorf("%s changed the store: %+v → %+v", tc.name, before, after)
			}
			if b2, _ := e.st.Balance(context.Background(), key); b2.Available != b.Available {
				t.Errorf("%s moved money", tc.name)
			}
		}
		for _, tc := range []struct{ name, path, param string }{
			{"unknown query parameter", "/admin/v1/keys?tenannt=demo", "tenannt"},
			{"bad state", "/admin/v1/keys?state=deleted", "state"},
			{"limit too big", "/admin/v1/keys?limit=1000", "limit"},
			{"bad time", "/admin/v1/audit?since=yesterday", "since"},
			{"range backwards", "/admin/v1/audit?since=2026-11-25T10:00:00Z&until=2026-11-24T10:00:00Z", "until"},
			{"repeated parameter", "/admin/v1/audit?action=a&action=b", "action"},
		} {
			r := e.do("GET", tc.path, e.viewer, "", "")
			if _, param := r.errCodeParam(t); r.status != 400 || param != tc.param {
				t.Errorf("%s: %d %s, want 400 with param %q", tc.name, r.status, r.body, tc.param)
			}
		}
	})
}

func TestUnknownRoutesAreEnvelopes(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		for _, tc := range []struct {
			method, path string
			want         int
		}{
			{"GET", "/v1/videos", 404},
			{"GET", "/v1/billing/balance", 404},
			{"GET", "/admin/v1/nothing", 404},
			{"DELETE", "/admin/v1/keys", 405},
			{"GET", "/admin/v1/keys/key_x/revoke", 405},
		} {
			r := e.do(tc.method, tc.path, e.owner, "", "")
			if code, _ := r.errCodeParam(t); r.status != tc.want || code == "" {
				t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, r.status, r.body, tc.want)
			}
		}
	})
}

func TestListingsPageAndFilter(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		var ids []string
		for range 5 {
			ids = append(ids, e.makeKey(false))
		}
		r := e.do("GET", "/admin/v1/keys?limit=2", e.viewer, "", "")
		m := r.json(t)
		if r.status != 200 || len(m["data"].([]any)) != 2 || m["has_more"] != true {
			t.Fatalf("first page: %d %s", r.status, r.body)
		}
		seen := 0
		cursor := ""
		for range 10 {
			path := "/admin/v1/keys?limit=2"
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			m := e.do("GET", path, e.viewer, "", "").json(t)
			seen += len(m["data"].([]any))
			if m["has_more"] != true {
				break
			}
			cursor = m["next_cursor"].(string)
		}
		if seen != len(ids) {
			t.Errorf("paging saw %d keys, want %d", seen, len(ids))
		}
		if _, err := e.svc.RevokeKey(context.Background(), admin.CLIActor("t"), ids[0]); err != nil {
			t.Fatal(err)
		}
		if m := e.do("GET", "/admin/v1/keys?state=revoked", e.viewer, "", "").json(t); len(m["data"].([]any)) != 1 {
			t.Errorf("revoked: %v", m)
		}
		if m := e.do("GET", "/admin/v1/audit?action=key.revoke&target=key:"+ids[0], e.viewer, "", "").json(t); len(m["data"].([]any)) != 1 {
			t.Errorf("audit by action and target: %v", m)
		}
		if r := e.do("GET", "/admin/v1/keys/"+ids[1], e.viewer, "", ""); r.status != 200 || !strings.Contains(string(r.body), `"balance"`) {
			t.Errorf("get key: %d %s", r.status, r.body)
		}
		if r := e.do("GET", "/admin/v1/keys/key_missing", e.viewer, "", ""); r.status != 404 {
			t.Errorf("get unknown key: %d %s", r.status, r.body)
		}
	})
}

// A stored answer holds the secret the first caller got, sealed: the database alone does not
// reveal it, and a replay with another token (even an owner's) cannot read it.
func TestStoredAnswersDoNotRevealSecrets(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		idem := newIdem()
		r := e.do("POST", "/admin/v1/keys", e.oper, idem, `{"tenant":"demo"}`)
		if r.status != 201 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		secret, _ := r.json(t)["secret"].(string)
		if !strings.HasPrefix(secret, "mg_") {
			t.Fatalf("no secret in %s", r.body)
		}
		tok, err := e.svc.Authenticate(context.Background(), e.oper)
		if err != nil {
			t.Fatal(err)
		}
		a, err := e.st.IdempotentAnswer(context.Background(), tok.ID, idem, e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(a.Body, []byte(secret)) || bytes.Contains(a.Body, []byte(`"secret"`)) {
			t.Error("the stored answer shows the secret in clear")
		}
		if got := e.do("POST", "/admin/v1/keys", e.oper, idem, `{"tenant":"demo"}`); !bytes.Equal(got.body, r.body) {
			t.Errorf("replay: %s, want %s", got.body, r.body)
		}
	})
}

// Attacks: a body past the bound is 413 before anything is parsed or written; an operator
// cannot raise itself to owner or revoke an owner; a token of one deployment's secret shape
// but another's bytes is unknown.
func TestAttacksAreRefusedWithNothingWritten(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		before := e.snap()
		big := `{"tenant":"demo","name":"` + strings.Repeat("x", MaxBody) + `"}`
		if r := e.write("/admin/v1/keys", e.oper, big); r.status != 413 {
			t.Errorf("huge body: %d %s", r.status, r.body)
		}
		if r := e.write("/admin/v1/tokens", e.oper, `{"name":"me","role":"owner"}`); r.status != 403 {
			t.Errorf("operator making an owner token: %d %s", r.status, r.body)
		}
		if r := e.write("/admin/v1/tokens/"+e.ownerID+"/revoke", e.oper, ``); r.status != 403 {
			t.Errorf("operator revoking the owner: %d %s", r.status, r.body)
		}
		forged := e.owner[:len(e.owner)-1] + map[bool]string{true: "b", false: "a"}[strings.HasSuffix(e.owner, "a")]
		if r := e.do("GET", "/admin/v1/whoami", forged, "", ""); r.status != 401 {
			t.Errorf("forged token: %d %s", r.status, r.body)
		}
		if after := e.snap(); after != before {
			t.Errorf("attacks changed the store: %+v → %+v", before, after)
		}
	})
}

// TestAuditRecordsTheServicesRequestIDAndTheCallersApart: a caller's X-Request-Id is never
// stored as the request's id (a client could name another request): the entry's request_id is
// the service's own, the one the answer carries, and the caller's is kept verbatim in
// caller_request_id; an id that is not printable ASCII of at most 128 bytes is not kept.
func TestAuditRecordsTheServicesRequestIDAndTheCallersApart(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		for _, tc := range []struct{ sent, wantCaller string }{
			{"req_of_another_request", "req_of_another_request"},
			{"client trace 42", ""}, // a space: not a sane id
			{strings.Repeat("x", 129), ""},
			{"", ""},
		} {
			req, _ := http.NewRequest(http.MethodPost, e.ts.URL+"/admin/v1/keys", strings.NewReader(`{"tenant":"demo","name":"web"}`))
			req.Header.Set("Authorization", "Bearer "+e.owner)
			req.Header.Set("Idempotency-Key", newIdem())
			req.Header.Set("Content-Type", "application/json")
			if tc.sent != "" {
				req.Header.Set("X-Request-Id", tc.sent)
			}
			res, err := e.ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			answered := res.Header.Get("X-Request-Id")
			if res.StatusCode != http.StatusCreated || !strings.HasPrefix(answered, "req_") || answered == tc.sent {
				t.Fatalf("sent %q: %d, X-Request-Id %q; want 201 and the service's own id", tc.sent, res.StatusCode, answered)
			}
			list, err := e.st.Audit(context.Background(), store.AuditQuery{Limit: 1})
			if err != nil || len(list) != 1 {
				t.Fatal(list, err)
			}
			if a := list[0]; a.RequestID != answered || a.CallerRequestID != tc.wantCaller {
				t.Errorf("sent %q: entry request_id %q, caller_request_id %q; want %q and %q", tc.sent, a.RequestID, a.CallerRequestID, answered, tc.wantCaller)
			}
		}
		r := e.do(http.MethodGet, "/admin/v1/audit?action=key.create&limit=10", e.owner, "", "")
		if r.status != 200 || !strings.Contains(string(r.body), `"caller_request_id":"req_of_another_request"`) {
			t.Errorf("GET audit does not label the caller's id: %d %s", r.status, r.body)
		}
	})
}
