package routing

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"mediagen/internal/provider"
	"mediagen/internal/provider/rest"
)

func TestPolicyJudge(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	status := func(code int, retry time.Duration) error {
		return rest.Classify(&rest.StatusError{Call: "POST /v1/jobs", Status: code, RetryAfter: retry},
			func(se *rest.StatusError) error { return fmt.Errorf("%w: %w", se, provider.ErrPermanent) })
	}
	cases := []struct {
		name      string
		policy    Policy
		err       error
		class     Class
		why       string
		avoidFor  time.Duration // 0: the account is not avoided
		breakerUp bool          // the failure opened the breaker (one failure opens it here)
	}{
		{"a refused key avoids the account for the default wait", Policy{}, status(http.StatusUnauthorized, 0),
			KeyRefused, "its key was refused (401/403)", DefaultAccountWait, false},
		{"a forbidden key avoids the account for the caller's wait", Policy{AccountWait: 7 * time.Second}, status(http.StatusForbidden, 0),
			KeyRefused, "its key was refused (401/403)", 7 * time.Second, false},
		{"a 429 avoids the account for its Retry-After", Policy{}, status(http.StatusTooManyRequests, 5*time.Second),
			Limited, "rate-limited (429, Retry-After 5s)", 5 * time.Second, false},
		{"a 429 without Retry-After avoids the account a second", Policy{}, status(http.StatusTooManyRequests, 0),
			Limited, "rate-limited (429, Retry-After 1s)", time.Second, false},
		{"a 5xx counts against the breaker", Policy{}, status(http.StatusBadGateway, 0),
			Transient, "", 0, true},
		{"a rejected request leaves the account alone", Policy{BlameUnknown: true}, status(http.StatusBadRequest, 0),
			Rejected, "", 0, false},
		{"an unknown failure is the request's own unless blamed", Policy{}, errors.New("disk full"),
			Unknown, "", 0, false},
		{"an unknown failure counts against the breaker when blamed", Policy{BlameUnknown: true}, errors.New("disk full"),
			Unknown, "", 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &Router{Now: func() time.Time { return now },
				Policy: func(string) (int, time.Duration) { return 1, time.Minute }}
			v := c.policy.Judge(r, "acct", c.err)
			if v.Class != c.class || v.Why != c.why || v.Opened != c.breakerUp {
				t.Fatalf("Judge(%v) = %+v, want class %v, why %q, opened %v", c.err, v, c.class, c.why, c.breakerUp)
			}
			ok, why, until := r.Admit("acct")
			switch {
			case c.avoidFor > 0 && (ok || !until.Equal(now.Add(c.avoidFor))):
				t.Errorf("Admit after Judge = %v, %q, until %v; want avoided until %v", ok, why, until, now.Add(c.avoidFor))
			case c.avoidFor == 0 && c.breakerUp == ok:
				t.Errorf("Admit after Judge = %v (%q); want admitted %v", ok, why, !c.breakerUp)
			}
		})
	}
}

func TestClassString(t *testing.T) {
	// The video pipeline labels its upstream-error metric with these.
	for c, want := range map[Class]string{KeyRefused: "account", Limited: "rate_limited", Transient: "transient", Rejected: "rejected", Unknown: "unknown"} {
		if got := c.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", c, got, want)
		}
	}
}
