package mediakit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/provider"
	"mediagen/internal/provider/mediakit"
	"mediagen/internal/provider/mediakit/mediakitfake"
)

const testKey = "amk-key-unit-5e1c"

func tools(t *testing.T) ffmpeg.Tools {
	t.Helper()
	for _, bin := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s: %v", bin, err)
		}
	}
	return ffmpeg.Tools{Preset: "ultrafast", Threads: 1, Timeout: 60 * time.Second}
}

// source renders a 640x360 clip of 2 s and serves it over plain http, as the service's own
// store serves a signed link.
func source(t *testing.T, tl ffmpeg.Tools) string {
	t.Helper()
	dir := t.TempDir()
	if err := tl.Render(context.Background(), ffmpeg.RenderSpec{Width: 640, Height: 360, FPS: 12, Duration: 2, Container: "mp4", Text: "amk"}, filepath.Join(dir, "src.mp4")); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return srv.URL + "/src.mp4"
}

// stager records what it was asked to stage and hands back the stored copy's link.
type stager struct {
	mu    sync.Mutex
	calls []string
	link  string
	err   error
}

func (s *stager) stage(ctx context.Context, key string, src provider.Source, maxSeconds float64) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, key+" "+src.URL)
	return s.link, s.err
}

func client(t *testing.T, fake *mediakitfake.Server, key string, st *stager) *mediakit.Client {
	t.Helper()
	c, err := mediakit.New(mediakit.Config{BaseURL: fake.Base(), APIKey: key, HTTP: fake.TLSClient(), Stage: st.stage})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wait polls a job until it ends (at most 60 reads).
func wait(t *testing.T, c *mediakit.Client, job string) provider.Job {
	t.Helper()
	for range 60 {
		j, err := c.PollEnhancement(context.Background(), job)
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		if j.Status != provider.StatusQueued && j.Status != provider.StatusRunning {
			return j
		}
	}
	t.Fatal("the job never ended")
	return provider.Job{}
}

func TestEachTierRunsOnItsToolWithEveryFieldMappedAndARealOutput(t *testing.T) {
	t.Parallel()
	tl := tools(t)
	src := source(t, tl)
	fake := mediakitfake.Start(mediakitfake.Config{Key: testKey, Tools: tl, Dir: t.TempDir()})
	t.Cleanup(fake.Close)
	n := func(v int) *int { return &v }
	for _, tc := range []struct {
		name      string
		req       provider.EnhanceRequest
		path      string
		want      map[string]any
		absent    []string
		shortSide int
	}{
		{"lite runs on the fast tool with no tool_version", provider.EnhanceRequest{IdempotencyKey: "video_a:enh", ShortSide: 480, FPS: n(24), BitrateLevel: "low", Source: provider.Source{URL: "https://tenant.example/a.mp4"}},
			mediakit.PathFast, map[string]any{"resolution_limit": 480.0, "fps": 24.0, "bitrate_level": "low", "client_token": "video_a:enh"}, []string{"tool_version", "scene", "bit_depth", "resolution"}, 480},
		{"standard runs on enhance-video with its scene", provider.EnhanceRequest{IdempotencyKey: "video_b:enh", ToolVersion: "standard", Resolution: "540p", Scene: "aigc", Source: provider.Source{URL: "https://tenant.example/b.mp4"}},
			mediakit.PathEnhance, map[string]any{"tool_version": "standard", "resolution": "540p", "scene": "aigc", "client_token": "video_b:enh"}, []string{"bit_depth", "resolution_limit", "fps"}, 540},
		{"professional runs on enhance-video with its bit depth", provider.EnhanceRequest{IdempotencyKey: "video_c:enh", ToolVersion: "professional", ShortSide: 360, BitDepth: n(10), BitrateLevel: "high", Source: provider.Source{URL: "https://tenant.example/c.mp4"}},
			mediakit.PathEnhance, map[string]any{"tool_version": "professional", "resolution_limit": 360.0, "bit_depth": 10.0, "bitrate_level": "high"}, []string{"scene"}, 360},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &stager{link: src}
			c := client(t, fake, testKey, st)
			job, err := c.SubmitEnhancement(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.calls) != 1 || st.calls[0] != tc.req.IdempotencyKey+" "+tc.req.Source.URL {
				t.Errorf("staged %q; want the tenant's source staged once under the task's key", st.calls)
			}
			body := fake.Body(mediakit.ClientToken(tc.req.IdempotencyKey))
			if body["path"] != tc.path || body["video_url"] != src {
				t.Errorf("sent %v to %v; want %s with the staged copy's link", body["video_url"], body["path"], tc.path)
			}
			for k, v := range tc.want {
				if body[k] != v {
					t.Errorf("%s = %v, want %v", k, body[k], v)
				}
			}
			for _, k := range tc.absent {
				if _, has := body[k]; has {
					t.Errorf("%s was sent: %v", k, body[k])
				}
			}
			j := wait(t, c, job)
			if j.Status != provider.StatusSucceeded || j.Output == nil || !strings.HasPrefix(j.Output.Source.URL, fake.Base()) || j.Output.UsageSeconds <= 0 {
				t.Fatalf("job %+v %+v", j, j.Output)
			}
			res, err := fake.TLSClient().Get(j.Output.Source.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			out := filepath.Join(t.TempDir(), "out.mp4")
			f, _ := os.Create(out)
			_, _ = f.ReadFrom(res.Body)
			f.Close()
			info, err := tl.Probe(context.Background(), out)
			if err != nil || min(info.Width, info.Height) != tc.shortSide {
				t.Errorf("the output measures %+v %v; want short side %d", info, err, tc.shortSide)
			}
		})
	}
	for _, v := range fake.Violations() {
		t.Errorf("wire format: %s", v)
	}
}

func TestAProductionIntermediateIsSentAsTheStoredCopysLinkWithoutStaging(t *testing.T) {
	t.Parallel()
	tl := tools(t)
	src := source(t, tl)
	fake := mediakitfake.Start(mediakitfake.Config{Key: testKey, Tools: tl, Dir: t.TempDir()})
	t.Cleanup(fake.Close)
	st := &stager{link: "http://never.example/x"}
	c := client(t, fake, testKey, st)
	r := provider.EnhanceRequest{IdempotencyKey: "video_p:enh", ToolVersion: "standard", Resolution: "540p", Source: provider.Source{Key: "videos/video_p/intermediate.mp4", URL: src}}
	if _, err := c.SubmitEnhancement(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if len(st.calls) != 0 || fake.Body("video_p:enh")["video_url"] != src {
		t.Errorf("staged %v, sent %v; want the intermediate's signed link as it is", st.calls, fake.Body("video_p:enh")["video_url"])
	}
}

func TestALostCreateAnswerIsMadeAgainAndFindsItsOneJob(t *testing.T) {
	t.Parallel()
	tl := tools(t)
	src := source(t, tl)
	fake := mediakitfake.Start(mediakitfake.Config{Key: testKey, Tools: tl, Dir: t.TempDir(), LoseFirst: 2})
	t.Cleanup(fake.Close)
	c := client(t, fake, testKey, &stager{link: src})
	r := provider.EnhanceRequest{IdempotencyKey: "video_lost:enh", ShortSide: 360, Source: provider.Source{URL: "https://tenant.example/l.mp4"}}
	var job string
	var err error
	for i := range 3 {
		job, err = c.SubmitEnhancement(context.Background(), r)
		if i < 2 && (err == nil || !errors.Is(err, provider.ErrTransient)) {
			t.Fatalf("create %d with its answer lost: %v; want a transient error", i, err)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if fake.Jobs() != 1 || fake.CreatesFor("video_lost:enh") != 3 || fake.LostAnswers() != 2 {
		t.Errorf("%d jobs from %d creates (%d answers lost); want one job", fake.Jobs(), fake.CreatesFor("video_lost:enh"), fake.LostAnswers())
	}
	if j := wait(t, c, job); j.Status != provider.StatusSucceeded {
		t.Errorf("the found job ended %+v", j)
	}
}

func TestFaultsAreTypedForThePipeline(t *testing.T) {
	t.Parallel()
	tl := tools(t)
	src := source(t, tl)
	req := provider.EnhanceRequest{IdempotencyKey: "video_f:enh", ShortSide: 360, Source: provider.Source{URL: "https://tenant.example/f.mp4"}}
	for _, tc := range []struct {
		name  string
		cfg   mediakitfake.Config
		key   string
		check func(t *testing.T, c *mediakit.Client, fake *mediakitfake.Server)
	}{
		{"a refused key is the account's fault", mediakitfake.Config{}, "wrong", func(t *testing.T, c *mediakit.Client, _ *mediakitfake.Server) {
			if _, err := c.SubmitEnhancement(context.Background(), req); !errors.Is(err, provider.ErrAccount) || strings.Contains(err.Error(), "wrong") {
				t.Errorf("submit: %v", err)
			}
			if err := c.Check(context.Background()); !errors.Is(err, provider.ErrAccount) {
				t.Errorf("check: %v", err)
			}
		}},
		{"403 is the account's fault", mediakitfake.Config{Status: 403}, testKey, func(t *testing.T, c *mediakit.Client, fake *mediakitfake.Server) {
			if _, err := c.SubmitEnhancement(context.Background(), req); !errors.Is(err, provider.ErrAccount) || fake.Jobs() != 0 {
				t.Errorf("submit: %v", err)
			}
		}},
		{"a 5xx is transient", mediakitfake.Config{Status: 503}, testKey, func(t *testing.T, c *mediakit.Client, _ *mediakitfake.Server) {
			if _, err := c.SubmitEnhancement(context.Background(), req); !errors.Is(err, provider.ErrTransient) {
				t.Errorf("submit: %v", err)
			}
		}},
		{"429 carries its Retry-After", mediakitfake.Config{RateLimit: 7}, testKey, func(t *testing.T, c *mediakit.Client, fake *mediakitfake.Server) {
			_, err := c.SubmitEnhancement(context.Background(), req)
			if !errors.Is(err, provider.ErrTransient) || provider.RetryDelay(err) != 7*time.Second || fake.Jobs() != 0 {
				t.Errorf("submit: %v (retry after %v)", err, provider.RetryDelay(err))
			}
		}},
		{"a garbage read is transient", mediakitfake.Config{Garbage: true}, testKey, func(t *testing.T, c *mediakit.Client, _ *mediakitfake.Server) {
			job, err := c.SubmitEnhancement(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.PollEnhancement(context.Background(), job); !errors.Is(err, provider.ErrTransient) {
				t.Errorf("poll: %v", err)
			}
		}},
		{"a refusal by vendor code fails the job with a public code", mediakitfake.Config{End: func(string, map[string]any) string { return mediakitfake.EndRefuse }}, testKey, func(t *testing.T, c *mediakit.Client, _ *mediakitfake.Server) {
			job, err := c.SubmitEnhancement(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			j := wait(t, c, job)
			if j.Status != provider.StatusFailed || j.ErrorCode != "InvalidParameter" || strings.Contains(j.ErrorMessage, "content cannot") {
				t.Errorf("job %+v", j)
			}
		}},
		{"a job that never ends stays running", mediakitfake.Config{End: func(string, map[string]any) string { return mediakitfake.EndNever }}, testKey, func(t *testing.T, c *mediakit.Client, _ *mediakitfake.Server) {
			job, err := c.SubmitEnhancement(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			for range 10 {
				if j, err := c.PollEnhancement(context.Background(), job); err != nil || (j.Status != provider.StatusRunning && j.Status != provider.StatusQueued) {
					t.Fatalf("poll: %+v %v", j, err)
				}
			}
		}},
		{"an unknown task is reported lost", mediakitfake.Config{}, testKey, func(t *testing.T, c *mediakit.Client, _ *mediakitfake.Server) {
			if _, err := c.PollEnhancement(context.Background(), "amk-task-999999"); !errors.Is(err, provider.ErrUnknownJob) {
				t.Errorf("poll: %v", err)
			}
			if err := c.Check(context.Background()); err != nil {
				t.Errorf("check with a good key: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			cfg.Key, cfg.Tools, cfg.Dir = testKey, tl, t.TempDir()
			fake := mediakitfake.Start(cfg)
			t.Cleanup(fake.Close)
			tc.check(t, client(t, fake, tc.key, &stager{link: src}), fake)
		})
	}
}

func TestASourceTheStageRefusesIsNeverSent(t *testing.T) {
	t.Parallel()
	fake := mediakitfake.Start(mediakitfake.Config{Key: testKey, Dir: t.TempDir()})
	t.Cleanup(fake.Close)
	changed := &provider.Error{Code: mediakit.CodeSourceChanged, Message: "The source changed.", Kind: provider.ErrPermanent}
	c := client(t, fake, testKey, &stager{err: changed})
	_, err := c.SubmitEnhancement(context.Background(), provider.EnhanceRequest{IdempotencyKey: "video_s:enh", ShortSide: 360, MaxSourceSeconds: 2.5, Source: provider.Source{URL: "https://tenant.example/s.mp4"}})
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Code != mediakit.CodeSourceChanged || fake.Jobs() != 0 || fake.CreatesFor("video_s:enh") != 0 {
		t.Errorf("submit: %v; want the stage's refusal and no create", err)
	}
}

func TestClientTokensAreTheKeyOrADigestWithinTheVendorsBound(t *testing.T) {
	t.Parallel()
	if got := mediakit.ClientToken("video_01jx:enh"); got != "video_01jx:enh" {
		t.Errorf("a short key: %q", got)
	}
	long := strings.Repeat("x", 65)
	if got := mediakit.ClientToken(long); len(got) > 64 || got != mediakit.ClientToken(long) || got == mediakit.ClientToken(long+"y") {
		t.Errorf("a long key: %q", got)
	}
	if got := mediakit.ClientToken("a b"); strings.Contains(got, " ") {
		t.Errorf("a key with a space: %q", got)
	}
}
