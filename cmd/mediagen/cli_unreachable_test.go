package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"mediagen/internal/testkit"
)

// A client command against a stopped service fails at once and says what to do.
func TestClientCommandOnAClosedPortSaysHowToStartTheService(t *testing.T) {
	t.Parallel()
	base := "http://" + testkit.FreeAddr(t) // listened on and closed: nothing there
	for _, args := range [][]string{{"balance"}, {"video", "get", "video_x"}, {"speech", "hello"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			vars := map[string]string{"MEDIAGEN_BASE_URL": base, "MEDIAGEN_API_KEY": "mg_secretsecretsecretsecretsecretsecret00"}
			err := run(context.Background(), args, env(vars), &stdout, &stderr)
			want := "cannot reach mediagen at " + base + ": connection refused — is the service running? (start it with mediagen serve"
			if err == nil || !strings.Contains(err.Error(), want) || exitCode(err) != 1 {
				t.Fatalf("err = %v (exit %d), want exit 1 with %q", err, exitCode(err), want)
			}
		})
	}
}
