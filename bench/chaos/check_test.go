package main

import (
	"strings"
	"testing"
)

func TestOwnerOfNamesTheRecordOfEveryKeyKind(t *testing.T) {
	for key, want := range map[string]string{
		"videos/video_abc/result.mp4":       "video_abc",
		"videos/video_abc/intermediate.mp4": "video_abc",
		"speech/speech_x/audio.mp3":         "speech_x",
		"assets/asset_1/source.png":         "asset_1",
		"stray.bin":                         "",
		"videos/video_abc":                  "",
	} {
		if got := ownerOf(key); got != want {
			t.Errorf("ownerOf(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestVerdictFailsOnEveryBrokenFigure(t *testing.T) {
	good := func() *figures {
		return &figures{Kills: 100, LedgerOK: true, Settlements: map[int]int{1: 50}, UpstreamJobs: map[int]int{1: 20, 0: 2}}
	}
	clean := good()
	if clean.verdict(100); len(clean.Failures) != 0 {
		t.Fatalf("a clean run failed: %v", clean.Failures)
	}
	for name, c := range map[string]struct {
		breakIt func(*figures)
		want    string
	}{
		"too few kills":            {func(f *figures) { f.Kills = 99 }, "kills"},
		"a lost task":              {func(f *figures) { f.Lost = 1 }, "lost"},
		"a task not terminal":      {func(f *figures) { f.NotTerminal = 1 }, "not terminal"},
		"a double settlement":      {func(f *figures) { f.Settlements[2] = 1 }, "settled 2 times"},
		"an unsettled record":      {func(f *figures) { f.Settlements[0] = 1 }, "settled 0 times"},
		"a broken ledger":          {func(f *figures) { f.LedgerOK, f.LedgerErr = false, "txn x sums to 5" }, "ledger"},
		"a changed result":         {func(f *figures) { f.Changed = 1 }, "changed"},
		"an unreadable result":     {func(f *figures) { f.Unreadable = 1 }, "downloaded"},
		"a speech replay":          {func(f *figures) { f.SpeechChanged = 1 }, "speech"},
		"a video replay":           {func(f *figures) { f.ReplayChanged = 1 }, "replays"},
		"an orphan object":         {func(f *figures) { f.Orphans = 1 }, "orphan"},
		"a duplicate paid job":     {func(f *figures) { f.UpstreamJobs[2] = 1 }, "2 upstream jobs"},
		"a completed task, no job": {func(f *figures) { f.CompletedNotOne = 1 }, "exactly one"},
		"a wire violation":         {func(f *figures) { f.ArkViolations = 1 }, "wire format"},
	} {
		f := good()
		c.breakIt(f)
		f.verdict(100)
		if len(f.Failures) != 1 || !strings.Contains(f.Failures[0], c.want) {
			t.Errorf("%s: failures %q, want one naming %q", name, f.Failures, c.want)
		}
	}
}
