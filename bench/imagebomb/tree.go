package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"mediagen/bench/internal/proc"
)

// tree is what /proc says of a process and its descendants at one moment.
type tree struct {
	sumKiB      int64 // VmRSS of the process and every descendant
	childHWMKiB int64 // the highest VmHWM (peak resident) of any descendant
}

// treeRSS sums the resident memory of root and its descendants (proc.Tree).
func treeRSS(root int) tree {
	var t tree
	for _, m := range proc.Tree(root) {
		rss, hwm := status(m.PID)
		t.sumKiB += rss
		if m.PID != root {
			t.childHWMKiB = max(t.childHWMKiB, hwm)
		}
	}
	return t
}

func status(pid int) (rss, hwm int64) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		for _, k := range []struct {
			p string
			v *int64
		}{{"VmRSS:", &rss}, {"VmHWM:", &hwm}} {
			if rest, ok := strings.CutPrefix(line, k.p); ok {
				*k.v, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			}
		}
	}
	return rss, hwm
}

// meter samples a process tree every 5 ms until stopped and keeps the peaks.
type meter struct {
	stopc chan struct{}
	done  sync.WaitGroup
	idle  int64
	peak  struct{ aboveKiB, childHWMKiB int64 }
}

func startMeter(root int, idle tree) *meter {
	m := &meter{stopc: make(chan struct{}), idle: idle.sumKiB}
	m.done.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			t := treeRSS(root)
			m.peak.aboveKiB = max(m.peak.aboveKiB, t.sumKiB-m.idle)
			m.peak.childHWMKiB = max(m.peak.childHWMKiB, t.childHWMKiB)
			select {
			case <-m.stopc:
				return
			case <-tick.C:
			}
		}
	})
	return m
}

func (m *meter) stop() struct{ aboveKiB, childHWMKiB int64 } {
	close(m.stopc)
	m.done.Wait()
	return m.peak
}
