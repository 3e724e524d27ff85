package probe

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	mp4 "github.com/abema/go-mp4"
)

// boxReader is what both the in-memory moov (bytes.Reader) and the lazy
// range-backed one (io.SectionReader) provide.
type boxReader interface {
	io.ReadSeeker
	io.ReaderAt
}

type track struct {
	id        uint32
	handler   string // "vide", "soun", …
	timescale uint32
	width     int
	height    int
	// largestW × largestH is the largest of the sizes the track states (tkhd's display size,
	// the sample entry's coded size): the pixel budget is checked against it, since either
	// may be the one that understates what a decoder allocates.
	largestW, largestH int
	// Presentation offset from the first edit: an empty edit delays the
	// track (movie timescale), a media_time skips into it (track timescale).
	emptyEdit uint64
	mediaTime int64
	// editSpan is the sum of the non-empty edits' durations (movie timescale) and edits
	// their number: what a player (and ffmpeg) presents of the media.
	editSpan uint64
	edits    int

	moovSamples sampleTotals // from stts
	// Fragments: end is the largest tfdt+run duration seen, running the
	// decode time used when a traf has no tfdt.
	frag       sampleTotals
	fragEnd    uint64
	running    uint64
	defaultDur uint32 // trex
}

type movie struct {
	timescale  uint32
	duration   uint64
	tracks     []*track
	fragmented bool // mvex present
	mehd       uint64
	hasMehd    bool
}

func (m *movie) trackByID(id uint32) *track {
	for _, t := range m.tracks {
		if t.id == id {
			return t
		}
	}
	return nil
}

// containers are expanded; every other box is skipped by its header, which
// is what keeps big tables (stsz, stco) unread.
var moovContainers = map[string]bool{
	"moov": true, "moov/trak": true, "moov/trak/edts": true, "moov/trak/mdia": true,
	"moov/trak/mdia/minf": true, "moov/trak/mdia/minf/stbl": true, "moov/mvex": true,
}

// parseMoov reads the movie header, tracks and mvex from r, which holds the
// moov box at offset 0.
func parseMoov(r boxReader) (m *movie, err error) {
	m = &movie{}
	defer recoverInto(&err)
	var cur *track
	_, err = mp4.ReadBoxStructure(r, func(h *mp4.ReadHandle) (any, error) {
		p := pathString(h.Path)
		if moovContainers[p] {
			switch p {
			case "moov/trak":
				cur = &track{mediaTime: 0}
				m.tracks = append(m.tracks, cur)
			case "moov/mvex":
				m.fragmented = true
			}
			return h.Expand()
		}
		payload := int64(h.BoxInfo.Offset + h.BoxInfo.HeaderSize)
		plen := int64(h.BoxInfo.Size - h.BoxInfo.HeaderSize)
		switch p {
		case "moov/mvhd":
			b, err := readPayload[*mp4.Mvhd](h)
			if err != nil {
				return nil, err
			}
			m.timescale, m.duration = b.Timescale, b.GetDuration()
		case "moov/trak/tkhd":
			b, err := readPayload[*mp4.Tkhd](h)
			if err != nil {
				return nil, err
			}
			cur.id = b.TrackID
			// Display size; the sample entry's coded size wins when present.
			cur.width, cur.height = int(b.Width>>16), int(b.Height>>16)
			cur.noteSize(cur.width, cur.height)
		case "moov/trak/edts/elst":
			b, err := readPayload[*mp4.Elst](h)
			if err != nil {
				return nil, err
			}
			readEdits(b, cur)
		case "moov/trak/mdia/mdhd":
			b, err := readPayload[*mp4.Mdhd](h)
			if err != nil {
				return nil, err
			}
			cur.timescale = b.Timescale
		case "moov/trak/mdia/hdlr":
			// handler_type sits after version/flags and pre_defined. Read raw:
			// QuickTime and ISO disagree on the name field that follows.
			var b [12]byte
			if plen < 12 {
				return nil, fmt.Errorf("%w: short hdlr", ErrTruncated)
			}
			if _, err := r.ReadAt(b[:], payload); err != nil {
				return nil, err
			}
			cur.handler = string(b[8:12])
		case "moov/trak/mdia/minf/stbl/stsd":
			if cur.handler == "vide" {
				if err := readVisualSize(r, payload, plen, cur); err != nil {
					return nil, err
				}
			}
		case "moov/trak/mdia/minf/stbl/stts":
			if err := readStts(r, payload, plen, &cur.moovSamples); err != nil {
				return nil, err
			}
		case "moov/mvex/mehd":
			b, err := readPayload[*mp4.Mehd](h)
			if err != nil {
				return nil, err
			}
			m.mehd, m.hasMehd = b.GetFragmentDuration(), true
		case "moov/mvex/trex":
			b, err := readPayload[*mp4.Trex](h)
			if err != nil {
				return nil, err
			}
			if t := m.trackByID(b.TrackID); t != nil {
				t.defaultDur = b.DefaultSampleDuration
			}
		}
		return nil, nil
	})
	if err != nil {
		return nil, wrapParse(err)
	}
	return m, nil
}

func readEdits(b *mp4.Elst, t *track) {
	for i := range b.Entries {
		mt := b.GetMediaTime(i)
		if mt == -1 {
			if t.edits == 0 {
				t.emptyEdit += b.GetSegmentDuration(i)
			}
			continue
		}
		if t.edits == 0 {
			t.mediaTime = mt
		}
		t.edits++
		t.editSpan += b.GetSegmentDuration(i)
	}
}

// readVisualSize takes width/height of the first sample entry. Every
// VisualSampleEntry (avc1, hvc1, mp4v, QuickTime apch, jpeg, …) has them at
// the same place, so no codec needs to be known to go-mp4.
func readVisualSize(r io.ReaderAt, off, length int64, t *track) error {
	// stsd: version/flags(4) entry_count(4); entry: size(4) type(4)
	// reserved(6) data_reference_index(2) pre_defined/reserved(16) width(2) height(2)
	const need = 8 + 8 + 24 + 4
	if length < need {
		return nil // no visual entry; keep tkhd's size
	}
	var b [need]byte
	if _, err := r.ReadAt(b[:], off); err != nil {
		return err
	}
	if binary.BigEndian.Uint32(b[4:8]) == 0 {
		return nil
	}
	w, h := binary.BigEndian.Uint16(b[40:42]), binary.BigEndian.Uint16(b[42:44])
	if w > 0 && h > 0 {
		t.width, t.height = int(w), int(h)
		t.noteSize(t.width, t.height)
	}
	return nil
}

// noteSize keeps w × h as the track's largest stated size when it has more pixels.
func (t *track) noteSize(w, h int) {
	if int64(w)*int64(h) > int64(t.largestW)*int64(t.largestH) {
		t.largestW, t.largestH = w, h
	}
}

// readPayload unmarshals the current box with go-mp4 and checks its type.
func readPayload[T mp4.IBox](h *mp4.ReadHandle) (T, error) {
	var zero T
	box, _, err := h.ReadPayload()
	if err != nil {
		return zero, err
	}
	b, ok := box.(T)
	if !ok {
		return zero, fmt.Errorf("%w: unexpected payload for %s", ErrTruncated, h.BoxInfo.Type)
	}
	return b, nil
}

func pathString(p mp4.BoxPath) string {
	var sb strings.Builder
	for i, t := range p {
		if i > 0 {
			sb.WriteByte('/')
		}
		sb.Write(t[:])
	}
	return sb.String()
}

// wrapParse gives go-mp4's untyped errors our kind; our own kinds and I/O
// errors from the range reader pass through.
func wrapParse(err error) error {
	if isKind(err) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrTruncated, err)
}

// recoverInto turns a panic inside go-mp4 on hostile input into an error;
// a probe must never take the process down.
func recoverInto(err *error) {
	if v := recover(); v != nil {
		*err = fmt.Errorf("%w: parser panic: %v", ErrTruncated, v)
	}
}
