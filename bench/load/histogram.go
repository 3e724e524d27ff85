package load

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// The histogram is log-linear, like HdrHistogram: values below 256 ns are exact; above, every
// power of two is split into 128 equal buckets, so a bucket's width is under 0.8% of its
// values. It takes fixed memory (about 60 KiB) whatever the number of samples, and Record is
// lock-free, so every worker records into the same one.
const (
	subBits   = 8
	subCount  = 1 << subBits // exact buckets 0..255
	halfCount = subCount / 2 // buckets per power of two above that
	expMax    = 63 - subBits // highest exponent of a non-negative int64 value
	nBuckets  = subCount + expMax*halfCount
)

// Histogram records durations and answers quantiles with under 0.8% relative error. The zero
// value is ready to use; it must not be copied after first use.
type Histogram struct {
	counts [nBuckets]atomic.Int64
	n      atomic.Int64
	sum    atomic.Int64
	min    atomic.Int64 // stored as value+1 so that the zero value means "none"
	max    atomic.Int64
}

func bucketOf(v int64) int {
	if v < subCount {
		if v < 0 {
			return 0
		}
		return int(v)
	}
	e := bits.Len64(uint64(v)) - subBits // ≥ 1
	return subCount + (e-1)*halfCount + int(v>>e) - halfCount
}

// bucketUpper is the largest value that falls in bucket i.
func bucketUpper(i int) int64 {
	if i < subCount {
		return int64(i)
	}
	j := i - subCount
	e := j/halfCount + 1
	m := uint64(j%halfCount + halfCount)
	u := (m+1)<<e - 1 // at most 2^63-1 for the highest bucket a value can reach
	if u > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(u)
}

// Record adds one duration (negative values count as zero).
func (h *Histogram) Record(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	h.counts[bucketOf(v)].Add(1)
	h.n.Add(1)
	h.sum.Add(v)
	for {
		cur := h.max.Load()
		if v <= cur || h.max.CompareAndSwap(cur, v) {
			break
		}
	}
	for {
		cur := h.min.Load()
		if (cur != 0 && v+1 >= cur) || h.min.CompareAndSwap(cur, v+1) {
			break
		}
	}
}

// Count is the number of recorded values.
func (h *Histogram) Count() int64 { return h.n.Load() }

// Max is the largest recorded value, exactly.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max.Load()) }

// Min is the smallest recorded value, exactly (0 when empty).
func (h *Histogram) Min() time.Duration {
	if m := h.min.Load(); m > 0 {
		return time.Duration(m - 1)
	}
	return 0
}

// Mean is the exact arithmetic mean.
func (h *Histogram) Mean() time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(h.sum.Load() / n)
}

// Quantile returns the value at quantile q (0 < q ≤ 1): the upper edge of the bucket holding
// the ceil(q·n)-th smallest value, never above the exact maximum. It rounds up, so a reported
// p99 is never better than the truth by more than the bucket width.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(n)))
	if rank < 1 {
		rank = 1
	}
	if rank > n {
		rank = n
	}
	max := h.max.Load()
	var seen int64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return time.Duration(min(bucketUpper(i), max))
		}
	}
	return time.Duration(max)
}

// Summary is a histogram's usual figures.
type Summary struct {
	Count                    int64
	Min, Mean                time.Duration
	P50, P90, P99, P999, Max time.Duration
}

// Summary reads the histogram's figures.
func (h *Histogram) Summary() Summary {
	return Summary{
		Count: h.Count(), Min: h.Min(), Mean: h.Mean(),
		P50: h.Quantile(0.50), P90: h.Quantile(0.90), P99: h.Quantile(0.99), P999: h.Quantile(0.999),
		Max: h.Max(),
	}
}
