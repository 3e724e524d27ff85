// Command imagebomb measures what decompression-bomb images cost the service: the issue's
// all-black 16000×16000 PNG (746 KB, 768 MB of pixels) and its 16-bit RGBA twin (1.99 MB,
// 2 GB of pixels), sent to one `mediagen serve` (SQLite, sandbox engine, fresh data directory)
// on 127.0.0.1 as OpenAI's multipart input_reference on POST /v1/videos, and by URL as the
// first frame (input_reference.image_url, fetched by the sandbox when it renders). For each
// it prints the answer and the peak resident memory of the service's process tree above
// idle (the service and every process it started, sampled every 5 ms from /proc), and the
// highest VmHWM of any child. Then a flood: -n bombs at once, both ways. Legitimate images
// at the budget (4096×4096 8-bit RGBA, 2896×2896 16-bit RGBA: the costliest PNGs the budget
// admits, rendered into a real sandbox video) are the control.
//
//	go run ./bench/imagebomb [-bin /tmp/mediagen] [-n 100]
//
// Without -bin it builds ./cmd/mediagen. It never fails on a number.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"mediagen/bench/internal/proc"
	"mediagen/internal/media/pixels/pixelstest"
)

var reKey = regexp.MustCompile(`mg_[a-z2-7]{40}`)

func main() {
	bin := flag.String("bin", "", "the mediagen binary (default: build ./cmd/mediagen)")
	n := flag.Int("n", 100, "bombs sent at once in the flood (0: no flood)")
	flag.Parse()
	if err := run(*bin, *n); err != nil {
		fmt.Fprintln(os.Stderr, "imagebomb:", err)
		os.Exit(1)
	}
}

type image struct {
	name string
	data []byte
}

func png(w, h uint32, depth, ct byte) []byte {
	var b bytes.Buffer
	if err := pixelstest.WritePNG(&b, w, h, depth, ct); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func run(bin string, n int) error {
	dir, err := os.MkdirTemp("", "imagebomb-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if bin == "" {
		bin = filepath.Join(dir, "mediagen")
		root, err := proc.ModuleRoot()
		if err != nil {
			return err
		}
		if _, err := proc.Run(context.Background(), 10*time.Minute, root, "go", "build", "-o", bin, "./cmd/mediagen"); err != nil {
			return fmt.Errorf("build: %w", err)
		}
	}
	images := []image{
		{"black 16000x16000 RGB 8-bit", png(16000, 16000, 8, pixelstest.RGB)},
		{"black 16000x16000 RGBA 16-bit", png(16000, 16000, 16, pixelstest.RGBA)},
		{"control: 4096x4096 RGBA 8-bit (at the budget)", png(4096, 4096, 8, pixelstest.RGBA)},
		{"control: 2896x2896 RGBA 16-bit (at the budget)", png(2896, 2896, 16, pixelstest.RGBA)},
	}
	// The images by URL: an HTTPS server on 127.0.0.1 whose certificate the service trusts
	// through SSL_CERT_FILE, reached with --fetch-allow loopback.
	media := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		if i < 0 || i >= len(images) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(images[i].data))
	}))
	defer media.Close()
	certFile := filepath.Join(dir, "ca.pem")
	cert := media.TLS.Certificates[0].Certificate[0]
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert}), 0o600); err != nil {
		return err
	}

	addr, err := proc.FreeAddr()
	if err != nil {
		return err
	}
	base := "http://" + addr
	data := filepath.Join(dir, "data")
	env := append(proc.ChildEnv(), "SSL_CERT_FILE="+certFile)
	p, err := proc.Start("serve", bin, filepath.Join(dir, "serve.log"), env, "serve", "--listen", addr, "--data-dir", data,
		"--log-level", "warn", "--fetch-allow", "loopback")
	if err != nil {
		return err
	}
	defer p.Stop(10 * time.Second)
	ctx := context.Background()
	if err := proc.WaitReady(ctx, p, base, "/readyz", time.Minute); err != nil {
		return err
	}
	out, err := proc.Run(ctx, time.Minute, dir, bin, "admin", "key", "create", "--tenant", "demo", "--unlimited", "--name", "imagebomb", "--data-dir", data)
	if err != nil {
		return fmt.Errorf("create key: %w", err)
	}
	key := reKey.FindString(out)
	if key == "" {
		return fmt.Errorf("create key: no secret in:\n%s", out)
	}
	c := &client{base: base, key: key, http: &http.Client{Timeout: 5 * time.Minute}}
	time.Sleep(2 * time.Second) // let the start-up settle before the idle figure
	idle := treeRSS(p.PID())
	fmt.Printf("service idle: %.1f MiB resident (process tree)\n\n", float64(idle.sumKiB)/1024)
	fmt.Printf("%-48s %-10s %-34s %14s %14s %10s\n", "image", "sent as", "answer", "tree peak +MiB", "child HWM MiB", "time")
	for i, img := range images {
		for _, how := range []string{"upload", "url"} {
			m := startMeter(p.PID(), idle)
			start := time.Now()
			var answer string
			if how == "upload" {
				answer = c.upload(img.data, fmt.Sprintf("one-%d-%s", i, how))
			} else {
				answer = c.byURL(fmt.Sprintf("%s/%d", media.URL, i), fmt.Sprintf("one-%d-%s", i, how))
			}
			peak := m.stop()
			fmt.Printf("%-48s %-10s %-34s %14.1f %14.1f %10v\n", img.name, how, answer, float64(peak.aboveKiB)/1024, float64(peak.childHWMKiB)/1024,
				time.Since(start).Round(time.Millisecond))
		}
	}
	if n <= 0 {
		return nil
	}
	fmt.Printf("\nflood: %d bombs at once (the 16-bit RGBA one)\n", n)
	for _, how := range []string{"upload", "url"} {
		m := startMeter(p.PID(), idle)
		start := time.Now()
		answers := map[string]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		var seq atomic.Int64
		for range n {
			wg.Go(func() {
				id := fmt.Sprintf("flood-%s-%d", how, seq.Add(1))
				var a string
				if how == "upload" {
					a = c.upload(images[1].data, id)
				} else {
					a = c.byURL(media.URL+"/1", id)
				}
				mu.Lock()
				answers[a]++
				mu.Unlock()
			})
		}
		wg.Wait()
		peak := m.stop()
		fmt.Printf("  %-8s answers %v; tree peak +%.1f MiB, child HWM %.1f MiB, %v\n", how, answers, float64(peak.aboveKiB)/1024,
			float64(peak.childHWMKiB)/1024, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

type client struct {
	base, key string
	http      *http.Client
}

// upload posts OpenAI's multipart create with data as the input_reference file and returns
// the answer: its status, and the error's code or the task's end.
func (c *client) upload(data []byte, idem string) string {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("model", "demo-video-fast")
	_ = mw.WriteField("prompt", "a black frame")
	_ = mw.WriteField("seconds", "4")
	_ = mw.WriteField("size", "1280x720")
	fw, _ := mw.CreateFormFile("input_reference", "black.png")
	_, _ = fw.Write(data)
	_ = mw.Close()
	return c.create(mw.FormDataContentType(), body.Bytes(), idem)
}

// byURL posts OpenAI's JSON create with the image by URL as the first frame.
func (c *client) byURL(url, idem string) string {
	b, _ := json.Marshal(map[string]any{"model": "demo-video-fast", "prompt": "a black frame", "seconds": "4", "size": "1280x720",
		"input_reference": map[string]string{"image_url": url}})
	return c.create("application/json", b, idem)
}

func (c *client) create(ct string, body []byte, idem string) string {
	req, _ := http.NewRequest("POST", c.base+"/v1/videos", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Idempotency-Key", idem)
	res, err := c.http.Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var v struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Error  struct {
			Code  string `json:"code"`
			Param string `json:"param"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &v)
	if res.StatusCode != 202 {
		return fmt.Sprintf("%d %s", res.StatusCode, v.Error.Param)
	}
	// Accepted: wait for the task's end, since the engine's work is what may cost memory.
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		req, _ := http.NewRequest("GET", c.base+"/v1/videos/"+v.ID, nil)
		req.Header.Set("Authorization", "Bearer "+c.key)
		res, err := c.http.Do(req)
		if err != nil {
			return "error: " + err.Error()
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var t struct {
			Status string `json:"status"`
			Error  struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(raw, &t)
		switch t.Status {
		case "completed":
			return "202, then completed"
		case "failed", "expired":
			return "202, then " + t.Status + " " + t.Error.Code
		}
	}
	return "202, not finished in 5 min"
}
