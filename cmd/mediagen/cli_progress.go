package main

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/mediagen-dev/mediagen/client"
)

// reporter shows a task's progress and then its download: bars on a terminal, a line per
// change otherwise, nothing with --json.
type reporter interface {
	task(v *client.Video)
	download(done, total int64)
	downloadDone(path string, n int64, err error)
	close()
}

func (e *cliEnv) reporter() reporter {
	switch {
	case e.json:
		return quiet{}
	case e.terminal:
		return newBars(e.stderr)
	default:
		return &lines{w: e.stderr}
	}
}

type quiet struct{}

func (quiet) task(*client.Video)                {}
func (quiet) download(int64, int64)             {}
func (quiet) downloadDone(string, int64, error) {}
func (quiet) close()                            {}

// lines prints one line per change of status or progress, and download progress in steps
// of 10%, for logs and pipes.
type lines struct {
	w        io.Writer
	last     string
	lastStep int64
	started  bool
}

func (l *lines) task(v *client.Video) {
	s := fmt.Sprintf("%s %s %d%%", v.ID, v.Status, v.Progress)
	if s != l.last {
		fmt.Fprintln(l.w, s)
		l.last = s
	}
}

func (l *lines) download(done, total int64) {
	if !l.started {
		l.started = true
		l.lastStep = -1
		if total >= 0 {
			fmt.Fprintf(l.w, "downloading %s\n", sizeString(total))
		} else {
			fmt.Fprintln(l.w, "downloading")
		}
	}
	if total > 0 {
		if step := done * 10 / total; step != l.lastStep {
			l.lastStep = step
			fmt.Fprintf(l.w, "downloaded %s of %s (%d%%)\n", sizeString(done), sizeString(total), step*10)
		}
	}
}

func (l *lines) downloadDone(path string, n int64, err error) {
	if err == nil {
		fmt.Fprintf(l.w, "saved %s (%s)\n", path, sizeString(n))
	}
}

func (l *lines) close() {}

func sizeString(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d B", n)
	}
}

// bars draws with mpb: a task bar (0–100 with the status) and a download bar (bytes, speed).
type bars struct {
	p      *mpb.Progress
	mu     sync.Mutex
	taskB  *mpb.Bar
	status atomic.Value // string
	dl     *mpb.Bar
}

func newBars(w io.Writer) *bars {
	b := &bars{p: mpb.New(mpb.WithOutput(w), mpb.WithWidth(64), mpb.WithRefreshRate(150*time.Millisecond))}
	b.status.Store("")
	return b
}

func (b *bars) task(v *client.Video) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.status.Store(v.Status)
	if b.taskB == nil {
		b.taskB = b.p.AddBar(100,
			mpb.PrependDecorators(
				decor.Name(v.ID+" ", decor.WCSyncSpaceR),
				decor.Any(func(decor.Statistics) string { return b.status.Load().(string) }, decor.WCSyncSpaceR),
			),
			mpb.AppendDecorators(decor.Percentage(decor.WC{W: 5}), decor.Name(" "), decor.Elapsed(decor.ET_STYLE_MMSS)),
		)
	}
	if v.Terminal() {
		if v.Status == client.StatusCompleted {
			b.taskB.SetCurrent(100)
		} else {
			b.taskB.Abort(false)
		}
		return
	}
	b.taskB.SetCurrent(int64(v.Progress))
}

func (b *bars) download(done, total int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dl == nil {
		b.dl = b.p.AddBar(max(total, 0),
			mpb.PrependDecorators(decor.Name("download ", decor.WCSyncSpaceR),
				decor.Counters(decor.SizeB1024(0), "% .1f / % .1f", decor.WCSyncSpaceR)),
			mpb.AppendDecorators(decor.Percentage(decor.WC{W: 5}), decor.Name(" "),
				decor.AverageSpeed(decor.SizeB1024(0), "% .1f", decor.WC{W: 12})),
		)
	}
	if total > 0 {
		b.dl.SetTotal(total, false)
	}
	b.dl.SetCurrent(done)
}

func (b *bars) downloadDone(_ string, n int64, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dl == nil {
		return
	}
	if err != nil {
		b.dl.Abort(false)
		return
	}
	b.dl.SetTotal(n, true)
}

// close finishes the display. Bars still running (Ctrl-C) are removed, so the message that
// follows (how to resume) is not mixed with a half-drawn line.
func (b *bars) close() {
	b.mu.Lock()
	for _, bar := range []*mpb.Bar{b.taskB, b.dl} {
		if bar != nil && !bar.AbortedOrCompleted() {
			bar.Abort(true)
		}
	}
	b.mu.Unlock()
	b.p.Wait()
}
