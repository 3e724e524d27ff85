package ffmpeg

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheckPassesWithInstalledTools(t *testing.T) {
	t.Parallel()
	requireBins(t, "ffmpeg", "ffprobe", "espeak-ng")
	if err := (Tools{}).Check(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestCheckNamesEverythingMissing(t *testing.T) {
	t.Parallel()
	requireBins(t, "ffprobe")
	tools := Tools{FFmpeg: "/nonexistent/ffmpeg", Espeak: "/nonexistent/espeak-ng", FontFile: "/nonexistent/font.ttf"}
	err := tools.Check(context.Background())
	if err == nil {
		t.Fatal("Check passed with missing tools")
	}
	msg := err.Error()
	for _, want := range []string{"ffmpeg not runnable", "espeak-ng not runnable", "font file"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if strings.Contains(msg, "ffprobe") {
		t.Errorf("error %q blames ffprobe, which is installed", msg)
	}
}

func TestRunReportsDeadlineAndKills(t *testing.T) {
	t.Parallel()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = run(ctx, proc{tool: "sleeper", bin: sleep, args: []string{"30"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	var te *ToolError
	if !errors.As(err, &te) || te.Tool != "sleeper" {
		t.Errorf("err = %v, want a ToolError naming the tool", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("run returned after %v, want the process killed at the deadline", elapsed)
	}
}

func TestRunKeepsOnlyTheStderrTail(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	// Our own fixed script, standing in for a noisy failing tool.
	script := `i=0; while [ $i -lt 500 ]; do echo "noise line $i" >&2; i=$((i+1)); done; echo "the real error" >&2; exit 3`
	err = run(context.Background(), proc{tool: "noisy", bin: sh, args: []string{"-c", script}})
	var te *ToolError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want a ToolError", err)
	}
	if got, want := te.Error(), "noisy: exit status 3: the real error"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if len(te.Stderr) > stderrTail || !strings.HasSuffix(te.Stderr, "the real error\n") {
		t.Errorf("Stderr is %d bytes ending %q, want at most %d ending with the error", len(te.Stderr), te.Stderr[max(0, len(te.Stderr)-20):], stderrTail)
	}
}

func TestMissingBinaryIsNamed(t *testing.T) {
	t.Parallel()
	err := (Tools{FFprobe: "/nonexistent/ffprobe"}).Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "ffprobe not runnable") {
		t.Errorf("err = %v, want it to name ffprobe", err)
	}
}

func TestTailBufferKeepsTheEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{"short writes fit", []string{"ab", "cd"}, "abcd"},
		{"overflow drops the oldest bytes", []string{"abcd", "ef"}, "cdef"},
		{"one big write keeps its end", []string{"x", "0123456789"}, "6789"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &tailBuffer{max: 4}
			for _, w := range tc.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := b.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCappedBufferFlagsOverflow(t *testing.T) {
	t.Parallel()
	b := &cappedBuffer{max: 4}
	if n, err := b.Write([]byte("abcdef")); n != 6 || err != nil {
		t.Fatalf("Write = %d, %v; want 6, nil so the tool is never blocked", n, err)
	}
	if _, err := b.Bytes("tool"); !errors.Is(err, errOutputTooLarge) {
		t.Errorf("err = %v, want errOutputTooLarge", err)
	}
	ok := &cappedBuffer{max: 4}
	ok.Write([]byte("abcd"))
	if got, err := ok.Bytes("tool"); string(got) != "abcd" || err != nil {
		t.Errorf("got %q, %v; want abcd", got, err)
	}
}

// A failed check is not remembered (the operator installs the tool, and the next start or
// reload passes); a passed one is, for the process.
func TestCheckRemembersOnlyWhatPassed(t *testing.T) {
	t.Parallel()
	requireBins(t, "ffmpeg", "ffprobe", "espeak-ng")
	real, _ := exec.LookPath("ffprobe")
	probe := filepath.Join(t.TempDir(), "ffprobe")
	tools := Tools{FFprobe: probe}
	if err := tools.Check(context.Background()); err == nil {
		t.Fatal("the check passed with no ffprobe")
	}
	if err := os.Symlink(real, probe); err != nil {
		t.Fatal(err)
	}
	if err := tools.Check(context.Background()); err != nil {
		t.Fatalf("the check failed once ffprobe was there: %v", err)
	}
	if err := os.Remove(probe); err != nil {
		t.Fatal(err)
	}
	if err := tools.Check(context.Background()); err != nil {
		t.Fatalf("a passed check ran again: %v", err)
	}
}
