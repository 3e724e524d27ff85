package klingfake

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The fake refuses what Kling's reference refuses, so an adapter that passes it cannot be
// passing by the fake's leniency: tokens of the wrong key, expired or not yet valid; bodies
// with a numeric duration, an unknown field or model, a ratio Kling does not make; and a
// second create with an external_task_id already used.
func TestTheFakeRefusesWhatTheReferenceRefuses(t *testing.T) {
	t.Parallel()
	s := Start(Config{AccessKey: "ak", SecretKey: "sk"})
	defer s.Close()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: s.TLS()}}
	sign := func(secret string, nbf, exp time.Time) string {
		tok, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Issuer: "ak", NotBefore: jwt.NewNumericDate(nbf), ExpiresAt: jwt.NewNumericDate(exp)}).SignedString([]byte(secret))
		return tok
	}
	now := time.Now()
	good := sign("sk", now.Add(-5*time.Second), now.Add(30*time.Minute))
	call := func(token, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, s.Base()+"/v1/videos/text2video", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	ok := `{"model_name":"kling-v2-1","prompt":"p","duration":"5","mode":"std","aspect_ratio":"16:9","external_task_id":"t1"}`
	tests := []struct {
		name, token, body string
		status            int
		code              string
	}{
		{"a wrong secret", sign("other", now.Add(-5*time.Second), now.Add(time.Minute)), ok, 401, `"code":1002`},
		{"an expired token", sign("sk", now.Add(-time.Hour), now.Add(-time.Minute)), ok, 401, `"code":1004`},
		{"a token not yet valid", sign("sk", now.Add(time.Hour), now.Add(2*time.Hour)), ok, 401, `"code":1003`},
		{"no token", "", ok, 401, `"code":1001`},
		{"a numeric duration", good, strings.Replace(ok, `"5"`, `5`, 1), 400, `"code":1201`},
		{"an unknown field", good, strings.Replace(ok, `"mode"`, `"seed":1,"mode"`, 1), 400, `"code":1201`},
		{"an unknown model", good, strings.Replace(ok, `kling-v2-1`, `seedance`, 1), 400, `"code":1201`},
		{"a ratio Kling does not make", good, strings.Replace(ok, `16:9`, `4:3`, 1), 400, `"code":1201`},
		{"a first create", good, ok, 200, `"task_status":"submitted"`},
		{"a second create with the same external_task_id", good, ok, 400, `"code":1201`},
	}
	for _, tt := range tests { // in order: the last two share an external_task_id
		status, body := call(tt.token, tt.body)
		if status != tt.status || !strings.Contains(body, tt.code) {
			t.Errorf("%s: %d %s, want %d %s", tt.name, status, body, tt.status, tt.code)
		}
	}
	if s.JobsFor("t1") != 1 || len(s.Violations()) != 4 {
		t.Errorf("%d tasks for t1; violations %q", s.JobsFor("t1"), s.Violations())
	}
}
