package probe

import (
	"encoding/binary"
)

// Minimal ISO BMFF builders for layouts ffmpeg does not write (zero or
// absurd durations, corrupt sizes) and for fuzz seeds.

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func mkBox(typ string, parts ...[]byte) []byte {
	var payload []byte
	for _, p := range parts {
		payload = append(payload, p...)
	}
	out := be32(uint32(8 + len(payload)))
	out = append(out, typ...)
	return append(out, payload...)
}

func mkFull(typ string, version byte, flags uint32, parts ...[]byte) []byte {
	vf := be32(uint32(version)<<24 | flags&0xffffff)
	return mkBox(typ, append([][]byte{vf}, parts...)...)
}

func ftypBox(brand string) []byte {
	return mkBox("ftyp", []byte(brand), be32(0x200), []byte(brand), []byte("mp41"))
}

// mvhdBox writes a version 0 mvhd, or version 1 when duration needs 64 bits.
func mvhdBox(timescale uint32, duration uint64) []byte {
	rest := make([]byte, 4+2+10+36+24)
	binary.BigEndian.PutUint32(rest[0:], 0x00010000)
	binary.BigEndian.PutUint16(rest[4:], 0x0100)
	next := be32(2)
	if duration > 0xffffffff {
		return mkFull("mvhd", 1, 0, be64(0), be64(0), be32(timescale), be64(duration), rest, next)
	}
	return mkFull("mvhd", 0, 0, be32(0), be32(0), be32(timescale), be32(uint32(duration)), rest, next)
}

func tkhdBox(id uint32, w, h uint32) []byte {
	mid := make([]byte, 8+2+2+2+2+36)
	return mkFull("tkhd", 0, 3, be32(0), be32(0), be32(id), be32(0), be32(0), mid, be32(w<<16), be32(h<<16))
}

func mdhdBox(timescale uint32, duration uint32) []byte {
	return mkFull("mdhd", 0, 0, be32(0), be32(0), be32(timescale), be32(duration), []byte{0x55, 0xc4, 0, 0})
}

func hdlrBox(kind string) []byte {
	return mkFull("hdlr", 0, 0, be32(0), []byte(kind), make([]byte, 12), []byte("h\x00"))
}

func sttsBox(entries ...[2]uint32) []byte {
	parts := [][]byte{be32(uint32(len(entries)))}
	for _, e := range entries {
		parts = append(parts, be32(e[0]), be32(e[1]))
	}
	return mkFull("stts", 0, 0, parts...)
}

func stsdVisual(w, h uint16) []byte {
	entry := make([]byte, 78)
	binary.BigEndian.PutUint16(entry[6:], 1)
	binary.BigEndian.PutUint16(entry[24:], w)
	binary.BigEndian.PutUint16(entry[26:], h)
	return mkFull("stsd", 0, 0, be32(1), mkBox("avc1", entry))
}

// videoTrak is a 25 fps video track of n frames at timescale 12800.
func videoTrak(id uint32, frames uint32, stts bool) []byte {
	stbl := [][]byte{stsdVisual(320, 240)}
	if stts {
		stbl = append(stbl, sttsBox([2]uint32{frames, 512}))
	} else {
		stbl = append(stbl, sttsBox())
	}
	return mkBox("trak", tkhdBox(id, 320, 240), mkBox("mdia", mdhdBox(12800, frames*512), hdlrBox("vide"),
		mkBox("minf", mkBox("stbl", stbl...))))
}

// simpleMP4 is ftyp + moov(mvhd + one 25 fps video track as long as mvhd says, in whole
// frames; 50 frames when the timescale is 0) + a small mdat.
func simpleMP4(timescale uint32, duration uint64) []byte {
	frames := uint32(50)
	if timescale > 0 {
		frames = uint32(duration * 25 / uint64(timescale))
	}
	return mp4WithTrack(timescale, duration, frames)
}

// mp4WithTrack is simpleMP4 with a track of any number of frames, whatever mvhd says.
func mp4WithTrack(timescale uint32, duration uint64, frames uint32) []byte {
	out := ftypBox("isom")
	out = append(out, mkBox("moov", mvhdBox(timescale, duration), videoTrak(1, frames, true))...)
	return append(out, mkBox("mdat", make([]byte, 64))...)
}

// fragmentedMP4 has an empty moov with trex default duration 512 and two
// fragments of 25 frames: one using the default, one with explicit
// durations, so 50 frames of 512/12800 s = 2 s.
func fragmentedMP4(withMehd bool) []byte {
	if withMehd {
		return fragmentedMP4Mehd(2000)
	}
	return fragmentedMP4Mehd(0)
}

// fragmentedMP4Mehd is fragmentedMP4 whose mehd declares mehd ms (none when 0), whatever the
// fragments hold.
func fragmentedMP4Mehd(mehd uint32) []byte {
	trex := mkFull("trex", 0, 0, be32(1), be32(1), be32(512), be32(0), be32(0))
	mvex := [][]byte{trex}
	if mehd > 0 {
		mvex = append([][]byte{mkFull("mehd", 0, 0, be32(mehd))}, mvex...)
	}
	out := ftypBox("iso5")
	out = append(out, mkBox("moov", mvhdBox(1000, 0), videoTrak(1, 0, false), mkBox("mvex", mvex...))...)
	// trun flags 0x1 data offset; fragment 1 uses trex default duration.
	frag1 := mkBox("moof", mkFull("mfhd", 0, 0, be32(1)), mkBox("traf",
		mkFull("tfhd", 0, 0x020000, be32(1)),
		mkFull("tfdt", 1, 0, be64(0)),
		mkFull("trun", 0, 0x1, be32(25), be32(0))))
	per := [][]byte{be32(25), be32(0)}
	for range 25 {
		per = append(per, be32(512))
	}
	frag2 := mkBox("moof", mkFull("mfhd", 0, 0, be32(2)), mkBox("traf",
		mkFull("tfhd", 0, 0x020000, be32(1)),
		mkFull("tfdt", 1, 0, be64(25*512)),
		mkFull("trun", 0, 0x101, per...)))
	mdat := mkBox("mdat", make([]byte, 100))
	out = append(out, frag1...)
	out = append(out, mdat...)
	out = append(out, frag2...)
	return append(out, mdat...)
}

// editedTrak is videoTrak with an edit list of the given (segment duration in the movie
// timescale, media time in the track's 12800) entries.
func editedTrak(id uint32, frames uint32, edits ...[2]int64) []byte {
	parts := [][]byte{be32(uint32(len(edits)))}
	for _, e := range edits {
		parts = append(parts, be32(uint32(e[0])), be32(uint32(int32(e[1]))), be32(0x00010000))
	}
	edts := mkBox("edts", mkFull("elst", 0, 0, parts...))
	return mkBox("trak", tkhdBox(id, 320, 240), edts, mkBox("mdia", mdhdBox(12800, frames*512), hdlrBox("vide"),
		mkBox("minf", mkBox("stbl", stsdVisual(320, 240), sttsBox([2]uint32{frames, 512})))))
}
