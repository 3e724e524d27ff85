package ffmpeg

import (
	"context"
	"strings"
	"sync"
)

// capsCache remembers what an ffmpeg binary can do; asking costs a process
// start, and the answer only changes when the package is upgraded, which
// restarts the service anyway. Keyed by binary and query.
var capsCache sync.Map // string → map[string]bool

// listNames returns the names in ffmpeg's "-encoders" or "-filters" table.
// Rows look like " V....D libx264   description" (a flags column, then the
// name); header lines are skipped because their flags column is not
// made of flag letters.
func (t Tools) listNames(ctx context.Context, flag string) (map[string]bool, error) {
	key := t.ffmpegBin() + "\x00" + flag
	if v, ok := capsCache.Load(key); ok {
		return v.(map[string]bool), nil
	}
	out := &cappedBuffer{max: 1 << 20}
	err := run(ctx, proc{mem: t.decodeMemory(), tool: "ffmpeg", bin: t.ffmpegBin(), args: []string{"-hide_banner", flag}, stdout: out})
	if err != nil {
		return nil, err
	}
	text, err := out.Bytes("ffmpeg")
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, line := range strings.Split(string(text), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && isFlagColumn(f[0]) {
			names[f[1]] = true
		}
	}
	capsCache.Store(key, names)
	return names, nil
}

func isFlagColumn(s string) bool {
	if len(s) < 3 || len(s) > 8 {
		return false
	}
	return strings.Trim(s, ".VASFXBDTC|") == ""
}

// pixFmts returns the pixel formats an encoder accepts, or nil when this
// ffmpeg does not have it.
func (t Tools) pixFmts(ctx context.Context, encoder string) (map[string]bool, error) {
	encoders, err := t.listNames(ctx, "-encoders")
	if err != nil || !encoders[encoder] {
		return nil, err
	}
	key := t.ffmpegBin() + "\x00pix_fmts\x00" + encoder
	if v, ok := capsCache.Load(key); ok {
		return v.(map[string]bool), nil
	}
	out := &cappedBuffer{max: 1 << 20}
	err = run(ctx, proc{mem: t.decodeMemory(), tool: "ffmpeg", bin: t.ffmpegBin(), args: []string{"-hide_banner", "-h", "encoder=" + encoder}, stdout: out})
	if err != nil {
		return nil, err
	}
	text, err := out.Bytes("ffmpeg")
	if err != nil {
		return nil, err
	}
	fmts := map[string]bool{}
	for _, line := range strings.Split(string(text), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "Supported pixel formats:"); ok {
			for _, f := range strings.Fields(rest) {
				fmts[f] = true
			}
		}
	}
	capsCache.Store(key, fmts)
	return fmts, nil
}
