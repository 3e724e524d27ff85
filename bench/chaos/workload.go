package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// taskRec is a video task the service accepted (answered 202 for).
type taskRec struct {
	id, kind, crid, body string
	// Set the first time the harness sees the task completed: the result's SHA-256 and
	// the usage it reported. A completed result must never change.
	status, hash, usage string
}

// call is one request the workload sends with a fixed body: retried on another replica when
// the connection fails or the answer is 5xx, with the same client_request_id.
type call struct {
	path, body string
}

// workload drives the replicas and records what was accepted.
type workload struct {
	replicas []*replica
	key      string
	group    string // the asset group of the workload
	fx       *fixtures
	client   *http.Client
	rng      *rand.Rand
	rngMu    sync.Mutex

	mu       sync.Mutex
	tasks    map[string]*taskRec
	order    []string
	unknown  []taskRec // creates whose every attempt failed: outcome unknown until replayed
	speeches []speechRec
	assets   []string // ids of accepted assets
	images   []string // Active image assets
	ops      map[string]int
	refused  map[string]int // 4xx answers by operation and status (none are expected)

	downloadErr      string       // the last failed download of a completed result
	downloadRefusals atomic.Int64 // downloads answered 429 or 503, then retried
	noRetryAfter     atomic.Int64 // 429 answers without a Retry-After (the service must send one)
	apiRefusals      atomic.Int64 // API answers 429, then retried after their Retry-After
	retries          atomic.Int64 // attempts after the first
	replays          atomic.Int64
	replayChanged    atomic.Int64 // replays that answered another task id or audio
	seq              atomic.Int64
}

type speechRec struct {
	id, crid, body, hash string
}

func (w *workload) intn(n int) int {
	w.rngMu.Lock()
	defer w.rngMu.Unlock()
	return w.rng.IntN(n)
}

func (w *workload) count(m map[string]int, k string) {
	w.mu.Lock()
	m[k]++
	w.mu.Unlock()
}

// send posts c to a random replica, moving on to the next on connection errors and 5xx
// answers (a replica being killed, the database or the bucket down), for up to budget.
func (w *workload) send(ctx context.Context, c call, budget time.Duration) (int, []byte, error) {
	deadline := time.Now().Add(budget)
	i := w.intn(len(w.replicas))
	var lastErr error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			w.retries.Add(1)
		}
		r := w.replicas[(i+attempt)%len(w.replicas)]
		status, b, err := w.do(ctx, "POST", r.base()+c.path, c.body)
		if err == nil && status < 500 {
			return status, b, nil
		}
		if err == nil {
			err = fmt.Errorf("%d %s", status, bytes.TrimSpace(b))
		}
		lastErr = err
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, nil, lastErr
		}
		time.Sleep(time.Duration(200+w.intn(300)) * time.Millisecond)
	}
}

// do sends one API request; a 429 is waited out as its Retry-After says (at most
// downloadAttempts times, maxRetryAfter each), as a well-behaved client does: a limit is not
// a failure of the service.
func (w *workload) do(ctx context.Context, method, url, body string) (int, []byte, error) {
	for attempt := 1; ; attempt++ {
		status, b, retry, err := w.doOnce(ctx, method, url, body)
		if err != nil || status != http.StatusTooManyRequests || attempt >= downloadAttempts || retry > maxRetryAfter {
			return status, b, err
		}
		w.apiRefusals.Add(1)
		select {
		case <-ctx.Done():
			return status, b, ctx.Err()
		case <-time.After(retry):
		}
	}
}

func (w *workload) doOnce(ctx context.Context, method, url, body string) (int, []byte, time.Duration, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+w.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := w.client.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, w.retryAfter(res), err
}

// retryAfter is a 429's Retry-After (noHeaderWait when it has none, counted: the service
// always sends one); 0 for other answers.
func (w *workload) retryAfter(res *http.Response) time.Duration {
	if res.StatusCode != http.StatusTooManyRequests && res.StatusCode != http.StatusServiceUnavailable {
		return 0
	}
	if secs, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if res.StatusCode == http.StatusTooManyRequests {
		w.noRetryAfter.Add(1)
	}
	return noHeaderWait
}

// op runs one operation of the mix.
func (w *workload) op(ctx context.Context) {
	n := w.seq.Add(1)
	crid := fmt.Sprintf("chaos-%d-%s", n, randHex(3))
	roll := w.intn(100)
	switch {
	case roll < 45: // native on the fake Ark: the upstream counts its paid jobs per task
		w.createVideo(ctx, "ark", crid, fmt.Sprintf(`{"model":"demo-video-fast","prompt":"chaos %d","metadata":{"duration":4,"resolution":"480p","ratio":"16:9","client_request_id":%q}}`, n, crid))
	case roll < 53: // native on the sandbox engine
		w.createVideo(ctx, "sandbox", crid, fmt.Sprintf(`{"model":"demo-video-mini","prompt":"chaos %d","metadata":{"duration":4,"resolution":"480p","client_request_id":%q}}`, n, crid))
	case roll < 56: // production: generation and enhancement, the intermediate in the store
		w.createVideo(ctx, "production", crid, fmt.Sprintf(`{"model":"demo-production-lite","prompt":"chaos %d","metadata":{"duration":4,"resolution":"1080p","client_request_id":%q}}`, n, crid))
	case roll < 62: // standalone enhancement of a clip on the harness's HTTPS server
		w.createVideo(ctx, "enhancement", crid, fmt.Sprintf(`{"model":"demo-enhance-lite","metadata":{"video_url":%q,"duration":2.5,"resolution_limit":240,"client_request_id":%q}}`, w.fx.url("clip.mp4"), crid))
	case roll < 68: // native with an asset of the library as its first frame
		if img := w.image(); img != "" {
			w.createVideo(ctx, "asset", crid, fmt.Sprintf(`{"model":"demo-video-2.5","prompt":"chaos %d","metadata":{"duration":4,"resolution":"480p","ratio":"adaptive","client_request_id":%q,"content":[{"type":"image_url","role":"first_frame","image_url":{"url":"asset://%s"}}]}}`, n, crid, img))
			return
		}
		fallthrough
	case roll < 75: // an asset
		w.createAsset(ctx)
	case roll < 90: // speech, synchronous
		w.speech(ctx, crid, fmt.Sprintf(`{"model":"demo-speech","input":"Chaos request %d.","metadata":{"client_request_id":%q}}`, n, crid))
	default: // an identical replay of an accepted create, on any replica
		w.replay(ctx)
	}
}

func (w *workload) createVideo(ctx context.Context, kind, crid, body string) {
	w.count(w.ops, "video."+kind)
	status, b, err := w.send(ctx, call{"/v1/videos", body}, 20*time.Second)
	if err != nil {
		w.mu.Lock()
		w.unknown = append(w.unknown, taskRec{kind: kind, crid: crid, body: body})
		w.mu.Unlock()
		return
	}
	var v struct {
		ID string `json:"id"`
	}
	if status != http.StatusAccepted || json.Unmarshal(b, &v) != nil || v.ID == "" {
		w.count(w.refused, fmt.Sprintf("video.%s %d %s", kind, status, firstLine(b)))
		return
	}
	w.accept(&taskRec{id: v.ID, kind: kind, crid: crid, body: body})
}

func (w *workload) accept(t *taskRec) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.tasks[t.id]; ok {
		return
	}
	w.tasks[t.id] = t
	w.order = append(w.order, t.id)
}

// replay sends an accepted create again, byte for byte: the answer must name the same task.
func (w *workload) replay(ctx context.Context) {
	w.mu.Lock()
	if len(w.order) == 0 {
		w.mu.Unlock()
		return
	}
	t := *w.tasks[w.order[w.intn(len(w.order))]]
	w.mu.Unlock()
	w.count(w.ops, "video.replay")
	status, b, err := w.send(ctx, call{"/v1/videos", t.body}, 20*time.Second)
	if err != nil {
		return
	}
	w.replays.Add(1)
	var v struct {
		ID string `json:"id"`
	}
	if (status != http.StatusOK && status != http.StatusAccepted) || json.Unmarshal(b, &v) != nil || v.ID != t.id {
		w.replayChanged.Add(1)
		w.count(w.refused, fmt.Sprintf("video.replay %d %s", status, firstLine(b)))
	}
}

func (w *workload) image() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.images) == 0 {
		return ""
	}
	return w.images[w.intn(len(w.images))]
}

// createAsset registers an image or a video asset, and watches it become Active.
func (w *workload) createAsset(ctx context.Context) {
	typ, src := "Image", w.fx.url("frame.png")
	if w.intn(3) == 0 {
		typ, src = "Video", w.fx.url("clip.mp4")
	}
	w.count(w.ops, "asset."+typ)
	body := fmt.Sprintf(`{"GroupId":%q,"URL":%q,"AssetType":%q}`, w.group, src, typ)
	status, b, err := w.send(ctx, call{"/v1/vidgen/virtual/assets/create", body}, 20*time.Second)
	if err != nil {
		return // asset creates carry no idempotency key: a lost answer may leave an asset we never learn of
	}
	var v struct {
		ID string `json:"Id"`
	}
	if status != http.StatusAccepted || json.Unmarshal(b, &v) != nil || v.ID == "" {
		w.count(w.refused, fmt.Sprintf("asset %d %s", status, firstLine(b)))
		return
	}
	w.mu.Lock()
	w.assets = append(w.assets, v.ID)
	w.mu.Unlock()
	if typ != "Image" {
		return
	}
	go func() {
		for i := 0; i < 60 && ctx.Err() == nil; i++ {
			time.Sleep(time.Second)
			status, b, err := w.send(ctx, call{"/v1/vidgen/virtual/assets/get", `{"Id":"` + v.ID + `"}`}, 10*time.Second)
			if err != nil || status != 200 {
				continue
			}
			var a struct{ Status string }
			if json.Unmarshal(b, &a) == nil && a.Status != "Processing" {
				if a.Status == "Active" {
					w.mu.Lock()
					w.images = append(w.images, v.ID)
					w.mu.Unlock()
				}
				return
			}
		}
	}()
}

// speech asks for audio; a failed attempt is retried with the same client_request_id, which
// must give back the original audio, never a second generation.
func (w *workload) speech(ctx context.Context, crid, body string) {
	w.count(w.ops, "speech")
	status, b, err := w.send(ctx, call{"/v1/audio/speech", body}, 30*time.Second)
	if err != nil {
		return
	}
	var v struct {
		ID  string `json:"id"`
		URL string `json:"url"`
	}
	if status != http.StatusOK || json.Unmarshal(b, &v) != nil || v.ID == "" {
		w.count(w.refused, fmt.Sprintf("speech %d %s", status, firstLine(b)))
		return
	}
	// A hash left empty (the audio could not be read) is reported by the check, not compared.
	got := w.download(ctx, v.URL)
	w.mu.Lock()
	w.speeches = append(w.speeches, speechRec{id: v.ID, crid: crid, body: body, hash: got.hash})
	w.mu.Unlock()
}

// The harness downloads like a well-behaved client: a refusal (429, or 503 while a replica
// restarts) is retried after its Retry-After, and a failed connection (a replica being
// killed) after a short pause, at most downloadAttempts times and for downloadBudget in all.
// The check phase downloads every result back to back from one address, which the file
// routes' per-address rate refuses in part; a refusal is not changed audio.
const (
	downloadAttempts = 10
	downloadBudget   = 2 * time.Minute
	// maxRetryAfter caps one wait: a longer Retry-After is a finding, not something to sit out.
	maxRetryAfter = 30 * time.Second
	// connRetry is the first pause after a failed connection, which has no Retry-After.
	connRetry = 500 * time.Millisecond
)

// noHeaderWait is the wait after a refusal without Retry-After (the service always sends one;
// a variable so the harness's own test can shorten it).
var noHeaderWait = time.Second

// fetched is what a download saw: the last answer's status, and the SHA-256 of a 200's body.
type fetched struct {
	status   int // 0: no answer (err)
	hash     string
	attempts int
	refused  int // answers 429 or 503 that were retried
	err      error
}

func (f fetched) ok() bool { return f.err == nil && f.status == http.StatusOK }

// String says what was seen, for the report: "200 sha256 3f2a…", "429 after 10 attempts".
func (f fetched) String() string {
	switch {
	case f.ok():
		return "200 sha256 " + short(f.hash)
	case f.status != 0:
		return fmt.Sprintf("%d after %d attempts", f.status, f.attempts)
	default:
		return fmt.Sprintf("no answer after %d attempts: %v", f.attempts, f.err)
	}
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12] + "…"
	}
	return hash
}

// download hashes what a result link serves (straight from the store on S3), retrying
// refusals and failed connections within the bounds above.
func (w *workload) download(ctx context.Context, link string) fetched {
	deadline := time.Now().Add(downloadBudget)
	var f fetched
	for f.attempts < downloadAttempts {
		f.attempts++
		var wait time.Duration
		f.status, f.hash, wait, f.err = w.downloadOnce(ctx, link)
		if f.err == nil && f.status != http.StatusTooManyRequests && f.status != http.StatusServiceUnavailable {
			break
		}
		if f.err == nil {
			f.refused++
			w.downloadRefusals.Add(1)
		} else {
			// No answer: a replica or the bucket restarting; wait longer each time (0.5, 1,
			// 2, then 4 s), to outlast a 5 s outage within the attempts.
			wait = connRetry << min(f.attempts-1, 3)
		}
		if wait > maxRetryAfter || time.Now().Add(wait).After(deadline) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	if f.err == nil && f.status != http.StatusOK {
		f.err = fmt.Errorf("GET result: %d", f.status)
	}
	return f
}

// downloadOnce makes one request; wait is how long to wait before the next: the answer's
// Retry-After (noHeaderWait when a refusal lacks one, which the service never sends), or connRetry
// after a failed connection.
func (w *workload) downloadOnce(ctx context.Context, link string) (status int, hash string, wait time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, "GET", link, nil)
	if err != nil {
		return 0, "", 0, err
	}
	res, err := w.client.Do(req)
	if err != nil {
		return 0, "", connRetry, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
		return res.StatusCode, "", w.retryAfter(res), nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, res.Body); err != nil {
		return res.StatusCode, "", connRetry, err
	}
	return res.StatusCode, hex.EncodeToString(h.Sum(nil)), 0, nil
}

// taskView is what GET /v1/videos/{id} says, in the parts the harness checks.
type taskView struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Metadata struct {
		URL      string `json:"url"`
		VideoURL string `json:"video_url"` // a standalone enhancement's result
	} `json:"metadata"`
	Usage json.RawMessage `json:"usage"`
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
}

func (v taskView) resultURL() string {
	if v.Metadata.URL != "" {
		return v.Metadata.URL
	}
	return v.Metadata.VideoURL
}

// get reads a task on any replica; found is false on 404.
func (w *workload) get(ctx context.Context, id string) (v taskView, found bool, err error) {
	i := w.intn(len(w.replicas))
	for attempt := 0; attempt < 2*len(w.replicas); attempt++ {
		r := w.replicas[(i+attempt)%len(w.replicas)]
		status, b, err := w.do(ctx, "GET", r.base()+"/v1/videos/"+id, "")
		switch {
		case err != nil || status >= 500:
			time.Sleep(200 * time.Millisecond)
			continue
		case status == http.StatusNotFound:
			return v, false, nil
		case status != 200:
			return v, false, fmt.Errorf("GET %s: %d %s", id, status, firstLine(b))
		}
		return v, true, json.Unmarshal(b, &v)
	}
	return v, false, errors.New("no replica answered")
}

// observe polls a task once and records its first completed result.
func (w *workload) observe(ctx context.Context, t *taskRec) {
	v, found, err := w.get(ctx, t.id)
	if err != nil || !found {
		return
	}
	w.mu.Lock()
	first := v.Status == "completed" && t.hash == ""
	w.mu.Unlock()
	if !first {
		return
	}
	got := w.download(ctx, v.resultURL())
	if !got.ok() {
		w.mu.Lock()
		w.downloadErr = fmt.Sprintf("%s (%s): %s", t.id, t.kind, got)
		w.mu.Unlock()
		return
	}
	w.mu.Lock()
	t.status, t.hash, t.usage = v.Status, got.hash, string(v.Usage)
	w.mu.Unlock()
}

// poller polls accepted tasks on random replicas, at most rate a second, until ctx ends.
func (w *workload) poller(ctx context.Context, rate float64) {
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		w.mu.Lock()
		var t *taskRec
		if len(w.order) > 0 {
			t = w.tasks[w.order[w.intn(len(w.order))]]
		}
		w.mu.Unlock()
		if t != nil {
			w.observe(ctx, t)
		}
	}
}

func firstLine(b []byte) string {
	s := string(bytes.TrimSpace(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 160 {
		s = s[:160]
	}
	return s
}
