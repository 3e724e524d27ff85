package ffmpeg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

const (
	// stderrTail is how much of a tool's stderr a ToolError keeps: enough for
	// the last few error lines, small enough for a log line.
	stderrTail = 2048
	// errLineMax bounds the stderr excerpt that goes into Error().
	errLineMax = 200
	// waitDelay bounds how long Wait lingers on the pipes after the process
	// was killed, in case something inherited them.
	waitDelay = 2 * time.Second
)

// ToolError is a failed run of one tool.
type ToolError struct {
	Tool   string // "ffmpeg", "ffprobe" or "espeak-ng"
	Err    error  // exec or exit error, or the context's error when it ended
	Stderr string // last bytes of stderr; for internal logs, never for clients
}

func (e *ToolError) Error() string {
	msg := e.Tool + ": " + e.Err.Error()
	if line := lastLine(e.Stderr); line != "" {
		msg += ": " + line
	}
	return msg
}

func (e *ToolError) Unwrap() error { return e.Err }

// lastLine is the last non-empty stderr line, cut to errLineMax bytes: the
// line that usually says what went wrong.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	line := strings.TrimSpace(lines[len(lines)-1])
	if len(line) > errLineMax {
		line = strings.ToValidUTF8(line[:errLineMax], "") + "…"
	}
	return line
}

// proc is one process to run.
type proc struct {
	tool   string // name used in errors
	bin    string
	args   []string
	stdin  io.Reader // nil: /dev/null
	stdout io.Writer // nil: discarded
	mem    int64     // memory limit of the child in bytes (rlimit.go); 0: none
}

// run starts p and waits for it. The process, and any process it started, is
// killed when ctx ends; the error then wraps ctx.Err() rather than the
// "signal: killed" exit status, so that callers can tell a timeout from a tool
// failure. On Linux the process also dies when ours does (see dieWithParent).
func run(ctx context.Context, p proc) error {
	release, waitErr := admit(ctx, p.tool) // the media budget (gate.go)
	if waitErr != nil {
		return &ToolError{Tool: p.tool, Err: waitErr}
	}
	defer release()
	cmd := exec.CommandContext(ctx, p.bin, p.args...)
	cmd.Stdin = p.stdin
	cmd.Stdout = p.stdout
	stderr := &tailBuffer{max: stderrTail}
	cmd.Stderr = stderr
	cmd.WaitDelay = waitDelay
	dieWithParent(cmd)

	err := runChild(cmd, p.mem)
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		err = ctxErr
	}
	return &ToolError{Tool: p.tool, Err: err, Stderr: stderr.String()}
}

// tailBuffer keeps only the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= b.max {
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		return n, nil
	}
	if over := len(b.buf) + len(p) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

func (b *tailBuffer) String() string { return strings.ToValidUTF8(string(b.buf), "") }

// errOutputTooLarge is returned when a tool prints more than we will parse.
var errOutputTooLarge = errors.New("tool output too large")

// cappedBuffer holds at most max bytes and drops the rest. It never returns
// a write error: that would stop exec's copy goroutine while the process
// still writes, leaving it blocked on a full pipe until the timeout.
type cappedBuffer struct {
	max       int
	buf       bytes.Buffer
	truncated bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := b.max - b.buf.Len(); n > room {
		b.truncated = true
		p = p[:max(room, 0)]
	}
	b.buf.Write(p)
	return n, nil
}

// Bytes returns what was written, or an error naming the tool when some of
// it had to be dropped.
func (b *cappedBuffer) Bytes(tool string) ([]byte, error) {
	if b.truncated {
		return nil, fmt.Errorf("%s: %w (over %d bytes)", tool, errOutputTooLarge, b.max)
	}
	return b.buf.Bytes(), nil
}
