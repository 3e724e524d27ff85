// Command speechlat measures the latency of POST /v1/audio/speech as a client sees it: one
// `mediagen serve` (SQLite, fresh data directory) on 127.0.0.1, a key of the demo tenant, and n requests
// one after another with a short text and a fresh client_request_id each. It prints the
// median, p90 and the fastest and slowest, and never fails on a number.
//
//	go build -o /tmp/mediagen ./cmd/mediagen && go run ./bench/speechlat -bin /tmp/mediagen -n 40
//
// The latency is mostly espeak-ng and ffmpeg; what the service adds around them (recording,
// the job's claim, settling, the wake-up of the waiting request) is the difference between
// two builds measured back to back on the same machine.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"mediagen/bench/internal/proc"
)

var reKey = regexp.MustCompile(`mg_[a-z2-7]{40}`)

func main() {
	bin := flag.String("bin", "", "the mediagen binary to measure (required)")
	n := flag.Int("n", 40, "requests, one after another")
	warm := flag.Int("warmup", 3, "requests before measuring")
	flag.Parse()
	if err := run(*bin, *n, *warm); err != nil {
		fmt.Fprintln(os.Stderr, "speechlat:", err)
		os.Exit(1)
	}
}

func run(bin string, n, warm int) error {
	if bin == "" {
		return fmt.Errorf("-bin is required")
	}
	dir, err := os.MkdirTemp("", "speechlat-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	addr, err := proc.FreeAddr()
	if err != nil {
		return err
	}
	base := "http://" + addr
	logPath := filepath.Join(dir, "serve.log")
	p, err := proc.Start("serve", bin, logPath, proc.ChildEnv(), "serve", "--listen", addr, "--data-dir", filepath.Join(dir, "data"), "--log-level", "warn")
	if err != nil {
		return err
	}
	defer p.Stop(10 * time.Second)
	ctx := context.Background()
	if err := proc.WaitReady(ctx, p, base, "/readyz", time.Minute); err != nil {
		return err
	}
	// serve prints the demo key's secret only to a terminal: make a key of the demo tenant
	// (unlimited, so the run never stops on a balance) the way an operator would.
	out, err := proc.Run(ctx, time.Minute, dir, bin, "admin", "key", "create", "--tenant", "demo", "--unlimited", "--name", "speechlat",
		"--data-dir", filepath.Join(dir, "data"))
	if err != nil {
		return fmt.Errorf("create key: %w", err)
	}
	key := reKey.FindString(out)
	if key == "" {
		return fmt.Errorf("create key: no secret in the output:\n%s", out)
	}
	var took []time.Duration
	for i := range warm + n {
		body := fmt.Sprintf(`{"model":"demo-speech","input":"Your order has shipped.","metadata":{"client_request_id":"lat-%d"}}`, i)
		req, _ := http.NewRequest("POST", base+"/v1/audio/speech", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		d := time.Since(start)
		if res.StatusCode != 200 {
			return fmt.Errorf("request %d: %d %s", i, res.StatusCode, b)
		}
		if i >= warm {
			took = append(took, d)
		}
	}
	slices.Sort(took)
	q := func(f float64) time.Duration { return took[int(f*float64(len(took)-1))] }
	fmt.Printf("speech requests: %d (after %d warm-up), one at a time\n", len(took), warm)
	fmt.Printf("median %v  p90 %v  min %v  max %v\n", q(0.5).Round(100*time.Microsecond), q(0.9).Round(100*time.Microsecond),
		took[0].Round(100*time.Microsecond), took[len(took)-1].Round(100*time.Microsecond))
	return nil
}
