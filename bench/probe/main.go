// Command probe prints what measuring a remote MP4/MOV costs, per file
// layout: range requests, bytes read and time per probe against a local
// server. It makes its files with ffmpeg in a temporary directory and
// serves them on 127.0.0.1.
//
//	go run ./bench/probe [-n 20]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"mediagen/internal/media/probe"
	"mediagen/internal/media/probe/probetest"
	"mediagen/internal/media/safefetch"
)

func main() {
	n := flag.Int("n", 20, "probes per file shape")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *n); err != nil {
		fmt.Fprintln(os.Stderr, "probe bench:", err)
		os.Exit(1)
	}
}

// item is one file shape served one way.
type item struct {
	name string
	path string
	mode probetest.Mode
}

// prepare makes every shape in dir, plus the 3 GiB sparse moov-at-end file.
func prepare(ctx context.Context, dir string) ([]item, error) {
	if err := probetest.HaveFFmpeg(); err != nil {
		return nil, err
	}
	var items []item
	for _, s := range probetest.Shapes() {
		p, err := probetest.Generate(ctx, dir, s)
		if err != nil {
			return nil, err
		}
		items = append(items, item{s.Name, p, probetest.Ranges})
		if s.Name == "moov-at-end" {
			sparse := filepath.Join(dir, "sparse.mp4")
			if err := probetest.MakeSparse(sparse, p, 3<<30); err != nil {
				return nil, err
			}
			items = append(items, item{"3GiB-moov-at-end", sparse, probetest.Ranges})
			items = append(items, item{"moov-at-end", p, probetest.IgnoreRange})
		}
	}
	return items, nil
}

// measure probes it.path n times through a loopback server.
func measure(ctx context.Context, c *safefetch.Client, it item, n int) (probe.Result, time.Duration, error) {
	srv, _ := probetest.Serve(it.path, it.mode)
	defer srv.Close()
	var res probe.Result
	start := time.Now()
	for range n {
		var err error
		res, err = probe.ProbeURL(ctx, c, srv.URL+"/media", probe.Options{AllowHTTP: true})
		if err != nil {
			return res, 0, fmt.Errorf("%s: %w", it.name, err)
		}
	}
	return res, time.Since(start) / time.Duration(n), nil
}

func run(ctx context.Context, w io.Writer, n int) error {
	dir, err := os.MkdirTemp("", "probe-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	items, err := prepare(ctx, dir)
	if err != nil {
		return err
	}
	c := safefetch.New(safefetch.Options{AllowLoopback: true})
	defer c.CloseIdleConnections()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "shape\tserver\tfile bytes\trequests/probe\tbytes/probe\ttime/probe\tduration s\tffprobe s\tsource\t")
	for _, it := range items {
		res, per, err := measure(ctx, c, it, n)
		if err != nil {
			return err
		}
		fi, err := os.Stat(it.path)
		if err != nil {
			return err
		}
		ref, err := probetest.FFprobeDuration(ctx, it.path)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%v\t%.6f\t%.6f\t%s\t\n", it.name, it.mode, fi.Size(), res.Requests, res.BytesRead,
			per.Round(time.Microsecond), res.Duration, ref, res.DurationSource)
	}
	return tw.Flush()
}
