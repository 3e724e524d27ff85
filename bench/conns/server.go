package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"mediagen/bench/internal/democat"
	"mediagen/bench/internal/proc"
)

// bench is one run of the harness.
type bench struct {
	o        options
	out, log io.Writer
	tmp      string
	srv      *proc.Proc
	base     string // http://127.0.0.1:PORT
	addr     string // 127.0.0.1:PORT
	// The admin listener (--admin-listen) and an operator token for its well-behaved calls.
	adminAddr, adminBase, adminToken string
	key                              string
	taskID                           string
	links                            []string // paths and queries of the stored results' links
	linkSize                         int64
	client                           *http.Client
	results                          []*phaseResult

	cleanMu  sync.Mutex
	cleanups []func()
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "bench: "+format+"\n", args...)
}

func (b *bench) onCleanup(f func()) {
	b.cleanMu.Lock()
	defer b.cleanMu.Unlock()
	b.cleanups = append(b.cleanups, f)
}

func (b *bench) cleanup() {
	b.cleanMu.Lock()
	defer b.cleanMu.Unlock()
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
	b.cleanups = nil
}

// socketsSpare is what the bench holds besides the attack sockets: the well-behaved client's
// connections, the server's pipes, the binaries and logs.
const socketsSpare = 256

// raiseFileLimit makes room for the attack sockets of the largest phase in this process's
// open-file limit (the server, a child process, has its own).
func (b *bench) raiseFileLimit() error {
	need := uint64(max(b.o.stalled+b.o.uploads, b.o.headers) + socketsSpare)
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return fmt.Errorf("read the open-file limit: %w", err)
	}
	if l.Cur < need && l.Max > l.Cur {
		raised := l
		raised.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			l = raised
		}
	}
	if l.Cur < need {
		return fmt.Errorf("the open-file limit is %d (hard %d) and this run needs %d: raise it (ulimit -Hn / ulimit -n %d) or lower -stalled, -uploads, -headers",
			l.Cur, l.Max, need, need)
	}
	b.logf("open-file limit of the bench: %d (needs %d)", l.Cur, need)
	return nil
}

var (
	secretLine   = regexp.MustCompile(`(?m)^secret:\s+(mg_[a-z2-7]{40})\s*$`)
	adminTokenRe = regexp.MustCompile(`mga_[a-z2-7]{52}`)
)

// start builds and starts the server, makes a key and stores one result.
func (b *bench) start(ctx context.Context) error {
	bin, err := b.build(ctx)
	if err != nil {
		return err
	}
	cat, err := democat.Write(b.tmp)
	if err != nil {
		return err
	}
	data := filepath.Join(b.tmp, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	for attempt := range 3 {
		addr, err := proc.FreeAddr()
		if err != nil {
			return err
		}
		adminAddr, err := proc.FreeAddr()
		if err != nil {
			return err
		}
		args := append([]string{"serve", "--listen", addr, "--admin-listen", adminAddr, "--data-dir", data, "--catalog", cat,
			"--log-level", "warn", "--sandbox-pace", "0s"}, b.o.serveArgs...)
		p, err := proc.Start("mediagen", bin, filepath.Join(b.tmp, fmt.Sprintf("serve-%d.log", attempt)), proc.ChildEnv(), args...)
		if err != nil {
			return err
		}
		b.onCleanup(func() { p.Stop(10 * time.Second) })
		b.base, b.addr = "http://"+addr, addr
		b.adminAddr, b.adminBase = adminAddr, "http://"+adminAddr
		if err = proc.WaitReady(ctx, p, b.base, "/readyz", 60*time.Second); err == nil {
			b.srv = p
			break
		}
		p.Stop(5 * time.Second)
		if ctx.Err() != nil || !strings.Contains(err.Error(), "address already in use") || attempt == 2 {
			return err
		}
	}
	b.logf("server pid %d on %s", b.srv.PID(), b.base)
	out, err := proc.Run(ctx, time.Minute, data, bin, "admin", "key", "create", "--tenant", "demo", "--unlimited",
		"--name", "bench-conns", "--data-dir", data, "--catalog", cat)
	if err != nil {
		return fmt.Errorf("create key: %w", err)
	}
	m := secretLine.FindStringSubmatch(out)
	if m == nil {
		return fmt.Errorf("create key: no secret in the output:\n%s", out)
	}
	b.key = m[1]
	out, err = proc.Run(ctx, time.Minute, data, bin, "admin", "token", "create", "--name", "bench-conns", "--role", "operator",
		"--data-dir", data)
	if err != nil {
		return fmt.Errorf("create admin token: %w", err)
	}
	if b.adminToken = adminTokenRe.FindString(out); b.adminToken == "" {
		return fmt.Errorf("create admin token: no secret in the output:\n%s", out)
	}
	b.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
	b.onCleanup(b.client.CloseIdleConnections)
	return b.storeResults(ctx)
}

type task struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Metadata struct {
		URL string `json:"url"`
	} `json:"metadata"`
}

// storeResults creates -links videos on the sandbox engine (4 s at 480p, a few hundred KB:
// far more than a stalled client's buffers and the server's send buffer hold) and waits for
// them, at most ten minutes: their links are what the stalled downloads ask for, spread so
// that the per-link bound is not the only one met, and the first one's id is what the
// well-behaved client polls.
func (b *bench) storeResults(ctx context.Context) error {
	ids := make([]string, b.o.links)
	for i := range ids {
		body := fmt.Sprintf(`{"model":"demo-video-fast","prompt":"a lighthouse at dusk, bench conns %d",`+
			`"metadata":{"duration":4,"resolution":"480p","client_request_id":"bench-conns-%d"}}`, i, i)
		var t task
		if err := b.call(ctx, http.MethodPost, "/v1/videos", body, http.StatusAccepted, &t); err != nil {
			return fmt.Errorf("create a stored result: %w", err)
		}
		ids[i] = t.ID
	}
	b.taskID = ids[0]
	deadline := time.Now().Add(10 * time.Minute)
	for _, id := range ids {
		var t task
		for t.Status != "completed" {
			if err := b.call(ctx, http.MethodGet, "/v1/videos/"+id, "", http.StatusOK, &t); err != nil {
				return err
			}
			switch {
			case t.Status == "completed":
				continue
			case t.Status == "failed" || t.Status == "expired":
				return fmt.Errorf("the stored result's task %s ended %s", id, t.Status)
			case time.Now().After(deadline):
				return fmt.Errorf("the stored result's task %s is still %s after 10 minutes", id, t.Status)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(250 * time.Millisecond):
			}
		}
		link := t.Metadata.URL
		if !strings.HasPrefix(link, b.base+"/") {
			return fmt.Errorf("the result link %q is not on the server (%s)", link, b.base)
		}
		b.links = append(b.links, strings.TrimPrefix(link, b.base))
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodHead, b.base+b.links[0], nil)
	res, err := b.client.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	b.linkSize = res.ContentLength
	b.logf("stored %d results (the first %d bytes)", len(b.links), b.linkSize)
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
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, bytes.TrimSpace(got))
	}
	return json.Unmarshal(got, into)
}
