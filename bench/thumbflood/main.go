// Command thumbflood floods a mediagen server with late thumbnails, as issue 41 part 4 did:
// -tasks tasks completed "before thumbnails existed" (their thumbnails removed while the server
// is stopped), then one key asks for each task's thumbnail (variant=thumbnail) and drops the
// request after -drop, one after the other. It prints the peak number of media processes
// (ffmpeg, ffprobe, espeak-ng) under the server and the peak resident memory of the server's
// whole process tree, sampled from /proc, beside the idle figures, and the server's media
// budget series when it has them.
//
//	go run ./bench/thumbflood                       # 45 tasks, 20 ms drops, the tree's build
//	go run ./bench/thumbflood -tasks 100 -serve-args '--media-slots 2'
//	go run ./bench/thumbflood -mediagen /tmp/before/mediagen  # another build
//
// Traffic goes to 127.0.0.1 only; every loop is bounded in count and time.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"mediagen/bench/internal/democat"
	"mediagen/bench/internal/proc"
	"mediagen/internal/store"
	"mediagen/internal/store/sqlite"
	"mediagen/internal/video"
)

type options struct {
	tasks      int
	drop       time.Duration
	resolution string
	mediagen   string
	serveArgs  []string
	settle     time.Duration
}

func parse(args []string) (options, error) {
	var o options
	var serveArgs string
	fs := flag.NewFlagSet("thumbflood", flag.ContinueOnError)
	fs.IntVar(&o.tasks, "tasks", 45, "old tasks whose thumbnails are asked for (at most 500)")
	fs.DurationVar(&o.drop, "drop", 20*time.Millisecond, "each request is dropped after this long")
	fs.StringVar(&o.resolution, "resolution", "480p", "the tasks' resolution: 480p or 720p")
	fs.StringVar(&o.mediagen, "mediagen", "", "a mediagen binary to run instead of building ./cmd/mediagen")
	fs.StringVar(&serveArgs, "serve-args", "", "more arguments for serve, space-separated (e.g. '--media-slots 2')")
	fs.DurationVar(&o.settle, "settle", 60*time.Second, "longest wait, after the flood, for the media processes to end")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.serveArgs = strings.Fields(serveArgs)
	switch {
	case o.tasks < 1 || o.tasks > 500:
		return o, errors.New("-tasks must be from 1 to 500")
	case o.drop <= 0 || o.drop > 10*time.Second:
		return o, errors.New("-drop must be from 1ns to 10s")
	case o.resolution != "480p" && o.resolution != "720p":
		return o, errors.New("-resolution must be 480p or 720p")
	}
	return o, nil
}

func main() {
	o, err := parse(os.Args[1:])
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "thumbflood:", err)
		}
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute) // the whole run, setup included
	defer cancel()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "thumbflood:", err)
		os.Exit(1)
	}
}

type bench struct {
	o      options
	tmp    string
	bin    string
	cat    string
	data   string
	srv    *proc.Proc
	base   string
	key    string
	client *http.Client
	ids    []string
}

func run(ctx context.Context, o options) error {
	tmp, err := os.MkdirTemp("", "thumbflood-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b := &bench{o: o, tmp: tmp, data: filepath.Join(tmp, "data"),
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if b.bin, err = b.build(ctx); err != nil {
		return err
	}
	if b.cat, err = democat.Write(b.tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(b.data, 0o755); err != nil {
		return err
	}
	// Setup: the tasks, rendered with the fastest preset (what is measured is the thumbnails).
	if err := b.start(ctx, "setup", "--encode-preset", "ultrafast"); err != nil {
		return err
	}
	if err := b.makeKey(ctx); err != nil {
		return err
	}
	if err := b.makeTasks(ctx); err != nil {
		return err
	}
	b.srv.Stop(10 * time.Second)
	if err := b.makeOld(ctx); err != nil {
		return err
	}
	if err := b.start(ctx, "flood", b.o.serveArgs...); err != nil {
		return err
	}
	defer b.srv.Stop(10 * time.Second)
	return b.flood(ctx)
}

func (b *bench) build(ctx context.Context) (string, error) {
	if b.o.mediagen != "" {
		return b.o.mediagen, nil
	}
	root, err := proc.ModuleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(b.tmp, "mediagen")
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	if _, err := proc.Run(ctx, 5*time.Minute, root, gobin, "build", "-o", out, "./cmd/mediagen"); err != nil {
		return "", err
	}
	return out, nil
}

func (b *bench) start(ctx context.Context, name string, extra ...string) error {
	for attempt := range 3 {
		addr, err := proc.FreeAddr()
		if err != nil {
			return err
		}
		args := append([]string{"serve", "--listen", addr, "--data-dir", b.data, "--catalog", b.cat, "--log-level", "warn",
			"--sandbox-pace", "0s"}, extra...)
		p, err := proc.Start("mediagen", b.bin, filepath.Join(b.tmp, fmt.Sprintf("%s-%d.log", name, attempt)), proc.ChildEnv(), args...)
		if err != nil {
			return err
		}
		b.base = "http://" + addr
		if err = proc.WaitReady(ctx, p, b.base, "/readyz", 60*time.Second); err == nil {
			b.srv = p
			return nil
		}
		p.Stop(5 * time.Second)
		if ctx.Err() != nil || !strings.Contains(err.Error(), "address already in use") || attempt == 2 {
			return fmt.Errorf("%w\n%s", err, p.LogTail(20))
		}
	}
	return nil
}

var secretLine = regexp.MustCompile(`(?m)^secret:\s+(mg_[a-z2-7]{40})\s*$`)

func (b *bench) makeKey(ctx context.Context) error {
	out, err := proc.Run(ctx, time.Minute, b.data, b.bin, "admin", "key", "create", "--tenant", "demo", "--unlimited",
		"--name", "bench-thumbflood", "--data-dir", b.data, "--catalog", b.cat)
	if err != nil {
		return fmt.Errorf("create key: %w", err)
	}
	m := secretLine.FindStringSubmatch(out)
	if m == nil {
		return fmt.Errorf("create key: no secret in the output:\n%s", out)
	}
	b.key = m[1]
	return nil
}

func (b *bench) makeTasks(ctx context.Context) error {
	for i := range b.o.tasks {
		body := fmt.Sprintf(`{"model":"demo-video-fast","prompt":"an old kite %d","metadata":{"duration":4,"resolution":%q}}`, i, b.o.resolution)
		var t struct{ ID string }
		if err := b.call(ctx, http.MethodPost, "/v1/videos", body, http.StatusAccepted, &t); err != nil {
			return err
		}
		b.ids = append(b.ids, t.ID)
	}
	deadline := time.Now().Add(20 * time.Minute)
	for _, id := range b.ids {
		for {
			var t struct{ Status string }
			if err := b.call(ctx, http.MethodGet, "/v1/videos/"+id, "", http.StatusOK, &t); err != nil {
				return err
			}
			if t.Status == "completed" {
				break
			}
			if t.Status == "failed" || t.Status == "expired" || time.Now().After(deadline) {
				return fmt.Errorf("task %s: %s", id, t.Status)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	fmt.Printf("setup: %d tasks of 4 s at %s completed\n", len(b.ids), b.o.resolution)
	return nil
}

// makeOld turns the tasks into tasks of before thumbnails, with the server stopped: no
// thumbnail_key in their results, no thumbnail stored.
func (b *bench) makeOld(ctx context.Context) error {
	db, err := sqlite.Open(ctx, filepath.Join(b.data, "mediagen.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	for _, id := range b.ids {
		t, err := db.Task(ctx, id)
		if err != nil {
			return err
		}
		var res map[string]any
		if err := json.Unmarshal(t.Result, &res); err != nil {
			return fmt.Errorf("task %s result: %w", id, err)
		}
		delete(res, "thumbnail_key")
		doc, _ := json.Marshal(res)
		if err := db.Transact(ctx, func(tx store.Tx) error { return tx.ReplaceTaskResult(ctx, id, doc) }); err != nil {
			return err
		}
		if err := os.Remove(filepath.Join(b.data, "blobs", filepath.FromSlash(video.ThumbnailKey(id)))); err != nil {
			return fmt.Errorf("remove the thumbnail of %s: %w", id, err)
		}
	}
	return nil
}

func (b *bench) call(ctx context.Context, method, path, body string, want int, into any) error {
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+b.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := b.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	got, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, strings.TrimSpace(string(got)))
	}
	return json.Unmarshal(got, into)
}

// sample is one look at the server's process tree.
type sample struct {
	media  int     // media processes under the server
	rssMiB float64 // the tree's resident memory
}

// look counts the server's media processes and sums its tree's resident memory.
func look(root int) sample {
	var out sample
	for _, m := range proc.Tree(root) {
		out.rssMiB += proc.RSSMiB(m.PID)
		if m.PID != root && slices.Contains([]string{"ffmpeg", "ffprobe", "espeak-ng"}, m.Comm) {
			out.media++
		}
	}
	return out
}

func (b *bench) flood(ctx context.Context) error {
	pid := b.srv.PID()
	idle := look(pid)
	var mu sync.Mutex
	var peak sample
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			s := look(pid)
			mu.Lock()
			peak.media = max(peak.media, s.media)
			peak.rssMiB = max(peak.rssMiB, s.rssMiB)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	statuses := map[string]int{}
	start := time.Now()
	for _, id := range b.ids {
		rctx, cancel := context.WithTimeout(ctx, b.o.drop)
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, b.base+"/v1/videos/"+id+"/content?variant=thumbnail", nil)
		req.Header.Set("Authorization", "Bearer "+b.key)
		res, err := b.client.Do(req)
		switch {
		case err != nil && rctx.Err() != nil:
			statuses["dropped"]++
		case err != nil:
			statuses["error"]++
		default:
			statuses[strconv.Itoa(res.StatusCode)]++
			res.Body.Close()
		}
		cancel()
	}
	sent := time.Since(start)
	// The work the dropped requests left behind: wait until no media process is left.
	deadline := time.Now().Add(b.o.settle)
	for look(pid).media > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	drained := time.Since(start)
	close(stop)
	wg.Wait()
	made := 0
	for _, id := range b.ids {
		if _, err := os.Stat(filepath.Join(b.data, "blobs", filepath.FromSlash(video.ThumbnailKey(id)))); err == nil {
			made++
		}
	}
	var keys []string
	for k := range statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var answered []string
	for _, k := range keys {
		answered = append(answered, fmt.Sprintf("%s %d", k, statuses[k]))
	}
	fmt.Printf("flood: %d requests for late thumbnails, each dropped after %s, sent in %s; answers: %s\n",
		len(b.ids), b.o.drop, sent.Round(time.Millisecond), strings.Join(answered, ", "))
	fmt.Printf("media processes under the server: peak %d (idle %d); drained %s after the first request\n",
		peak.media, idle.media, drained.Round(time.Millisecond))
	fmt.Printf("resident memory of the process tree: idle %.0f MiB, peak %.0f MiB (+%.0f MiB)\n",
		idle.rssMiB, peak.rssMiB, peak.rssMiB-idle.rssMiB)
	fmt.Printf("thumbnails stored by the dropped requests' work: %d of %d\n", made, len(b.ids))
	b.printSeries(ctx)
	return nil
}

// printSeries prints the server's media budget series (absent on a build without one).
func (b *bench) printSeries(ctx context.Context) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/metrics", nil)
	res, err := b.client.Do(req)
	if err != nil {
		return
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	var lines []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "mediagen_media_") && !strings.Contains(l, "_bucket{") {
			lines = append(lines, "  "+l)
		}
	}
	if len(lines) == 0 {
		fmt.Println("server series: no mediagen_media_* (a build without the media budget)")
		return
	}
	fmt.Println("server series:")
	fmt.Println(strings.Join(lines, "\n"))
}
