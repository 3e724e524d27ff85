package probe

import (
	"container/list"
	"context"
	"fmt"
	"io"
	"sync"
)

// fetcher reads exactly n bytes at off (the caller never asks past EOF).
// One call is one request for HTTP sources.
type fetcher interface {
	fetch(ctx context.Context, off int64, n int64) ([]byte, error)
}

const (
	blockSize = 16 << 10
	// cacheBlocks bounds memory per probe at 1 MiB.
	cacheBlocks = 64
)

// cachedReader is an io.ReaderAt over a fetcher with a small LRU block
// cache. A miss fetches the whole missing span plus readahead in one call,
// so walking box headers costs one request per distant region, not per read.
type cachedReader struct {
	ctx       context.Context
	f         fetcher
	size      int64
	readahead int64 // minimum bytes per fetch; changed as the walk learns the layout

	mu     sync.Mutex
	blocks map[int64]*list.Element
	lru    *list.List // front = most recent; values are *block

	requests  int
	bytesRead int64
}

type block struct {
	idx  int64
	data []byte
}

func newCachedReader(ctx context.Context, f fetcher, size int64) *cachedReader {
	return &cachedReader{ctx: ctx, f: f, size: size, readahead: 64 << 10, blocks: map[int64]*list.Element{}, lru: list.New()}
}

// seed stores bytes already fetched at offset 0 (the first request).
func (r *cachedReader) seed(data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.storeLocked(0, data)
}

func (r *cachedReader) setReadahead(n int64) {
	r.mu.Lock()
	r.readahead = n
	r.mu.Unlock()
}

func (r *cachedReader) stats() (int, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests, r.bytesRead
}

func (r *cachedReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("probe: negative offset")
	}
	if off >= r.size {
		return 0, io.EOF
	}
	want := int64(len(p))
	if off+want > r.size {
		want = r.size - off
	}
	if want == 0 {
		return 0, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	first, last := off/blockSize, (off+want-1)/blockSize
	var fetched map[int64][]byte
	lo, hi := int64(-1), int64(-1)
	for b := first; b <= last; b++ {
		if _, ok := r.blocks[b]; !ok {
			if lo < 0 {
				lo = b
			}
			hi = b
		}
	}
	if lo >= 0 {
		start := lo * blockSize
		end := (hi + 1) * blockSize
		if end-start < r.readahead {
			end = start + (r.readahead+blockSize-1)/blockSize*blockSize
		}
		end = min(end, r.size)
		data, err := r.f.fetch(r.ctx, start, end-start)
		r.requests++
		r.bytesRead += int64(len(data))
		if err != nil {
			return 0, err
		}
		// Keep this call's blocks locally too: a span larger than the cache
		// would otherwise evict what we are about to copy.
		fetched = r.storeLocked(start, data)
	}
	n := 0
	for b := first; b <= last; b++ {
		data, ok := fetched[b]
		if !ok {
			el := r.blocks[b]
			r.lru.MoveToFront(el)
			data = el.Value.(*block).data
		}
		from := max(off+int64(n)-b*blockSize, 0)
		if from >= int64(len(data)) {
			return n, fmt.Errorf("%w: short block at %d", ErrTruncated, b*blockSize)
		}
		n += copy(p[n:want], data[from:])
	}
	if int64(n) < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

// storeLocked splits block-aligned data into cache blocks.
func (r *cachedReader) storeLocked(start int64, data []byte) map[int64][]byte {
	out := make(map[int64][]byte, len(data)/blockSize+1)
	for i := int64(0); i < int64(len(data)); i += blockSize {
		b := (start + i) / blockSize
		chunk := data[i:min(i+blockSize, int64(len(data)))]
		out[b] = chunk
		// A short chunk is only legal as the file's last block.
		if int64(len(chunk)) < blockSize && start+i+int64(len(chunk)) < r.size {
			continue
		}
		if el, ok := r.blocks[b]; ok {
			el.Value.(*block).data = chunk
			r.lru.MoveToFront(el)
			continue
		}
		r.blocks[b] = r.lru.PushFront(&block{idx: b, data: chunk})
		for r.lru.Len() > cacheBlocks {
			old := r.lru.Back()
			r.lru.Remove(old)
			delete(r.blocks, old.Value.(*block).idx)
		}
	}
	return out
}

// readerAtFetcher adapts a local io.ReaderAt (the service's stored copies).
type readerAtFetcher struct{ r io.ReaderAt }

func (f readerAtFetcher) fetch(ctx context.Context, off, n int64) ([]byte, error) {
	buf := make([]byte, n)
	m, err := f.r.ReadAt(buf, off)
	if int64(m) == n {
		return buf, nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return buf[:m], fmt.Errorf("%w: read at %d: %w", ErrTruncated, off, err)
}
