//go:build !linux

package ffmpeg

import "os/exec"

// dieWithParent does nothing here: Pdeathsig is Linux-only. On other systems a tool may
// outlive a killed service until its own Tools.Timeout; the service is deployed on Linux.
func dieWithParent(*exec.Cmd) {}

// runChild runs cmd; see proc_linux.go for why Linux locks the thread.
func runChild(cmd *exec.Cmd, mem int64) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := limitMemory(cmd.Process.Pid, mem); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	return cmd.Wait()
}
