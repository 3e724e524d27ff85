package video

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/blob"
	"mediagen/internal/contract"
	"mediagen/internal/jobs"
	"mediagen/internal/keys"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/money"
	"mediagen/internal/provider/ark"
	"mediagen/internal/provider/ark/arkfake"
	"mediagen/internal/provider/sandbox"
	"mediagen/internal/store"
)

// slotAccount is the upstream account of the slot tests: max_in_flight 1.
const slotAccount = "acct"

// requireMediaTools skips (or fails under CI=true) without ffmpeg and ffprobe.
func requireMediaTools(t *testing.T) ffmpeg.Tools {
	t.Helper()
	// Cheap renders: the machine is shared.
	tools := ffmpeg.Tools{Preset: "ultrafast", Threads: 1, Timeout: time.Minute}
	if err := tools.Check(context.Background()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("ffmpeg, ffprobe and espeak-ng are required under CI=true: %v", err)
		}
		t.Skip(err)
	}
	return tools
}

// storedTask creates a task of req (reserving reserve) with its job, as an accepted create does.
func (e *env) storedTask(req Stored, quote billing.Quote, reserve money.Micros) string {
	e.t.Helper()
	ctx := context.Background()
	body, err := json.Marshal(req)
	if err != nil {
		e.t.Fatal(err)
	}
	pricing, err := json.Marshal(quote)
	if err != nil {
		e.t.Fatal(err)
	}
	now := time.Now()
	id := fmt.Sprintf("video_%d", now.UnixNano())
	task := store.Task{ID: id, KeyID: e.key.ID, TenantID: "acme", Route: string(req.Request.Route), Model: "m", Status: store.StatusQueued,
		PayloadHash: []byte{1}, Request: body, Pricing: pricing, Reserved: reserve, CreatedAt: now, UpdatedAt: now}
	err = e.db.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateTask(ctx, task); err != nil {
			return err
		}
		if err := tx.EnqueueJob(ctx, TaskJob(task)); err != nil {
			return err
		}
		return billing.Reserve(ctx, tx, keys.Caller{Key: e.key}, id, reserve, now)
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// slotTask is one task of a slot test: its request and quote on slotAccount.
type slotTask struct {
	req   Stored
	quote billing.Quote
}

func nativeTask(prompt string, duration int) slotTask {
	return slotTask{
		req: Stored{Upstream: slotAccount, Model: "m", Request: &contract.VideoRequest{Route: contract.RouteNative, Prompt: prompt,
			Native: &contract.NativeParams{Duration: duration, Resolution: "480p", Ratio: "16:9"}}},
		quote: billing.Quote{Route: string(contract.RouteNative), Currency: "USD", Rate: money.Scale},
	}
}

func enhancementTask(source string) slotTask {
	return slotTask{
		req: Stored{Upstream: slotAccount, Model: "m", Request: &contract.VideoRequest{Route: contract.RouteEnhancement,
			Enhancement: &contract.EnhancementParams{VideoURL: source, ResolutionLimit: 64}}},
		quote: billing.Quote{Route: string(contract.RouteEnhancement), Currency: "USD", Rate: 1_000},
	}
}

// A task whose upstream create is refused for good on its first run (the run whose starting
// state predates the submit checkpoint that took the slot) fails refunded and gives its
// account's in-flight slot back: the next task on the account, with max_in_flight 1, runs to
// the end instead of waiting for a slot until it expires.
func TestRefusedCreateFreesItsAccountSlot(t *testing.T) {
	t.Parallel()
	tools := requireMediaTools(t)
	media := t.TempDir()
	clip := filepath.Join(media, "clip.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 12, Duration: 1, Container: "mp4", Text: "clip"}, clip); err != nil {
		t.Fatal(err)
	}
	sources := httptest.NewServer(http.FileServer(http.Dir(media)))
	t.Cleanup(sources.Close)
	const arkKey = "ark-test-key"
	fake := arkfake.Start(arkfake.Config{Key: arkKey, Clip: clip})
	t.Cleanup(fake.Close)
	fetch := safefetch.New(safefetch.Options{AllowLoopback: true, AllowHTTP: true, TLSConfig: fake.TLS()})

	arkUpstream := func(t *testing.T) Upstream {
		t.Helper()
		c, err := ark.New(ark.Config{BaseURL: fake.Base(), APIKey: arkKey, HTTP: &http.Client{Timeout: 10 * time.Second,
			Transport: &http.Transport{TLSClientConfig: fake.TLS()}}})
		if err != nil {
			t.Fatal(err)
		}
		return Upstream{Generator: c}
	}
	sandboxEngine := func(t *testing.T) *sandbox.Engine {
		t.Helper()
		eng, err := sandbox.New(sandbox.Config{Dir: t.TempDir(), Tools: tools, Fetch: fetch, Pace: -1, Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = eng.Close() })
		return eng
	}
	for _, tc := range []struct {
		name     string
		upstream func(t *testing.T) Upstream
		refused  slotTask // refused permanently by the upstream's create (or before it)
		next     slotTask // a task the account completes
	}{
		{"an Ark create answered 400", arkUpstream,
			nativeTask("too long", 20), nativeTask("fine", 4)},
		{"a sandbox generation with a malformed marker", func(t *testing.T) Upstream {
			t.Helper()
			eng := sandboxEngine(t)
			return Upstream{Generator: eng, Enhancer: eng}
		}, nativeTask("[sandbox:nonsense]", 1), nativeTask("fine", 1)},
		{"a sandbox enhancement with a malformed source marker", func(t *testing.T) Upstream {
			t.Helper()
			eng := sandboxEngine(t)
			return Upstream{Generator: eng, Enhancer: eng}
		}, enhancementTask(sources.URL + "/clip.mp4?sandbox=nonsense"), enhancementTask(sources.URL + "/clip.mp4")},
		{"a generation on an account that cannot generate", func(t *testing.T) Upstream {
			t.Helper()
			return Upstream{Enhancer: sandboxEngine(t)}
		}, nativeTask("fine", 1), enhancementTask(sources.URL + "/clip.mp4")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			blobs, err := blob.NewFS(t.TempDir(), []byte(strings.Repeat("s", 32)), "http://files.test")
			if err != nil {
				t.Fatal(err)
			}
			p := &Pipeline{Upstreams: map[string]Upstream{slotAccount: tc.upstream(t)}, Blobs: blobs, Tools: tools, Fetch: fetch,
				PollMin: 10 * time.Millisecond, PollMax: 50 * time.Millisecond, SlotWait: 20 * time.Millisecond, Logger: quiet(),
				MaxInFlight: func(upstream string) int {
					if upstream == slotAccount {
						return 1
					}
					return 0
				}}
			// The deadline ends a task that waits for a slot that never comes (expired).
			r := e.runTasks(p, jobs.Kind{Poll: 5 * time.Millisecond, Deadline: 5 * time.Second,
				Backoff: jobs.Exponential(10*time.Millisecond, 50*time.Millisecond)})
			defer r.Stop()
			ctx := context.Background()

			const reserve = 1_000_000
			refused := e.waitTerminal(e.storedTask(tc.refused.req, tc.refused.quote, reserve))
			if refused.Status != store.StatusFailed || refused.Charged != 0 {
				t.Fatalf("refused task ended %s (%s), charged %s; want failed, charged 0", refused.Status, refused.ErrorCode, refused.Charged)
			}
			slots, err := e.db.UpstreamSlots(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if slots[slotAccount] != 0 {
				t.Errorf("after the refused task, %d of %s's slots are taken; want 0", slots[slotAccount], slotAccount)
			}
			b, err := e.db.Balance(ctx, e.key.ID)
			if err != nil || b.Available != 10_000_000 || b.Reserved != 0 || b.Used != 0 {
				t.Errorf("balance after the refused task %+v %v: want the reservation refunded", b, err)
			}
			// Settled once: the reservation posted in, and released out, nothing more.
			entries, err := e.db.Entries(ctx, store.AccountID(e.key.ID, store.AccountReserved))
			if err != nil || len(entries) != 2 || entries[0].Amount+entries[1].Amount != 0 {
				t.Errorf("reserved account entries %+v %v: want one reservation and one release", entries, err)
			}

			next := e.waitTerminal(e.storedTask(tc.next.req, tc.next.quote, reserve))
			if next.Status != store.StatusCompleted {
				t.Fatalf("the next task on the account ended %s (%s %s); want completed", next.Status, next.ErrorCode, next.ErrorMessage)
			}
			if slots, err := e.db.UpstreamSlots(ctx); err != nil || slots[slotAccount] != 0 {
				t.Errorf("after both tasks the slots are %v %v; want %s's free", slots, err, slotAccount)
			}
			if err := e.db.CheckLedger(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
