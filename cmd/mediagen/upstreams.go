package main

import (
	"fmt"
	"path/filepath"

	"mediagen/internal/catalog"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/provider/sandbox"
)

// localEngines makes the engine of every local upstream account of the catalog (kinds ffmpeg
// and espeak): the embedded engine with no test markers and no pace, with a job directory of
// its own. The built-in sandbox is made by build. docs/upstreams.md.
func (m *Main) localEngines(tools ffmpeg.Tools, fetch *safefetch.Client) (map[string]*sandbox.Engine, error) {
	out := map[string]*sandbox.Engine{}
	for _, acc := range m.catalog.Accounts() {
		if acc.Kind != catalog.KindFFmpeg && acc.Kind != catalog.KindEspeak {
			continue
		}
		e, err := sandbox.New(sandbox.Config{Dir: filepath.Join(m.Config.DataDir, "upstreams", acc.Name), Tools: tools, Fetch: fetch,
			Pace: -1, MaxConcurrent: acc.MaxConcurrent, NoMarkers: true, Logger: m.log.With("upstream", acc.Name)})
		if err != nil {
			for _, made := range out {
				_ = made.Close()
			}
			return nil, fmt.Errorf("upstream %s: %w", acc.Name, err)
		}
		out[acc.Name] = e
	}
	m.locals = out
	return out, nil
}
