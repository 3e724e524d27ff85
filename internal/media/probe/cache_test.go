package probe

import (
	"bytes"
	"context"
	"io"
	"testing"
)

// countingFetcher serves a byte slice and records each fetch.
type countingFetcher struct {
	data  []byte
	calls [][2]int64
}

func (f *countingFetcher) fetch(_ context.Context, off, n int64) ([]byte, error) {
	f.calls = append(f.calls, [2]int64{off, n})
	return append([]byte(nil), f.data[off:off+n]...), nil
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

func TestCachedReader_MissSpanningBlocksIsOneFetch(t *testing.T) {
	t.Parallel()
	data := pattern(10 * blockSize)
	f := &countingFetcher{data: data}
	r := newCachedReader(context.Background(), f, int64(len(data)))
	r.setReadahead(blockSize)
	buf := make([]byte, 3*blockSize)
	off := int64(blockSize/2 + 3)
	if n, err := r.ReadAt(buf, off); err != nil || n != len(buf) {
		t.Fatalf("ReadAt = %d, %v", n, err)
	}
	if !bytes.Equal(buf, data[off:off+int64(len(buf))]) {
		t.Fatal("wrong bytes")
	}
	if len(f.calls) != 1 || f.calls[0] != [2]int64{0, 4 * blockSize} {
		t.Fatalf("fetches %v, want one aligned fetch of 4 blocks", f.calls)
	}
	// Everything just read is cached.
	if _, err := r.ReadAt(buf[:100], off+blockSize); err != nil || len(f.calls) != 1 {
		t.Fatalf("cached read fetched again: %v %v", f.calls, err)
	}
}

func TestCachedReader_ReadaheadAndEOF(t *testing.T) {
	t.Parallel()
	data := pattern(5*blockSize + 100)
	f := &countingFetcher{data: data}
	r := newCachedReader(context.Background(), f, int64(len(data)))
	buf := make([]byte, 200)
	n, err := r.ReadAt(buf, int64(len(data))-50)
	if n != 50 || err != io.EOF {
		t.Fatalf("read at the end = %d, %v; want 50, EOF", n, err)
	}
	if !bytes.Equal(buf[:50], data[len(data)-50:]) {
		t.Fatal("wrong tail bytes")
	}
	// 64 KiB readahead is clipped at EOF.
	if got := f.calls[0]; got[0]+got[1] != int64(len(data)) {
		t.Fatalf("fetch %v runs past EOF %d", got, len(data))
	}
	if n, err := r.ReadAt(buf, int64(len(data))); n != 0 || err != io.EOF {
		t.Fatalf("read past the end = %d, %v", n, err)
	}
}

func TestCachedReader_EvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	data := pattern((cacheBlocks + 2) * blockSize)
	f := &countingFetcher{data: data}
	r := newCachedReader(context.Background(), f, int64(len(data)))
	r.setReadahead(blockSize)
	one := make([]byte, 1)
	for b := int64(0); b < cacheBlocks+2; b++ {
		if _, err := r.ReadAt(one, b*blockSize); err != nil {
			t.Fatal(err)
		}
	}
	fetches := len(f.calls)
	if _, err := r.ReadAt(one, (cacheBlocks+1)*blockSize); err != nil || len(f.calls) != fetches {
		t.Fatal("most recent block was evicted")
	}
	if _, err := r.ReadAt(one, 0); err != nil || len(f.calls) != fetches+1 {
		t.Fatal("oldest block was not evicted")
	}
	reqs, n := r.stats()
	if reqs != len(f.calls) || n != int64(len(f.calls))*blockSize {
		t.Fatalf("stats %d/%d for %d fetches", reqs, n, len(f.calls))
	}
}

func TestParseContentRange(t *testing.T) {
	t.Parallel()
	good := map[string][3]int64{
		"bytes 0-65535/1727328":                  {0, 65535, 1727328},
		"bytes 100-100/101":                      {100, 100, 101},
		"bytes 3221225500-3221228000/3221228001": {3221225500, 3221228000, 3221228001},
	}
	for in, want := range good {
		s, e, tot, err := parseContentRange(in)
		if err != nil || [3]int64{s, e, tot} != want {
			t.Errorf("%q = %d %d %d %v", in, s, e, tot, err)
		}
	}
	for _, in := range []string{"", "bytes */100", "bytes 0-10/*", "bytes 10-5/100", "bytes 0-100/100", "items 0-1/2", "bytes -1-5/10", "bytes 0-1/2/3"} {
		if _, _, _, err := parseContentRange(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}
