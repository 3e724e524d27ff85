package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"mediagen/internal/billing"
	"mediagen/internal/money"
	"mediagen/internal/provider/kling/klingfake"
	"mediagen/internal/store"
)

// klingRig serves the demo catalog with demo-video-fast on a fake Kling (cfg, its keys set
// here), with the service's environment getenv and extra flags.
func klingRig(t *testing.T, cfg klingfake.Config, getenv func(string) string, account string, flags ...string) (*e2e, *klingfake.Server) {
	t.Helper()
	tools := requireTools(t)
	cfg.AccessKey, cfg.SecretKey = klingTestAccess, klingTestSecret
	fake := klingfake.Start(cfg)
	t.Cleanup(fake.Close)
	m := NewMain(getenv, &syncBuffer{}, &syncBuffer{})
	m.FetchTLS = fake.TLS()
	args := append([]string{"--fetch-allow", "loopback", "--log-level", "warn", "--catalog", klingCatalog(t, t.TempDir(), fake.Base(), account)}, flags...)
	return startRemote(t, m, t.TempDir(), tools, 100*money.Scale, args...), fake
}

// A Kling task that never ends does not hold its task forever: at the task deadline the task
// expires with a full refund, the account's slot is freed, and one upstream task was made.
func TestKlingTaskThatNeverEndsExpiresAndRefunds(t *testing.T) {
	t.Parallel()
	e, fake := klingRig(t, klingfake.Config{End: func(string) string { return klingfake.EndNever }}, klingEnv(), "    max_in_flight: 1\n", "--task-deadline", "3s")
	id := e.create(`{"model":"demo-video-fast","prompt":"never done","metadata":{"duration":5,"resolution":"720p"}}`)
	task := e.wait(id)
	if task.Status != "expired" || task.Error == nil || task.Error.Code != "task_expired" {
		t.Fatalf("stuck task ended %s %+v, want expired", task.Status, task.Error)
	}
	if used := e.used(); used != 0 {
		t.Errorf("charged %s for an expired task", used)
	}
	if n := fake.Jobs(); n != 1 {
		t.Errorf("%d upstream tasks", n)
	}
	slots, err := e.m.db.UpstreamSlots(context.Background())
	if err != nil || slots["kling-main"] != 0 {
		t.Errorf("the expired task's slot: %v %v, want released", slots, err)
	}
}

// Keys Kling refuses (a wrong secret key signs tokens it cannot verify: 401) are the
// account's fault, not the task's: no upstream task is made, the task waits without failing
// until its deadline, and is then refunded in full.
func TestKlingRefusedKeysMakeNoTaskAndRefund(t *testing.T) {
	t.Parallel()
	wrong := env(map[string]string{"KLING_TEST_ACCESS": klingTestAccess, "KLING_TEST_SECRET": "sk-not-the-secret"})
	e, fake := klingRig(t, klingfake.Config{}, wrong, "", "--task-deadline", "3s")
	id := e.create(`{"model":"demo-video-fast","prompt":"refused keys","metadata":{"duration":5,"resolution":"720p"}}`)
	task := e.wait(id)
	if task.Status != "expired" || e.used() != 0 {
		t.Fatalf("task with refused keys ended %s %+v, charged %s; want expired and refunded", task.Status, task.Error, e.used())
	}
	if fake.Jobs() != 0 || fake.Refused() == 0 {
		t.Errorf("%d upstream tasks, %d refused calls", fake.Jobs(), fake.Refused())
	}
}

// Kling returns a 20 s 720p video for a 5 s request: the stored result is cut to the
// request's bound, the charge stays within the reservation, and the cut is recorded as the
// account's upstream excess.
func TestKlingVideoLongerThanAskedIsCutAndChargedWithinTheReservation(t *testing.T) {
	t.Parallel()
	clip := colorClip(t, t.TempDir(), "long.mp4", 1280, 720, 24, 20)
	e, _ := klingRig(t, klingfake.Config{Clip: clip, Duration: "20"}, klingEnv(), "")
	id := e.create(`{"model":"demo-video-fast","prompt":"a kite","metadata":{"duration":5,"resolution":"720p","ratio":"16:9"}}`)
	task := e.wait(id)
	if task.Status != "completed" {
		t.Fatalf("task = %+v %+v", task, task.Error)
	}
	rec := e.task(id)
	if rec.Charged > rec.Reserved {
		t.Errorf("charged %s against a reservation of %s", rec.Charged, rec.Reserved)
	}
	_, info := e.download(task.Metadata.URL, "result.mp4")
	if info.Length() > 5.25 {
		t.Errorf("the stored result measures %v s, want it cut to at most 5.25 s", info.Length())
	}
	if want := billing.NativeTokens(1280, 720, 24, 5.25); task.Usage == nil || task.Usage.CompletionTokens > want { // the bound: 5 s + 0.25 s slack
		t.Errorf("usage %+v, want at most the %d tokens of 5.25 s", task.Usage, want)
	}
	recs, err := e.m.db.UpstreamExcess(context.Background(), store.ExcessFilter{Ref: id})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range recs {
		if r.Kind == billing.ExcessDuration && r.Upstream == "kling-main" {
			found = true
		}
	}
	if !found {
		t.Errorf("excess %+v, want a duration record on kling-main", recs)
	}
}

// `admin upstream check` proves a kling account's two keys with one signed call; a wrong
// secret fails naming neither key, a missing one names its variable.
func TestAdminUpstreamCheckCallsAKlingAccount(t *testing.T) {
	t.Parallel()
	fake := klingfake.Start(klingfake.Config{AccessKey: klingTestAccess, SecretKey: klingTestSecret})
	t.Cleanup(fake.Close)
	cat := klingCatalog(t, t.TempDir(), fake.Base())
	for _, tc := range []struct {
		name string
		keys map[string]string
		want string
	}{
		{"with its keys", map[string]string{"KLING_TEST_ACCESS": klingTestAccess, "KLING_TEST_SECRET": klingTestSecret}, "kling-main (kling): OK, read a task with a signed token"},
		{"with a wrong secret", map[string]string{"KLING_TEST_ACCESS": klingTestAccess, "KLING_TEST_SECRET": "sk-wrong-secret-1"}, "kling-main (kling): FAILED"},
		{"without its secret", map[string]string{"KLING_TEST_ACCESS": klingTestAccess}, "KLING_TEST_SECRET"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			err := runAdminTLS(context.Background(), []string{"upstream", "check", "--catalog", cat, "kling-main"}, env(tc.keys), &out, &errOut, fake.TLS())
			text := out.String() + errOut.String()
			if err != nil {
				text += err.Error()
			}
			if (err == nil) != strings.Contains(tc.want, "OK") || !strings.Contains(text, tc.want) {
				t.Errorf("check: %v\n%s; want %q", err, text, tc.want)
			}
			for _, k := range []string{"sk-wrong-secret-1", klingTestSecret, klingTestAccess} {
				if strings.Contains(text, k) {
					t.Errorf("a key is in the output: %s", text)
				}
			}
		})
	}
}

// Kling returns a 1080p video at 30 fps for a 720p request: the tenant is charged no more than
// the request's frame allows, within the reservation, and the larger frame is recorded as the
// account's over_request excess.
func TestKlingVideoLargerThanAskedIsChargedAtTheRequest(t *testing.T) {
	t.Parallel()
	clip := colorClip(t, t.TempDir(), "big.mp4", 1920, 1080, 30, 5)
	e, _ := klingRig(t, klingfake.Config{Clip: clip}, klingEnv(), "")
	id := e.create(`{"model":"demo-video-fast","prompt":"a kite","metadata":{"duration":5,"resolution":"720p","ratio":"16:9"}}`)
	task := e.wait(id)
	if task.Status != "completed" {
		t.Fatalf("task = %+v %+v", task, task.Error)
	}
	rec := e.task(id)
	if rec.Charged > rec.Reserved {
		t.Errorf("charged %s against a reservation of %s", rec.Charged, rec.Reserved)
	}
	if most := billing.NativeTokens(1280, 720, 24, 5.25); task.Usage == nil || task.Usage.CompletionTokens > most {
		t.Errorf("usage %+v, want at most the %d tokens of the request's 720p frame", task.Usage, most)
	}
	recs, err := e.m.db.UpstreamExcess(context.Background(), store.ExcessFilter{Ref: id})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range recs {
		found = found || (r.Kind == billing.ExcessOverRequest && r.Upstream == "kling-main")
	}
	if !found {
		t.Errorf("excess %+v, want an over_request record on kling-main", recs)
	}
}
