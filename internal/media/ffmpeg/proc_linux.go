//go:build linux

package ffmpeg

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

// dieWithParent makes the tool's process end with ours. Pdeathsig has the kernel SIGKILL the
// child when its parent dies, even by SIGKILL, where no deferred cleanup of ours runs: without
// it, a killed service leaves its ffmpeg rendering on, reparented, beside the render of the
// process that takes the job over. Setpgid puts the child in a process group of its own, so
// that a deadline kills the tool and anything it started (cmd.Cancel), not only the tool.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	cmd.Cancel = func() error {
		// The child leads its group (Setpgid), so -pid names it and its descendants. The child
		// is not reaped before Wait returns, so its pid (and group id) cannot be reused yet.
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
}

// runChild runs cmd with the calling goroutine locked to its OS thread from start to reaping.
//
// Pdeathsig fires when the parent *thread* ends, not the parent process (golang/go#27505):
// the child is forked from whatever thread runs the goroutine at Start. Unlocked, that thread
// goes back to the scheduler, and when a goroutine that called runtime.LockOSThread ends
// without unlocking, the runtime ends its thread; were that our child's parent thread, the
// kernel would SIGKILL a healthy render in a healthy process. Locked, the thread runs nothing
// but this goroutine until Wait has reaped the child, and no other goroutine can end it. The
// cost is one OS thread per running tool, which the render and speech slots already bound.
//
// mem, when positive, is set as the child's memory limit right after it starts (rlimit.go);
// a limit that cannot be set kills the child: it must not run unbounded.
func runChild(cmd *exec.Cmd, mem int64) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := limitMemory(cmd.Process.Pid, mem); err != nil {
		_ = cmd.Cancel()
		_ = cmd.Wait()
		return err
	}
	return cmd.Wait()
}
