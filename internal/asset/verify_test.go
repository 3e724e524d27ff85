package asset

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/contract"
	"mediagen/internal/keys"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
)

// hooks is a loopback HTTPS callback receiver that fails the first `fail` requests.
type hooks struct {
	mu   sync.Mutex
	fail int
	got  []contract.VerifyCallback
	hdr  []http.Header
	srv  *httptest.Server
}

func newHooks(t *testing.T, fail int) *hooks {
	h := &hooks{fail: fail}
	h.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.fail > 0 {
			h.fail--
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var p contract.VerifyCallback
		if err := json.Unmarshal(b, &p, json.RejectUnknownMembers(true)); err != nil || r.Method != http.MethodPost ||
			r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("callback %s %s: %s (%v)", r.Method, r.Header.Get("Content-Type"), b, err)
		}
		h.got = append(h.got, p)
		h.hdr = append(h.hdr, r.Header.Clone())
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hooks) wait(t *testing.T, n int) []contract.VerifyCallback {
	t.Helper()
	var got []contract.VerifyCallback
	if !testkit.PollEvery(20*time.Millisecond, 10*time.Second, func() bool {
		h.mu.Lock()
		got = append([]contract.VerifyCallback(nil), h.got...)
		h.mu.Unlock()
		return len(got) >= n
	}) {
		t.Fatalf("%d callbacks, want %d", len(got), n)
	}
	return got
}

// waitCallbackState polls the session until its callback reaches want.
func (e *env) waitCallbackState(t *testing.T, token, want string) store.VerifySession {
	t.Helper()
	var v store.VerifySession
	if !testkit.Poll(10*time.Second, func() bool {
		var err error
		if v, err = e.db.VerifySessionByToken(context.Background(), tokenHash(token)); err != nil {
			t.Fatal(err)
		}
		return v.CallbackState == want
	}) {
		t.Fatalf("callback state %q after %d attempts, want %q", v.CallbackState, v.CallbackAttempts, want)
	}
	return v
}

func (e *env) session(c keys.Caller, body string) (link, token string) {
	e.t.Helper()
	m := e.must(c, RealHumanPrefix+"/validate-session/create", body)
	link, token = m["H5Link"].(string), m["VerifyToken"].(string)
	if link != "http://127.0.0.1:9/verify/"+token || !strings.HasPrefix(token, "vt_") || len(token) != 35 || m["ExpiresAt"] == nil {
		e.t.Fatalf("session %v", m)
	}
	return link, token
}

func (e *env) result(c keys.Caller, token string) (map[string]any, error) {
	return e.op(c, RealHumanPrefix+"/validate-result/get", `{"VerifyToken":"`+token+`"}`)
}

func TestVerificationPassRedeemOnceAndCallback(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	h := newHooks(t, 1) // the first delivery fails and is retried
	ctx := t.Context()
	_, token := e.session(acme, `{"CallbackURL":"`+h.srv.URL+`/hook"}`)

	st, err := e.svc.Page(ctx, token)
	if err != nil || st.State != PagePending || st.TenantName != "Acme Films" || st.CheckSeconds != 3 {
		t.Fatalf("page %+v %v", st, err)
	}
	if _, err := e.result(acme, token); apiCode(err) != CodeVerificationPending {
		t.Fatalf("before the check: %v", err)
	}
	if _, err := e.svc.Act(ctx, token, ActionConfirm); apiCode(err) != CodeCheckNotStarted {
		t.Fatalf("confirm before start: %v", err)
	}
	if st, err := e.svc.Act(ctx, token, ActionStart); err != nil || st.State != PageStarted {
		t.Fatalf("start: %+v %v", st, err)
	}
	if _, err := e.svc.Act(ctx, token, ActionConfirm); apiCode(err) != CodeCheckIncomplete {
		t.Fatalf("confirm too soon: %v", err)
	}
	if _, err := e.result(acme, token); apiCode(err) != CodeVerificationPending {
		t.Fatalf("during the check: %v", err)
	}
	e.clock.Advance(e.svc.cfg.MinCheck) // the liveness check's shortest duration
	st, err = e.svc.Act(ctx, token, ActionConfirm)
	if err != nil || st.State != PagePassed {
		t.Fatalf("confirm: %+v %v", st, err)
	}
	// Double clicks and late declines change nothing.
	if st, err := e.svc.Act(ctx, token, ActionDecline); err != nil || st.State != PagePassed {
		t.Fatalf("decline after pass: %+v %v", st, err)
	}
	// Another tenant cannot redeem the token.
	if _, err := e.result(rival, token); apiCode(err) != CodeVerifyTokenNotFound {
		t.Fatalf("rival: %v", err)
	}
	m, err := e.result(acme, token)
	if err != nil {
		t.Fatal(err)
	}
	gid := m["GroupId"].(string)
	g := e.must(acme, RealHumanPrefix+"/asset-groups/get", `{"Id":"`+gid+`"}`)
	if g["Origin"] != "Verification" || g["Status"] != "Active" || !strings.HasPrefix(g["Name"].(string), "Verified person ") {
		t.Errorf("group %v", g)
	}
	if _, err := e.op(acme, VirtualPrefix+"/asset-groups/get", `{"Id":"`+gid+`"}`); apiCode(err) != CodeGroupNotFound {
		t.Errorf("real-human group on the virtual path: %v", err)
	}
	if _, err := e.result(acme, token); apiCode(err) != CodeVerifyTokenUsed {
		t.Fatalf("second redeem: %v", err)
	}
	got := h.wait(t, 1)
	if got[0].VerifyToken != token || got[0].Result != "Passed" || got[0].GroupID != gid || got[0].Timestamp <= 0 {
		t.Errorf("callback %+v", got[0])
	}
	if h.hdr[0].Get("X-Mediagen-Attempt") != "2" {
		t.Errorf("delivered on attempt %s, want 2 (the first failed)", h.hdr[0].Get("X-Mediagen-Attempt"))
	}
	// The receiver answers before the deliverer records the outcome, so wait for the record.
	v := e.waitCallbackState(t, token, store.CallbackDelivered)
	if v.CallbackAttempts != 2 {
		t.Errorf("callback delivered after %d attempts, want 2", v.CallbackAttempts)
	}
	// The session does not store the token itself.
	if strings.Contains(string(v.TokenHash), token) {
		t.Error("token stored in clear")
	}
}

func TestVerificationDeclineExpiryAndUnknown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{mutate: func(c *Config) { c.VerifyTTL = time.Minute }})
	h := newHooks(t, 0)
	ctx := t.Context()

	_, declined := e.session(acme, `{"CallbackURL":"`+h.srv.URL+`"}`)
	if st, err := e.svc.Act(ctx, declined, ActionDecline); err != nil || st.State != PageDeclined {
		t.Fatalf("decline: %+v %v", st, err)
	}
	if _, err := e.result(acme, declined); apiCode(err) != CodeVerificationDeclined {
		t.Fatalf("declined: %v", err)
	}
	if got := h.wait(t, 1); got[0].Result != "Declined" || got[0].GroupID != "" {
		t.Errorf("decline callback %+v", got[0])
	}
	if groups := e.must(acme, RealHumanPrefix+"/asset-groups/list", `{}`); groups["TotalCount"] != 0.0 {
		t.Errorf("a decline made a group: %v", groups)
	}

	_, expired := e.session(acme, `{}`)
	e.clock.Advance(61 * time.Second)
	if _, err := e.result(acme, expired); apiCode(err) != CodeVerifyTokenExpired {
		t.Fatalf("expired: %v", err)
	}
	if st, err := e.svc.Page(ctx, expired); err != nil || st.State != PageExpired {
		t.Fatalf("expired page: %+v %v", st, err)
	}
	if _, err := e.svc.Act(ctx, expired, ActionStart); apiCode(err) != CodeVerifyTokenExpired {
		t.Fatalf("start after expiry: %v", err)
	}

	if _, err := e.result(acme, "vt_unknownunknownunknownunknown00"); apiCode(err) != CodeVerifyTokenNotFound {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := e.svc.Act(ctx, "vt_nope", ActionStart); apiCode(err) != CodeVerifyTokenNotFound {
		t.Fatalf("unknown action token: %v", err)
	}
	if _, err := e.svc.Page(ctx, "vt_nope"); err != ErrUnknownToken {
		t.Fatalf("unknown page: %v", err)
	}
	if _, err := e.svc.Page(ctx, "../../etc/passwd"); err != ErrUnknownToken {
		t.Fatalf("odd token: %v", err)
	}

	for body, code := range map[string]string{
		`{"CallbackURL":"http://hooks.example.com/x"}`:  CodeInvalidCallbackURL,
		`{"CallbackURL":"https://10.0.0.1/x"}`:          CodeInvalidCallbackURL,
		`{"CallbackURL":""}`:                            CodeInvalidCallbackURL,
		`{"CallbackURL":null}`:                          "invalid_request_error",
		`{"CallbackUrl":"https://hooks.example.com/x"}`: "invalid_request_error",
		`{"ProjectName":"p"}`:                           "invalid_request_error",
	} {
		if _, err := e.op(acme, RealHumanPrefix+"/validate-session/create", body); apiCode(err) != code {
			t.Errorf("%s: %v, want %s", body, err, code)
		}
	}
}

// A callback that never succeeds is given up after CallbackAttempts, without blocking anyone.
func TestCallbackGivesUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{mutate: func(c *Config) { c.CallbackAttempts = 3; c.MinCheck = -1 }})
	h := newHooks(t, 100)
	ctx := t.Context()
	_, token := e.session(acme, `{"CallbackURL":"`+h.srv.URL+`"}`)
	if _, err := e.svc.Act(ctx, token, ActionStart); err != nil {
		t.Fatal(err)
	}
	if st, err := e.svc.Act(ctx, token, ActionConfirm); err != nil || st.State != PagePassed {
		t.Fatalf("confirm: %+v %v", st, err)
	}
	var v store.VerifySession
	if !testkit.PollEvery(20*time.Millisecond, 10*time.Second, func() bool {
		v, _ = e.db.VerifySessionByToken(ctx, tokenHash(token))
		if v.CallbackState == store.CallbackFailed {
			return true
		}
		e.clock.Advance(time.Second)
		e.jobs.Notify(CallbackKind)
		return false
	}) {
		t.Fatalf("callback state %s after %d attempts", v.CallbackState, v.CallbackAttempts)
	}
	if v.CallbackAttempts != 3 {
		t.Errorf("gave up after %d attempts", v.CallbackAttempts)
	}
	if _, err := e.result(acme, token); err != nil {
		t.Errorf("result despite failed callback: %v", err)
	}
}
