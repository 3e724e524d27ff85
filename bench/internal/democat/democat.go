// Package democat writes the catalog the benchmarks start their servers with: the demo
// catalog with the demo tenant's limits lifted. A benchmark measures what it measures (the
// edge's bounds, the media work a flood makes, the API's throughput), not the catalog's
// per-key limits, which would otherwise refuse its traffic first.
package democat

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"mediagen/internal/catalog"
)

// FileName is the name Write gives the catalog in its directory.
const FileName = "catalog.yaml"

// unlimited is the demo tenant's own limits block that lifts every limit.
const unlimited = `    limits:
      key: {requests_per_second: unlimited, concurrent_requests: unlimited, video_tasks_in_flight: unlimited, speech_in_flight: unlimited,
        asset_ingests_in_flight: unlimited}
      tenant: {requests_per_second: unlimited, video_tasks_in_flight: unlimited, speech_in_flight: unlimited,
        asset_ingests_in_flight: unlimited}
`

// Write writes the demo catalog with the demo tenant's limits lifted into dir, checks that it
// parses and that the limits are lifted, and returns its path.
func Write(dir string) (string, error) {
	demo := string(catalog.DemoYAML())
	const at = "  - id: demo\n"
	if !strings.Contains(demo, at) {
		return "", errors.New("bench catalog: the demo catalog has no tenant demo")
	}
	text := strings.Replace(demo, at, at+unlimited, 1)
	path := filepath.Join(dir, FileName)
	c, err := catalog.Parse(path, []byte(text))
	if err != nil {
		return "", err
	}
	if t, ok := c.Tenant("demo"); !ok || t.Limits().Key.VideoTasksInFlight != catalog.Unlimited || !t.Limits().Key.RequestsPerSecond.Unlimited() {
		return "", errors.New("bench catalog: the demo tenant's limits were not lifted")
	}
	return path, os.WriteFile(path, []byte(text), 0o644)
}
