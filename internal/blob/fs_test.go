package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

var testKey = bytes.Repeat([]byte{0x42}, 32)

func newTestFS(t *testing.T) *FS {
	t.Helper()
	s, err := NewFS(t.TempDir(), testKey, "http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func put(t *testing.T, s *FS, key, content string) {
	t.Helper()
	if _, err := s.Put(context.Background(), key, strings.NewReader(content)); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

func readAll(t *testing.T, s *FS, key string) string {
	t.Helper()
	o, err := s.Open(context.Background(), key)
	if err != nil {
		t.Fatalf("Open(%q): %v", key, err)
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tempFiles lists the temporary files anywhere under root.
func tempFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), tempPrefix) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// patternReader yields n deterministic bytes without allocating, hashing them as it goes and
// sampling the heap every sampleEvery bytes.
type patternReader struct {
	n, off      int64
	hash        interface{ Write([]byte) (int, error) }
	sampleEvery int64
	nextSample  int64
	peakHeap    uint64
	ms          runtime.MemStats
}

func (r *patternReader) Read(p []byte) (int, error) {
	if r.off >= r.n {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n-r.off {
		p = p[:r.n-r.off]
	}
	for i := range p {
		x := r.off + int64(i)
		p[i] = byte(x*31 + x>>11)
	}
	r.off += int64(len(p))
	if r.hash != nil {
		_, _ = r.hash.Write(p)
	}
	if r.sampleEvery > 0 && r.off >= r.nextSample {
		r.nextSample += r.sampleEvery
		runtime.ReadMemStats(&r.ms)
		r.peakHeap = max(r.peakHeap, r.ms.HeapAlloc)
	}
	return len(p), nil
}

func TestPut_50MiBStreamsRoundTripWithLowMemory(t *testing.T) {
	// Not parallel: MemStats counts the whole process, and the package's parallel tests
	// allocated 30 MB beside this Put once (CI, 2026-11-26). Serial tests run alone.
	const size = 50 << 20
	const budget = 8 << 20
	s := newTestFS(t)
	ctx := context.Background()
	h := sha256.New()
	src := &patternReader{n: size, hash: h, sampleEvery: 4 << 20}

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n, err := s.Put(ctx, "videos/video_big/result.mp4", src)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if n != size {
		t.Fatalf("Put wrote %d bytes, want %d", n, size)
	}
	t.Logf("Put of %d bytes: %d bytes allocated in total, peak heap growth %d bytes",
		size, after.TotalAlloc-before.TotalAlloc, int64(src.peakHeap)-int64(before.HeapAlloc))
	if d := after.TotalAlloc - before.TotalAlloc; d > budget {
		t.Errorf("Put allocated %d bytes in total for a %d-byte object; want < %d", d, size, budget)
	}
	if src.peakHeap > before.HeapAlloc && src.peakHeap-before.HeapAlloc > budget {
		t.Errorf("heap grew by %d bytes during Put; want < %d", src.peakHeap-before.HeapAlloc, budget)
	}

	o, err := s.Open(ctx, "videos/video_big/result.mp4")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if got := o.Info(); got.Size != size || got.ContentType != "video/mp4" || got.Key != "videos/video_big/result.mp4" {
		t.Errorf("Info = %+v", got)
	}
	h2 := sha256.New()
	if _, err := io.Copy(h2, o); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h.Sum(nil), h2.Sum(nil)) {
		t.Error("content read back differs from content written")
	}
	if tf := tempFiles(t, s.Root()); len(tf) != 0 {
		t.Errorf("temporary files left: %v", tf)
	}
}

// failingReader yields some data, then fails; or, with cancel set, cancels ctx and keeps
// yielding data for a while (a writer that honors ctx stops), then fails with errIgnoredCancel.
type failingReader struct {
	data    io.Reader
	err     error
	cancel  context.CancelFunc
	afterCx int64
}

var errIgnoredCancel = errors.New("test reader: writer kept reading long after ctx was canceled")

func (r *failingReader) Read(p []byte) (int, error) {
	n, err := r.data.Read(p)
	if !errors.Is(err, io.EOF) {
		return n, err
	}
	if r.cancel == nil {
		return n, r.err
	}
	r.cancel()
	if r.afterCx >= 16<<20 {
		return 0, errIgnoredCancel
	}
	n = min(len(p), 32<<10)
	clear(p[:n])
	r.afterCx += int64(n)
	return n, nil
}

func TestPut_FailedWriteLeavesNoObjectAndNoTempFile(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("upstream connection reset")
	tests := []struct {
		name     string
		existing string // content already stored under the key, if any
		reader   func(cancel context.CancelFunc) io.Reader
		wantErr  error
	}{
		{
			name: "reader error midway leaves no object",
			reader: func(context.CancelFunc) io.Reader {
				return &failingReader{data: &patternReader{n: 3 << 20}, err: errBoom}
			},
			wantErr: errBoom,
		},
		{
			name: "context canceled midway leaves no object",
			reader: func(cancel context.CancelFunc) io.Reader {
				return &failingReader{data: &patternReader{n: 3<<20 + 17}, cancel: cancel}
			},
			wantErr: context.Canceled,
		},
		{
			name:     "reader error midway keeps the previous object intact",
			existing: "previous complete result",
			reader: func(context.CancelFunc) io.Reader {
				return &failingReader{data: &patternReader{n: 2 << 20}, err: errBoom}
			},
			wantErr: errBoom,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestFS(t)
			const key = "videos/video_x/result.mp4"
			if tc.existing != "" {
				put(t, s, key, tc.existing)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n, err := s.Put(ctx, key, tc.reader(cancel))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Put error = %v, want %v", err, tc.wantErr)
			}
			if n != 0 {
				t.Errorf("Put returned %d bytes on failure", n)
			}
			if tc.existing == "" {
				if _, err := s.Stat(context.Background(), key); !errors.Is(err, ErrNotFound) {
					t.Errorf("Stat after failed Put = %v, want ErrNotFound", err)
				}
			} else if got := readAll(t, s, key); got != tc.existing {
				t.Errorf("object after failed overwrite = %q, want %q", got, tc.existing)
			}
			if tf := tempFiles(t, s.Root()); len(tf) != 0 {
				t.Errorf("temporary files left: %v", tf)
			}
		})
	}
}

// gatedReader yields first, then blocks until release is closed, then yields rest.
type gatedReader struct {
	first, rest io.Reader
	reached     chan struct{}
	release     chan struct{}
	gated       bool
}

func (r *gatedReader) Read(p []byte) (int, error) {
	n, err := r.first.Read(p)
	if err == nil || n > 0 {
		return n, nil
	}
	if !r.gated {
		r.gated = true
		close(r.reached)
		<-r.release
	}
	return r.rest.Read(p)
}

func TestPut_WriteInProgressIsInvisibleToReaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		existing string
	}{
		{name: "new key is not found until complete"},
		{name: "existing key shows the old content until complete", existing: "old version"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestFS(t)
			ctx := context.Background()
			const key = "speech/sp_1/audio.wav"
			if tc.existing != "" {
				put(t, s, key, tc.existing)
			}
			r := &gatedReader{
				first: strings.NewReader(strings.Repeat("a", 100_000)), rest: strings.NewReader("tail"),
				reached: make(chan struct{}), release: make(chan struct{}),
			}
			done := make(chan error, 1)
			go func() { _, err := s.Put(ctx, key, r); done <- err }()
			<-r.reached
			if tc.existing == "" {
				if _, err := s.Open(ctx, key); !errors.Is(err, ErrNotFound) {
					t.Errorf("Open during Put = %v, want ErrNotFound", err)
				}
			} else if got := readAll(t, s, key); got != tc.existing {
				t.Errorf("content during Put = %.20q, want %q", got, tc.existing)
			}
			close(r.release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, s, key); got != strings.Repeat("a", 100_000)+"tail" {
				t.Errorf("content after Put has %d bytes", len(got))
			}
		})
	}
}

func TestPutFile(t *testing.T) {
	t.Parallel()
	exdev := func(oldpath, newpath string) error {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: syscall.EXDEV}
	}
	tests := []struct {
		name     string
		rename   func(string, string) error
		wantSame bool // the stored file is the source inode (a rename, not a copy)
	}{
		{name: "same filesystem renames the file", wantSame: true},
		{name: "other filesystem copies then removes the source", rename: exdev, wantSame: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestFS(t)
			if tc.rename != nil {
				s.rename = tc.rename
			}
			ctx := context.Background()
			src := filepath.Join(t.TempDir(), "ffmpeg-out.jpg")
			content := strings.Repeat("jpegdata", 5000)
			if err := os.WriteFile(src, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-30 * 24 * time.Hour)
			if err := os.Chtimes(src, old, old); err != nil {
				t.Fatal(err)
			}
			srcInfo, err := os.Stat(src)
			if err != nil {
				t.Fatal(err)
			}
			const key = "videos/video_a/last_frame.jpg"
			n, err := s.PutFile(ctx, key, src)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(len(content)) {
				t.Errorf("PutFile = %d bytes, want %d", n, len(content))
			}
			if _, err := os.Stat(src); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("source still exists after PutFile (stat err %v)", err)
			}
			if got := readAll(t, s, key); got != content {
				t.Error("stored content differs")
			}
			p, _ := s.LocalPath(key)
			dstInfo, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if same := os.SameFile(srcInfo, dstInfo); same != tc.wantSame {
				t.Errorf("stored file is the source inode = %v, want %v", same, tc.wantSame)
			}
			if time.Since(dstInfo.ModTime()) > time.Hour {
				t.Errorf("stored ModTime %v kept the source's age; retention must start at store time", dstInfo.ModTime())
			}
			if tf := tempFiles(t, s.Root()); len(tf) != 0 {
				t.Errorf("temporary files left: %v", tf)
			}
		})
	}
}

func TestPutFile_RejectsMissingOrNonRegularSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct{ name, path string }{
		{"missing source fails", filepath.Join(dir, "nope.mp4")},
		{"directory source fails", dir},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestFS(t)
			if _, err := s.PutFile(context.Background(), "videos/v/result.mp4", tc.path); err == nil {
				t.Fatal("PutFile succeeded")
			}
			if _, err := s.Stat(context.Background(), "videos/v/result.mp4"); !errors.Is(err, ErrNotFound) {
				t.Errorf("Stat = %v, want ErrNotFound", err)
			}
		})
	}
}

func TestKeys_BadKeysAreRejectedEverywhere(t *testing.T) {
	t.Parallel()
	bad := []struct{ name, key string }{
		{"empty", ""},
		{"dot dot segment", "videos/../secret.mp4"},
		{"leading dot dot", "../etc/passwd"},
		{"dot segment", "videos/./a.mp4"},
		{"absolute", "/etc/passwd"},
		{"backslash", `videos\a.mp4`},
		{"empty segment", "videos//a.mp4"},
		{"trailing slash", "videos/"},
		{"space", "videos/a b.mp4"},
		{"percent", "videos/a%2e.mp4"},
		{"nul byte", "videos/a\x00.mp4"},
		{"newline", "videos/a\n.mp4"},
		{"non-ascii", "videos/vidéo.mp4"},
		{"temp file name", "videos/.tmp-123"},
		{"hidden segment", ".keys/signing"},
		{"too long", strings.Repeat("a/", 256) + "b.mp4"},
		{"segment too long", strings.Repeat("a", 256) + ".mp4"},
	}
	for _, tc := range bad {
		t.Run(tc.name+" is rejected", func(t *testing.T) {
			s := newTestFS(t)
			ctx := context.Background()
			if err := ValidateKey(tc.key); !errors.Is(err, ErrBadKey) {
				t.Errorf("ValidateKey = %v, want ErrBadKey", err)
			}
			if _, err := s.Put(ctx, tc.key, strings.NewReader("x")); !errors.Is(err, ErrBadKey) {
				t.Errorf("Put = %v, want ErrBadKey", err)
			}
			if _, err := s.PutFile(ctx, tc.key, "/nonexistent"); !errors.Is(err, ErrBadKey) {
				t.Errorf("PutFile = %v, want ErrBadKey", err)
			}
			if _, err := s.Open(ctx, tc.key); !errors.Is(err, ErrBadKey) {
				t.Errorf("Open = %v, want ErrBadKey", err)
			}
			if _, err := s.Stat(ctx, tc.key); !errors.Is(err, ErrBadKey) {
				t.Errorf("Stat = %v, want ErrBadKey", err)
			}
			if err := s.Delete(ctx, tc.key); !errors.Is(err, ErrBadKey) {
				t.Errorf("Delete = %v, want ErrBadKey", err)
			}
			if _, ok := s.LocalPath(tc.key); ok {
				t.Error("LocalPath ok for a bad key")
			}
		})
	}
	good := []string{
		"videos/video_abc/result.mp4",
		"a",
		"speech/sp-1/audio.v2.WAV",
		"assets/A_b-c.9/x..y.png",
		strings.Repeat("a", 250) + "/" + strings.Repeat("b", 250) + "/c.mp4",
	}
	for _, key := range good {
		t.Run("valid key round-trips "+key[:min(len(key), 30)], func(t *testing.T) {
			s := newTestFS(t)
			put(t, s, key, "content")
			if got := readAll(t, s, key); got != "content" {
				t.Errorf("read %q", got)
			}
			p, ok := s.LocalPath(key)
			if !ok || !strings.HasPrefix(p, s.Root()+string(filepath.Separator)) {
				t.Errorf("LocalPath = %q, %v", p, ok)
			}
		})
	}
}

func TestOpenStat_UnknownKeysAreNotFound(t *testing.T) {
	t.Parallel()
	s := newTestFS(t)
	ctx := context.Background()
	put(t, s, "videos/v1/result.mp4", "x")
	for _, key := range []string{
		"videos/v2/result.mp4",        // never stored
		"videos/v1/result.mp4/nested", // parent is a file
		"videos/v1",                   // a directory, not an object
	} {
		t.Run(key+" is not found", func(t *testing.T) {
			if _, err := s.Open(ctx, key); !errors.Is(err, ErrNotFound) {
				t.Errorf("Open = %v, want ErrNotFound", err)
			}
			if _, err := s.Stat(ctx, key); !errors.Is(err, ErrNotFound) {
				t.Errorf("Stat = %v, want ErrNotFound", err)
			}
		})
	}
}

func TestDelete_RemovesAndIsIdempotent(t *testing.T) {
	t.Parallel()
	s := newTestFS(t)
	ctx := context.Background()
	put(t, s, "videos/v1/result.mp4", "x")
	for i := range 2 {
		if err := s.Delete(ctx, "videos/v1/result.mp4"); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	if _, err := s.Stat(ctx, "videos/v1/result.mp4"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stat after Delete = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "videos/v1"); err != nil {
		t.Errorf("Delete of a directory key = %v, want nil", err)
	}
}

func TestStat_DescribesObject(t *testing.T) {
	t.Parallel()
	s := newTestFS(t)
	before := time.Now().Add(-time.Second)
	put(t, s, "speech/sp_1/audio.mp3", "12345")
	info, err := s.Stat(context.Background(), "speech/sp_1/audio.mp3")
	if err != nil {
		t.Fatal(err)
	}
	if info.Key != "speech/sp_1/audio.mp3" || info.Size != 5 || info.ContentType != "audio/mpeg" || info.ModTime.Before(before) {
		t.Errorf("Stat = %+v", info)
	}
}

func TestContentType_ByExtension(t *testing.T) {
	t.Parallel()
	tests := []struct{ key, want string }{
		{"a/b.mp4", "video/mp4"},
		{"a/b.MP4", "video/mp4"},
		{"a/b.mov", "video/quicktime"},
		{"a/b.jpg", "image/jpeg"},
		{"a/b.png", "image/png"},
		{"a/b.webp", "image/webp"},
		{"a/b.mp3", "audio/mpeg"},
		{"a/b.wav", "audio/wav"},
		{"a/b.m4a", "audio/mp4"},
		{"a/b.bin", "application/octet-stream"},
		{"a/b", "application/octet-stream"},
		{"a.mp4/b", "application/octet-stream"},
	}
	for _, tc := range tests {
		if got := ContentType(tc.key); got != tc.want {
			t.Errorf("ContentType(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

func TestNewFS_RejectsBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		root string
		key  []byte
		base string
	}{
		{"empty root fails", "", testKey, ""},
		{"short signing key fails", t.TempDir(), testKey[:16], ""},
		{"relative public base fails", t.TempDir(), testKey, "media.example.com"},
		{"ftp public base fails", t.TempDir(), testKey, "ftp://media.example.com"},
		{"public base with query fails", t.TempDir(), testKey, "https://media.example.com/?a=b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewFS(tc.root, tc.key, tc.base); err == nil {
				t.Fatal("NewFS succeeded")
			}
		})
	}
}

func TestDeletePrefix_RemovesOnlyThatDirectory(t *testing.T) {
	t.Parallel()
	s := newTestFS(t)
	ctx := context.Background()
	put(t, s, "assets/a1/x.png", "x")
	put(t, s, "assets/a1/y.png", "y")
	put(t, s, "assets/a10/z.png", "z")
	if err := s.DeletePrefix(ctx, "assets/a1"); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"assets/a1/x.png", "assets/a1/y.png"} {
		if _, err := s.Stat(ctx, k); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", k, err)
		}
	}
	if got := readAll(t, s, "assets/a10/z.png"); got != "z" {
		t.Errorf("a sibling with the same name prefix was touched: %q", got)
	}
	if err := s.DeletePrefix(ctx, "assets/none"); err != nil {
		t.Errorf("missing prefix: %v", err)
	}
	if err := s.DeletePrefix(ctx, "../outside"); err == nil {
		t.Error("an invalid prefix was accepted")
	}
}
