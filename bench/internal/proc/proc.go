// Package proc starts and stops the servers a benchmark or harness runs as child processes,
// and reads what /proc says of them.
package proc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a server the bench started, in its own process group so that everything it spawns
// goes when it is stopped. Pdeathsig kills it if the bench itself is killed outright.
type Proc struct {
	Name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	WaitErr error         // set once Done is closed
	once    sync.Once
}

// Start runs bin with args, its output going to logPath.
func Start(name, bin, logPath string, env []string, args ...string) (*Proc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.WaitErr = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// ChildEnv is the bench's environment without MEDIAGEN_* variables, so that a catalog, database
// or log setting exported in the shell cannot change what is measured.
func ChildEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MEDIAGEN_") {
			env = append(env, kv)
		}
	}
	return env
}

// PID is the process id (and its process group's).
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Exited says whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM to the process group, and SIGKILL when it has not exited within grace.
func (p *Proc) Stop(grace time.Duration) {
	p.once.Do(func() {
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.done
		}
		// Anything the server left behind in its group goes too.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	})
}

// LogTail is the end of the process's output, for error messages.
func (p *Proc) LogTail(lines int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// FreeAddr returns a 127.0.0.1 address that was free a moment ago.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// WaitReady polls base+path until it answers 200, the process exits, or the timeout passes.
func WaitReady(ctx context.Context, p *Proc, base, path string, timeout time.Duration) error {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil}}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		if p.Exited() {
			return fmt.Errorf("%s exited before it was ready (%v); its output:\n%s", p.Name, p.WaitErr, p.LogTail(20))
		}
		resp, err := c.Get(base + path)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not ready at %s%s after %v (last: %s); its output:\n%s", p.Name, base, path, timeout, last, p.LogTail(20))
}

// Run runs a short command and returns its standard output.
func Run(ctx context.Context, timeout time.Duration, dir, bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = ChildEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		shown := make([]string, len(args))
		for i, a := range args {
			shown[i] = a
			if u, perr := url.Parse(a); perr == nil && u.User != nil {
				shown[i] = Redact(u)
			}
		}
		return out.String(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(bin), strings.Join(shown, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// CPUTime is the user+system CPU a process has used so far, read from /proc (Linux). The
// second result is false where that is not available.
func CPUTime(pid int) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name may hold spaces; fields count from after its closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const clkTck = 100 // USER_HZ, 100 on every Linux platform Go supports
	return time.Duration(utime+stime) * time.Second / clkTck, true
}

// SelfCPU is the CPU time the bench process has used so far.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// RSSMiB is a process's resident memory in MiB (0 when unknown).
func RSSMiB(pid int) float64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// LoadAvg is the 1-minute load average (-1 when unknown).
func LoadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// ModuleRoot finds the directory of the mediagen go.mod, from the working directory upward.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("module mediagen")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the mediagen module: run from the repository (or pass -mediagen and -bare)")
		}
		dir = parent
	}
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Redact is u with its password hidden, for messages.
func Redact(u *url.URL) string {
	c := *u
	if _, has := c.User.Password(); has {
		c.User = url.UserPassword(c.User.Username(), "xxxxx")
	}
	return c.String()
}
