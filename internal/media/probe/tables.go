package probe

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
)

// The sample tables are summed by hand rather than unmarshalled with
// go-mp4: only totals are needed, and a per-entry reflective decode of a
// long stts or trun would cost far more than reading the numbers.

// sampleTotals accumulates sample counts and durations of one track.
type sampleTotals struct {
	samples  uint64
	duration uint64
	// deltas counts samples per duration value (bounded), to report the
	// nominal frame rate rather than an average skewed by a long last frame.
	deltas map[uint32]uint64
}

const maxDistinctDeltas = 64

func (t *sampleTotals) add(count uint64, delta uint32) error {
	hi, prod := bits.Mul64(count, uint64(delta))
	sum, carry := bits.Add64(t.duration, prod, 0)
	if hi != 0 || carry != 0 {
		return fmt.Errorf("%w: sample durations overflow", ErrBadDuration)
	}
	t.samples += count
	t.duration = sum
	if t.deltas == nil {
		t.deltas = map[uint32]uint64{}
	}
	if _, ok := t.deltas[delta]; ok || len(t.deltas) < maxDistinctDeltas {
		t.deltas[delta] += count
	}
	return nil
}

// dominantDelta is the sample duration shared by most samples.
func (t *sampleTotals) dominantDelta() uint32 {
	var best uint32
	var bestN uint64
	for d, n := range t.deltas {
		if n > bestN || (n == bestN && d < best) {
			best, bestN = d, n
		}
	}
	return best
}

// payloadReader returns a buffered reader over a box payload after checking
// that the payload holds at least need bytes.
func payloadReader(r io.ReaderAt, off, length, need int64) (*bufio.Reader, error) {
	if need > length {
		return nil, fmt.Errorf("%w: table needs %d bytes, box has %d", ErrTruncated, need, length)
	}
	return bufio.NewReaderSize(io.NewSectionReader(r, off, length), 32<<10), nil
}

// readStts sums an stts payload (ISO/IEC 14496-12 8.6.1.2).
func readStts(r io.ReaderAt, off, length int64, t *sampleTotals) error {
	var head [8]byte
	if length < 8 {
		return fmt.Errorf("%w: short stts", ErrTruncated)
	}
	if _, err := r.ReadAt(head[:], off); err != nil {
		return fmt.Errorf("%w: stts: %w", ErrTruncated, err)
	}
	count := int64(binary.BigEndian.Uint32(head[4:8]))
	br, err := payloadReader(r, off+8, length-8, count*8)
	if err != nil {
		return err
	}
	var e [8]byte
	for range count {
		if _, err := io.ReadFull(br, e[:]); err != nil {
			return fmt.Errorf("%w: stts entries: %w", ErrTruncated, err)
		}
		if err := t.add(uint64(binary.BigEndian.Uint32(e[:4])), binary.BigEndian.Uint32(e[4:])); err != nil {
			return err
		}
	}
	return nil
}

// readTrun sums a trun payload (ISO/IEC 14496-12 8.8.8); samples without
// their own duration take defaultDur (from tfhd, else trex).
func readTrun(r io.ReaderAt, off, length int64, defaultDur uint32, t *sampleTotals) error {
	var head [8]byte
	if length < 8 {
		return fmt.Errorf("%w: short trun", ErrTruncated)
	}
	if _, err := r.ReadAt(head[:], off); err != nil {
		return fmt.Errorf("%w: trun: %w", ErrTruncated, err)
	}
	flags := binary.BigEndian.Uint32(head[:4]) & 0xffffff
	count := int64(binary.BigEndian.Uint32(head[4:8]))
	pos := int64(8)
	if flags&0x1 != 0 { // data_offset
		pos += 4
	}
	if flags&0x4 != 0 { // first_sample_flags
		pos += 4
	}
	per := int64(bits.OnesCount32(flags&0xf00) * 4)
	if flags&0x100 == 0 {
		if pos+count*per > length {
			return fmt.Errorf("%w: trun entries", ErrTruncated)
		}
		return t.add(uint64(count), defaultDur)
	}
	br, err := payloadReader(r, off+pos, length-pos, count*per)
	if err != nil {
		return err
	}
	entry := make([]byte, per)
	for range count {
		if _, err := io.ReadFull(br, entry); err != nil {
			return fmt.Errorf("%w: trun entries: %w", ErrTruncated, err)
		}
		// sample_duration is the first field when present.
		if err := t.add(1, binary.BigEndian.Uint32(entry[:4])); err != nil {
			return err
		}
	}
	return nil
}
