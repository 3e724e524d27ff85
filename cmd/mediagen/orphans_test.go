package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/testkit"
)

// toolsUsing lists the processes other than except whose command line names dir: the media
// tools a server on that data directory started (their arguments are paths under it).
func toolsUsing(dir string, except int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == except || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(dir)) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i >= 0 && bytes.HasPrefix(bytes.TrimSpace(stat[i+1:]), []byte("Z")) {
				continue // a zombie runs nothing
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// waitToolsGone fails the test when tools on dir still run after a bounded wait.
func waitToolsGone(t *testing.T, dir string, except int) {
	t.Helper()
	var left []int
	if !testkit.PollEvery(20*time.Millisecond, 5*time.Second, func() bool {
		left = toolsUsing(dir, except)
		return len(left) == 0
	}) {
		t.Fatalf("tools of the killed server still run: pids %v", left)
	}
}

// checkNoRenderLeftovers fails the test for temporary files left in the sandbox's job
// directories under dataDir.
func checkNoRenderLeftovers(t *testing.T, dataDir string) {
	t.Helper()
	_ = filepath.Walk(filepath.Join(dataDir, "sandbox", "jobs"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return nil
		}
		if name := fi.Name(); strings.HasPrefix(name, ffmpeg.TempPrefix) || strings.HasPrefix(name, ".sandbox-") || strings.HasPrefix(name, ".fetch-") {
			t.Errorf("temporary file of a dead render left: %s", p)
		}
		return nil
	})
}
