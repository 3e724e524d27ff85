// Command blobs measures the result stores' byte throughput: how fast a worker writes a
// result into the store (the disk, or an S3 bucket on a MinIO of its own) and how fast a
// client reads it back through a signed link — the bytes/s that size workers and the store
// in docs/deploy.md.
//
//	go run ./bench/blobs [-mb 256] [-parallel 4] [-minio $(scripts/ensure-minio.sh)]
//
// It prints figures and never fails on a number.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sync"
	"time"

	"mediagen/bench/internal/miniosrv"
	"mediagen/internal/blob"
)

func main() {
	mb := flag.Int("mb", 256, "size of each object in MiB")
	parallel := flag.Int("parallel", 4, "objects written and read at once in the parallel rows")
	minioBin := flag.String("minio", os.Getenv("MEDIAGEN_TEST_MINIO"), "MinIO binary (scripts/ensure-minio.sh prints it); without it the S3 rows are skipped")
	flag.Parse()
	if err := run(context.Background(), int64(*mb)<<20, *parallel, *minioBin); err != nil {
		fmt.Fprintln(os.Stderr, "bench/blobs:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, size int64, parallel int, minioBin string) error {
	dir, err := os.MkdirTemp("", "mediagen-bench-blobs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	key := make([]byte, 32)
	fs, err := blob.NewFS(dir+"/fs", key, "")
	if err != nil {
		return err
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _ = fs.ServeFile(w, r) }))
	defer srv.Close()
	if fs, err = blob.NewFS(dir+"/fs", key, srv.URL); err != nil {
		return err
	}
	stores := []struct {
		name string
		s    blob.Store
	}{{"filesystem", fs}}
	if minioBin != "" {
		m, err := miniosrv.Start(ctx, minioBin, dir)
		if err != nil {
			return fmt.Errorf("minio: %w", err)
		}
		defer m.P.Stop(5 * time.Second)
		s3, err := blob.NewS3(ctx, blob.S3Config{Endpoint: m.Addr, Bucket: m.Bucket, AccessKey: m.Access, SecretKey: m.Secret})
		if err != nil {
			return err
		}
		stores = append(stores, struct {
			name string
			s    blob.Store
		}{"S3 (MinIO on loopback)", s3})
	}
	fmt.Printf("objects of %d MiB; %d cores; one run\n\n", size>>20, runtime.NumCPU())
	fmt.Printf("%-24s %-10s %12s %12s %14s\n", "store", "objects", "write MB/s", "read MB/s", "heap growth")
	for _, st := range stores {
		for _, n := range []int{1, parallel} {
			w, r, heap, err := measure(ctx, st.s, size, n)
			if err != nil {
				return fmt.Errorf("%s: %w", st.name, err)
			}
			fmt.Printf("%-24s %-10d %12.0f %12.0f %11.1f MiB\n", st.name, n, w, r, heap)
		}
	}
	fmt.Println("\nwrite: Put of a generated stream (a worker storing a result); read: GET of the signed link, body discarded (a client downloading).")
	return nil
}

// measure writes n objects at once, then reads them through their links at once.
func measure(ctx context.Context, s blob.Store, size int64, n int) (writeMBs, readMBs, heapMiB float64, err error) {
	before := heap()
	var peak uint64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapAlloc)
			}
		}
	}()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("videos/bench%d/result.mp4", i)
	}
	start := time.Now()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Put(ctx, keys[i], &pattern{left: size})
		}()
	}
	wg.Wait()
	wrote := time.Since(start)
	close(stop)
	sampler.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, 0, err
	}
	start = time.Now()
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			link, _ := s.SignedURL(keys[i], time.Hour)
			res, err := http.Get(link)
			if err != nil {
				errs[i] = err
				return
			}
			defer res.Body.Close()
			got, err := io.Copy(io.Discard, res.Body)
			if err == nil && (res.StatusCode != 200 || got != size) {
				err = fmt.Errorf("GET %s: %d, %d bytes", keys[i], res.StatusCode, got)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	read := time.Since(start)
	for _, k := range keys {
		_ = s.Delete(ctx, k)
	}
	if err := errors.Join(errs...); err != nil {
		return 0, 0, 0, err
	}
	total := float64(size) * float64(n) / 1e6
	return total / wrote.Seconds(), total / read.Seconds(), float64(int64(peak)-int64(before)) / (1 << 20), nil
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// pattern is a stream of size bytes that costs nothing to make.
type pattern struct{ left, off int64 }

func (p *pattern) Read(b []byte) (int, error) {
	if p.left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(b)), p.left)
	for i := range b[:n] {
		b[i] = byte(p.off + int64(i))
	}
	p.left -= n
	p.off += n
	return int(n), nil
}
