package probetest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

type box struct {
	typ       string
	off, size int64
	hdr       int64
}

func readBoxes(b []byte, off, end int64) ([]box, error) {
	var out []box
	for off < end {
		if end-off < 8 {
			return nil, errors.New("stray bytes")
		}
		size := int64(binary.BigEndian.Uint32(b[off:]))
		hdr := int64(8)
		if size == 1 {
			size, hdr = int64(binary.BigEndian.Uint64(b[off+8:])), 16
		} else if size == 0 {
			size = end - off
		}
		if size < hdr || off+size > end {
			return nil, fmt.Errorf("bad box at %d", off)
		}
		out = append(out, box{typ: string(b[off+4 : off+8]), off: off, size: size, hdr: hdr})
		off += size
	}
	return out, nil
}

func find(bs []box, typ string) (box, int, bool) {
	for i, b := range bs {
		if b.typ == typ {
			return b, i, true
		}
	}
	return box{}, -1, false
}

// InsertMehd adds mvex/mehd (version 0) to a fragmented file in place,
// without moving any byte outside moov: mvex grows by 16 bytes and the box
// that follows it inside moov (ffmpeg writes udta there) becomes a smaller
// free box. Fragment offsets therefore stay valid.
func InsertMehd(path string, fragmentDuration uint64) error {
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
	mvex, i, ok := find(kids, "mvex")
	if !ok || i+1 >= len(kids) || kids[i+1].size < 16+8 {
		return errors.New("need mvex followed by a box of at least 24 bytes")
	}
	next := kids[i+1]
	const mehdSize = 16
	mehd := make([]byte, mehdSize)
	binary.BigEndian.PutUint32(mehd[0:], mehdSize)
	copy(mehd[4:], "mehd")
	binary.BigEndian.PutUint32(mehd[12:], uint32(fragmentDuration)) // version 0, flags 0

	var region []byte
	hdr := make([]byte, 8)
	binary.BigEndian.PutUint32(hdr, uint32(mvex.size+mehdSize))
	copy(hdr[4:], "mvex")
	region = append(region, hdr...)
	region = append(region, mehd...)
	region = append(region, b[mvex.off+8:mvex.off+mvex.size]...)
	free := make([]byte, next.size-mehdSize)
	binary.BigEndian.PutUint32(free, uint32(len(free)))
	copy(free[4:], "free")
	region = append(region, free...)
	if int64(len(region)) != mvex.size+next.size {
		return errors.New("mehd insertion changed the moov size")
	}
	copy(b[mvex.off:], region)
	return os.WriteFile(path, b, 0o644)
}

// MakeSparse writes dst as ftyp, a 64-bit-size mdat of mdatPayload bytes
// (a hole: it costs no disk), then the moov of src. The sample offsets in
// that moov no longer point at real samples; only the layout matters.
func MakeSparse(dst, src string, mdatPayload int64) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	top, err := readBoxes(b, 0, int64(len(b)))
	if err != nil {
		return err
	}
	ftyp, _, ok1 := find(top, "ftyp")
	moov, _, ok2 := find(top, "moov")
	if !ok1 || !ok2 {
		return errors.New("source needs ftyp and moov")
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(b[ftyp.off : ftyp.off+ftyp.size]); err != nil {
		return err
	}
	hdr := make([]byte, 16)
	binary.BigEndian.PutUint32(hdr, 1)
	copy(hdr[4:], "mdat")
	binary.BigEndian.PutUint64(hdr[8:], uint64(16+mdatPayload))
	if _, err := f.Write(hdr); err != nil {
		return err
	}
	if _, err := f.Seek(mdatPayload, io.SeekCurrent); err != nil {
		return err
	}
	if _, err := f.Write(b[moov.off : moov.off+moov.size]); err != nil {
		return err
	}
	return f.Close()
}

// Truncate copies the first keep bytes of src to dst.
func Truncate(dst, src string, keep int64) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if keep > int64(len(b)) {
		return errors.New("keep past the end")
	}
	return os.WriteFile(dst, b[:keep], 0o644)
}
