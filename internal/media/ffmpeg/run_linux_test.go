//go:build linux

package ffmpeg

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"mediagen/internal/testkit"
)

// helperEnv turns the re-executed test binary into a stand-in for `mediagen serve`: it
// starts a long child through run and blocks until it is killed.
const helperEnv = "MEDIAGEN_TEST_RUN_PARENT"

// childGone bounds how long a test waits for a child to die; generous for a loaded machine.
const childGone = 5 * time.Second

// TestChildDiesWithItsKilledParent SIGKILLs a process that is waiting on a tool started by
// run (no deferred cleanup can run), and checks that the tool dies with it instead of
// running on, reparented, beside the tool of the next process.
func TestChildDiesWithItsKilledParent(t *testing.T) {
	t.Parallel()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	if os.Getenv(helperEnv) == "1" {
		_ = run(context.Background(), proc{tool: "sleeper", bin: sleep, args: []string{"60"}})
		os.Exit(0)
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithItsKilledParent$", "-test.count=1")
	parent.Env = append(os.Environ(), helperEnv+"=1")
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	child := waitForChild(t, parent.Process.Pid, "sleep")
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })

	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	testkit.WaitEvery(t, 20*time.Millisecond, childGone, fmt.Sprintf("child %d still runs after its parent was killed", child),
		func() bool { return gone(child, "sleep") })
}

// TestCancelKillsTheWholeProcessGroup ends a run whose tool started a process of its own:
// the deadline must kill that grandchild too, not only the direct child.
func TestCancelKillsTheWholeProcessGroup(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	// Our own fixed script: a tool that forks a worker and waits for it.
	script := `sleep 60 & echo $! > "$1"; wait`
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = run(ctx, proc{tool: "forker", bin: sh, args: []string{"-c", script, "sh", pidFile}})
	if err == nil {
		t.Fatal("run of a 60 s script returned nil at a 300 ms deadline")
	}
	data, rerr := os.ReadFile(pidFile)
	grandchild, perr := strconv.Atoi(strings.TrimSpace(string(data)))
	if rerr != nil || perr != nil {
		t.Fatalf("no pid of the grandchild: %v %v", rerr, perr)
	}
	t.Cleanup(func() { syscall.Kill(grandchild, syscall.SIGKILL) })
	testkit.WaitEvery(t, 20*time.Millisecond, childGone, fmt.Sprintf("grandchild %d still runs after the deadline", grandchild),
		func() bool { return gone(grandchild, "sleep") })
}

// waitForChild returns the pid of parent's child running comm, polling /proc.
func waitForChild(t *testing.T, parent int, comm string) int {
	t.Helper()
	var child int
	testkit.WaitEvery(t, 20*time.Millisecond, childGone, fmt.Sprintf("process %d started no %s", parent, comm), func() bool {
		entries, err := os.ReadDir("/proc")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if c, ppid, _, ok := procStat(pid); ok && ppid == parent && c == comm {
				child = pid
				return true
			}
		}
		return false
	})
	return child
}

// gone reports whether pid (running comm) has ended. A zombie counts as gone: it no
// longer runs, and in a container nobody may reap it.
func gone(pid int, comm string) bool {
	c, _, state, ok := procStat(pid)
	return !ok || c != comm || state == "Z"
}

// procStat reads the command name, parent pid and state of pid from /proc/<pid>/stat.
func procStat(pid int) (comm string, ppid int, state string, ok bool) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, "", false
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" {
		return "", 0, "", false
	}
	// "pid (comm) state ppid …"; comm may hold spaces and parentheses, so cut at the last ')'.
	open, closing := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || closing < open {
		return "", 0, "", false
	}
	rest := strings.Fields(line[closing+1:])
	if len(rest) < 2 {
		return "", 0, "", false
	}
	ppid, err = strconv.Atoi(rest[1])
	if err != nil {
		return "", 0, "", false
	}
	return line[open+1 : closing], ppid, rest[0], true
}
