package probe

import (
	"fmt"

	mp4 "github.com/abema/go-mp4"
)

var moofContainers = map[string]bool{"moof": true, "moof/traf": true}

// parseMoof adds one movie fragment's run durations to its tracks. r holds
// the moof box at offset 0.
func parseMoof(r boxReader, m *movie) (err error) {
	defer recoverInto(&err)
	var (
		cur     *track
		curDflt uint32
		base    uint64
		hasBase bool
		before  uint64
	)
	// A traf's end is known once its last trun is summed; settle it when the
	// next traf starts and after the walk.
	settle := func() {
		if cur == nil {
			return
		}
		runDur := cur.frag.duration - before
		start := cur.running
		if hasBase {
			start = base
		}
		cur.running = start + runDur
		cur.fragEnd = max(cur.fragEnd, cur.running)
	}
	_, err = mp4.ReadBoxStructure(r, func(h *mp4.ReadHandle) (any, error) {
		p := pathString(h.Path)
		if moofContainers[p] {
			if p == "moof/traf" {
				settle()
				cur, hasBase = nil, false
			}
			return h.Expand()
		}
		payload := int64(h.BoxInfo.Offset + h.BoxInfo.HeaderSize)
		plen := int64(h.BoxInfo.Size - h.BoxInfo.HeaderSize)
		switch p {
		case "moof/traf/tfhd":
			b, err := readPayload[*mp4.Tfhd](h)
			if err != nil {
				return nil, err
			}
			cur = m.trackByID(b.TrackID)
			if cur == nil {
				return nil, fmt.Errorf("%w: fragment for unknown track %d", ErrNotMP4, b.TrackID)
			}
			curDflt = cur.defaultDur
			if b.GetFlags()&mp4.TfhdDefaultSampleDurationPresent != 0 {
				curDflt = b.DefaultSampleDuration
			}
			before = cur.frag.duration
		case "moof/traf/tfdt":
			b, err := readPayload[*mp4.Tfdt](h)
			if err != nil {
				return nil, err
			}
			base, hasBase = b.GetBaseMediaDecodeTime(), true
		case "moof/traf/trun":
			if cur == nil {
				return nil, fmt.Errorf("%w: trun before tfhd", ErrNotMP4)
			}
			if err := readTrun(r, payload, plen, curDflt, &cur.frag); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	if err != nil {
		return wrapParse(err)
	}
	settle()
	return nil
}
