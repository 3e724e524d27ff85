// Package blobtest is the conformance suite of blob stores: the promises of blob.Store —
// atomic writes, not-found semantics, prefix deletes, signed links that serve ranges and
// expire, retention, and flat memory on large objects — checked the same way on every store
// (the filesystem and S3 on a real MinIO).
package blobtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"mediagen/internal/blob"
)

// Harness is one store under test.
type Harness struct {
	Store blob.Store
	// Get fetches a signed link (for the filesystem store, through a server of its ServeFile).
	Get func(url string, header http.Header) (*http.Response, error)
	// Sweeper sweeps the store with the retention given.
	Sweeper func(retention time.Duration) *blob.Sweeper
}

// Run runs every case on a fresh store from newHarness.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	cases := []struct {
		name string
		run  func(t *testing.T, h Harness)
	}{
		{"PutThenReadBackWhole", putThenRead},
		{"MissingKeysAreNotFound", missingKeys},
		{"OverwriteReplacesTheWholeObject", overwrite},
		{"ReaderNeverSeesAPartialObject", neverPartial},
		{"FailedPutLeavesTheOldObject", failedPut},
		{"DeletePrefixRemovesOnlyItsKeys", deletePrefix},
		{"SignedLinksServeRanges", linkRanges},
		{"SignedLinksExpire", linkExpiry},
		{"RetentionDeletesOnlyOldObjects", retention},
		{"LargeObjectsKeepMemoryFlat", largeObject},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newHarness(t)) })
	}
}

func put(t *testing.T, s blob.Store, key string, b []byte) {
	t.Helper()
	n, err := s.Put(context.Background(), key, bytes.NewReader(b))
	if err != nil || n != int64(len(b)) {
		t.Fatalf("put %s: %d %v", key, n, err)
	}
}

func read(t *testing.T, s blob.Store, key string) []byte {
	t.Helper()
	o, err := s.Open(context.Background(), key)
	if err != nil {
		t.Fatalf("open %s: %v", key, err)
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return b
}

func putThenRead(t *testing.T, h Harness) {
	body := bytes.Repeat([]byte("0123456789"), 1000)
	put(t, h.Store, "videos/v1/result.mp4", body)
	info, err := h.Store.Stat(context.Background(), "videos/v1/result.mp4")
	if err != nil || info.Size != int64(len(body)) || info.ContentType != "video/mp4" || time.Since(info.ModTime) > time.Minute {
		t.Fatalf("stat: %+v %v", info, err)
	}
	if got := read(t, h.Store, "videos/v1/result.mp4"); !bytes.Equal(got, body) {
		t.Fatalf("read back %d bytes, want %d", len(got), len(body))
	}
	o, err := h.Store.Open(context.Background(), "videos/v1/result.mp4")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if _, err := o.Seek(9990, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if tail, _ := io.ReadAll(o); string(tail) != "0123456789" || o.Info().Size != int64(len(body)) {
		t.Errorf("after a seek: %q, info %+v", tail, o.Info())
	}
}

func missingKeys(t *testing.T, h Harness) {
	ctx := context.Background()
	if _, err := h.Store.Open(ctx, "videos/none/result.mp4"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("open: %v", err)
	}
	if _, err := h.Store.Stat(ctx, "videos/none/result.mp4"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("stat: %v", err)
	}
	if err := h.Store.Delete(ctx, "videos/none/result.mp4"); err != nil {
		t.Errorf("delete: %v", err)
	}
	if _, err := h.Store.Put(ctx, "../escape", strings.NewReader("x")); !errors.Is(err, blob.ErrBadKey) {
		t.Errorf("a bad key: %v", err)
	}
}

func overwrite(t *testing.T, h Harness) {
	put(t, h.Store, "speech/s1/audio.mp3", bytes.Repeat([]byte("a"), 5000))
	put(t, h.Store, "speech/s1/audio.mp3", []byte("short"))
	if got := read(t, h.Store, "speech/s1/audio.mp3"); string(got) != "short" {
		t.Errorf("after an overwrite: %d bytes", len(got))
	}
}

// neverPartial: while a Put is half way, the key holds nothing (or its old object), never
// the half written.
func neverPartial(t *testing.T, h Harness) {
	ctx := context.Background()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := h.Store.Put(ctx, "videos/v2/result.mp4", pr)
		done <- err
	}()
	half := bytes.Repeat([]byte("h"), 1<<20)
	if _, err := pw.Write(half); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Store.Stat(ctx, "videos/v2/result.mp4"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("during the write the key shows %v, want not found", err)
	}
	_, _ = pw.Write(half)
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if info, err := h.Store.Stat(ctx, "videos/v2/result.mp4"); err != nil || info.Size != 2<<20 {
		t.Errorf("after the write: %+v %v", info, err)
	}
}

// failingReader gives n bytes, then an error.
type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, errors.New("the source broke")
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	r.n -= k
	return k, nil
}

func failedPut(t *testing.T, h Harness) {
	put(t, h.Store, "videos/v3/result.mp4", []byte("the old object"))
	if _, err := h.Store.Put(context.Background(), "videos/v3/result.mp4", &failingReader{n: 3 << 20}); err == nil {
		t.Fatal("a put from a broken source succeeded")
	}
	if got := read(t, h.Store, "videos/v3/result.mp4"); string(got) != "the old object" {
		t.Errorf("after a failed put: %d bytes", len(got))
	}
	if _, err := h.Store.Put(context.Background(), "videos/v4/result.mp4", &failingReader{n: 100}); err == nil {
		t.Fatal("a put from a broken source succeeded")
	}
	if _, err := h.Store.Stat(context.Background(), "videos/v4/result.mp4"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("a failed put of a new key left %v", err)
	}
}

func deletePrefix(t *testing.T, h Harness) {
	for _, k := range []string{"videos/a/result.mp4", "videos/a/last_frame.jpg", "videos/ab/result.mp4"} {
		put(t, h.Store, k, []byte(k))
	}
	if err := h.Store.DeletePrefix(context.Background(), "videos/a"); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]bool{"videos/a/result.mp4": false, "videos/a/last_frame.jpg": false, "videos/ab/result.mp4": true} {
		_, err := h.Store.Stat(context.Background(), k)
		if got := err == nil; got != want {
			t.Errorf("%s exists %v, want %v (%v)", k, got, want, err)
		}
	}
}

func linkRanges(t *testing.T, h Harness) {
	body := []byte("0123456789abcdefghij")
	put(t, h.Store, "videos/v5/result.mp4", body)
	link, exp := h.Store.SignedURL("videos/v5/result.mp4", time.Hour)
	if link == "" || exp.Before(time.Now().Add(59*time.Minute)) {
		t.Fatalf("link %q expires %v", link, exp)
	}
	res, err := h.Get(link, http.Header{"Range": {"bytes=10-14"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusPartialContent || string(b) != "abcde" {
		t.Errorf("range: %d %q", res.StatusCode, b)
	}
	res, err = h.Get(link, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !bytes.Equal(b, body) {
		t.Errorf("whole: %d %q", res.StatusCode, b)
	}
	if res.Header.Get("Content-Type") != "video/mp4" {
		t.Errorf("content type %q", res.Header.Get("Content-Type"))
	}
}

func linkExpiry(t *testing.T, h Harness) {
	put(t, h.Store, "videos/v6/result.mp4", []byte("soon gone"))
	link, _ := h.Store.SignedURL("videos/v6/result.mp4", time.Second)
	time.Sleep(2100 * time.Millisecond)
	res, err := h.Get(link, nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode/100 == 2 {
		t.Errorf("an expired link answered %d", res.StatusCode)
	}
}

func retention(t *testing.T, h Harness) {
	put(t, h.Store, "videos/old/result.mp4", []byte("old"))
	sw := h.Sweeper(time.Hour)
	if n, err := sw.SweepOnce(context.Background(), time.Now()); err != nil || n != 0 {
		t.Fatalf("a sweep within the retention deleted %d: %v", n, err)
	}
	if n, err := sw.SweepOnce(context.Background(), time.Now().Add(2*time.Hour)); err != nil || n != 1 {
		t.Fatalf("a sweep past the retention deleted %d: %v", n, err)
	}
	if _, err := h.Store.Stat(context.Background(), "videos/old/result.mp4"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("after the sweep: %v", err)
	}
}

// pattern is a reader of n deterministic bytes, made as they are read.
type pattern struct{ left, off int64 }

func (p *pattern) Read(b []byte) (int, error) {
	if p.left == 0 {
		return 0, io.EOF
	}
	k := min(int64(len(b)), p.left)
	for i := range b[:k] {
		b[i] = byte((p.off + int64(i)) % 251)
	}
	p.left -= k
	p.off += k
	return int(k), nil
}

// LargeObjectSize is the object largeObject streams; MaxHeapGrowth what its heap may grow.
const (
	LargeObjectSize = 256 << 20
	MaxHeapGrowth   = 64 << 20
)

// largeObject: a 256 MiB object streams in and out with the heap growing far less than
// its size.
func largeObject(t *testing.T, h Harness) {
	if testing.Short() {
		t.Skip("256 MiB")
	}
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak uint64
	var mu sync.Mutex
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				runtime.ReadMemStats(&m)
				mu.Lock()
				peak = max(peak, m.HeapInuse)
				mu.Unlock()
			}
		}
	}()
	n, err := h.Store.Put(context.Background(), "videos/big/result.mp4", &pattern{left: LargeObjectSize})
	if err != nil || n != LargeObjectSize {
		t.Fatalf("put: %d %v", n, err)
	}
	o, err := h.Store.Open(context.Background(), "videos/big/result.mp4")
	if err != nil {
		t.Fatal(err)
	}
	check := &pattern{left: LargeObjectSize}
	got, want := make([]byte, 1<<20), make([]byte, 1<<20)
	var total int64
	for {
		k, err := io.ReadFull(o, got)
		if k > 0 {
			_, _ = io.ReadFull(check, want[:k])
			if !bytes.Equal(got[:k], want[:k]) {
				t.Fatalf("bytes differ at %d", total)
			}
			total += int64(k)
		}
		if err != nil {
			break
		}
	}
	o.Close()
	close(stop)
	<-sampled
	if total != LargeObjectSize {
		t.Fatalf("read back %d bytes", total)
	}
	grew := int64(peak) - int64(base.HeapInuse)
	t.Logf("heap grew %d MiB for a %d MiB object", grew>>20, LargeObjectSize>>20)
	if grew > MaxHeapGrowth {
		t.Errorf("heap grew %d MiB streaming a %d MiB object, want under %d MiB", grew>>20, LargeObjectSize>>20, MaxHeapGrowth>>20)
	}
	_ = h.Store.Delete(context.Background(), "videos/big/result.mp4")
}

// String names a harness in messages.
func (h Harness) String() string { return fmt.Sprintf("%T", h.Store) }
