package probetest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// RewriteDurations sets every duration header of the unfragmented MP4/MOV at path to secs —
// the movie header (mvhd), each track header (tkhd, in the movie's timescale) and each media
// header (mdhd, in the track's own timescale) — and leaves the samples as they are: what a
// hostile source does to be measured shorter, or longer, than it plays. Edit lists are left
// alone. Only version 0 headers (what ffmpeg writes for short clips) are handled.
func RewriteDurations(path string, secs float64) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	top, err := readBoxes(b, 0, int64(len(b)))
	if err != nil {
		return err
	}
	moov, _, ok := find(top, "moov")
	if !ok {
		return errors.New("no moov")
	}
	kids, err := readBoxes(b, moov.off+moov.hdr, moov.off+moov.size)
	if err != nil {
		return err
	}
	mvhd, _, ok := find(kids, "mvhd")
	if !ok {
		return errors.New("no mvhd")
	}
	// Full box: version(1) flags(3) creation(4) modification(4) timescale(4) duration(4).
	p := mvhd.off + mvhd.hdr
	if b[p] != 0 {
		return errors.New("mvhd is not version 0")
	}
	movieScale := binary.BigEndian.Uint32(b[p+12:])
	binary.BigEndian.PutUint32(b[p+16:], scaled(secs, movieScale))
	tracks := 0
	for _, trak := range kids {
		if trak.typ != "trak" {
			continue
		}
		tracks++
		parts, err := readBoxes(b, trak.off+trak.hdr, trak.off+trak.size)
		if err != nil {
			return err
		}
		tkhd, _, ok := find(parts, "tkhd")
		if !ok {
			return errors.New("trak without tkhd")
		}
		// version(1) flags(3) creation(4) modification(4) track_ID(4) reserved(4) duration(4).
		p := tkhd.off + tkhd.hdr
		if b[p] != 0 {
			return errors.New("tkhd is not version 0")
		}
		binary.BigEndian.PutUint32(b[p+20:], scaled(secs, movieScale))
		mdia, _, ok := find(parts, "mdia")
		if !ok {
			return errors.New("trak without mdia")
		}
		media, err := readBoxes(b, mdia.off+mdia.hdr, mdia.off+mdia.size)
		if err != nil {
			return err
		}
		mdhd, _, ok := find(media, "mdhd")
		if !ok {
			return errors.New("mdia without mdhd")
		}
		// version(1) flags(3) creation(4) modification(4) timescale(4) duration(4).
		p = mdhd.off + mdhd.hdr
		if b[p] != 0 {
			return errors.New("mdhd is not version 0")
		}
		binary.BigEndian.PutUint32(b[p+16:], scaled(secs, binary.BigEndian.Uint32(b[p+12:])))
	}
	if tracks == 0 {
		return fmt.Errorf("%s has no tracks", path)
	}
	return os.WriteFile(path, b, 0o644)
}

func scaled(secs float64, scale uint32) uint32 { return uint32(secs*float64(scale) + 0.5) }
