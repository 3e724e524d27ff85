package main

import (
	"fmt"
	"mediagen/bench/internal/proc"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"mediagen/bench/load"
)

// ms renders a duration in milliseconds with about three significant digits.
func ms(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v < 10:
		return strconv.FormatFloat(v, 'f', 3, 64)
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
}

func perSec(v float64) string {
	if v <= 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// note sums up what went wrong in a run: error statuses, an error sample, a search verdict.
func note(r *row) string {
	res := r.Result
	var parts []string
	if r.Verdict != "" {
		parts = append(parts, r.Verdict)
	}
	if res.Errors > 0 {
		var codes []int
		for c := range res.Statuses {
			codes = append(codes, c)
		}
		slices.Sort(codes)
		var sc []string
		for _, c := range codes {
			sc = append(sc, fmt.Sprintf("%d×%d", c, res.Statuses[c]))
		}
		parts = append(parts, "statuses "+strings.Join(sc, " "), "e.g. "+shorten(res.ErrorSample, 90))
	}
	if res.Mode == load.Open && !res.Sustained() && r.Verdict == "" {
		parts = append(parts, "rate NOT sustained")
	}
	return strings.Join(parts, "; ")
}

func shorten(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// report prints the table and, per store, the figures the DESIGN budgets talk about.
func (b *bench) report() {
	w := b.out
	fmt.Fprintf(w, "\nmediagen API benchmark — run %s, %d s per measurement (+%v warmup), open-loop rate %.0f/s (create %.0f/s), closed loop %d workers\n",
		b.runID, int(b.o.duration.Seconds()), b.o.warmup, b.o.rate, b.o.createRate, b.o.concurrency)
	fmt.Fprintln(w, "latencies in ms; open loop measures from each request's due time (queueing included), closed loop from the actual send")
	fmt.Fprintf(w, "machine: %d cores, 1-minute load average %.2f before the run and %.2f after (the run itself adds about 2)\n",
		runtime.NumCPU(), b.loadBefore, proc.LoadAvg())
	if b.roleNote != "" {
		fmt.Fprintln(w, b.roleNote)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tSTORE\tMODE\tRATE/s\tACHIEVED/s\tP50\tP99\tP99.9\tMAX\tSVC-P99\tLAG-P99\tSENT\tERR\tDROP\tCPU srv+gen\tSRV-µs/req\tNOTE")
	for _, r := range b.rows {
		store := r.Store
		if r.Target == "bare" {
			store = "(" + r.Store + " run)"
		}
		if r.Result == nil {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\tskipped: %s\n", r.Target, store, r.Mode, perSec(r.Rate), shorten(r.Skipped, 70))
			continue
		}
		res := r.Result
		lag := "-"
		if res.Mode == load.Open {
			lag = ms(res.StartLag.P99)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%.2f+%.2f\t%s\t%s\n",
			r.Target, store, r.Mode, perSec(r.Rate), perSec(res.Throughput),
			ms(res.Latency.P50), ms(res.Latency.P99), ms(res.Latency.P999), ms(res.Latency.Max), ms(res.Service.P99), lag,
			res.Sent, res.Errors, res.Dropped, r.ServerCPU, r.BenchCPU, cpuPerReq(r), note(r))
	}
	tw.Flush()

	for _, st := range b.stores {
		fmt.Fprintf(w, "\n%s:\n", st.name)
		measured := false
		for _, r := range b.rows {
			measured = measured || r.Store == st.name
		}
		if st.err != nil && !measured {
			fmt.Fprintf(w, "  not measured: %v\n", st.err)
			continue
		}
		if st.err != nil {
			fmt.Fprintf(w, "  run stopped early: %v\n", st.err)
		}
		if st.videoErr != "" {
			fmt.Fprintf(w, "  %s — the video rows are skipped\n", st.videoErr)
		} else {
			fmt.Fprintf(w, "  %d tasks seeded for GET /v1/videos/{id}\n", len(st.ids))
		}
		b.summary(st)
		if st.rss > 0 {
			fmt.Fprintf(w, "  mediagen resident memory after the run: %.0f MiB\n", st.rss)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "CPU srv+gen: cores used on average by the server process and by this load generator (%d cores on this machine, shared by both).\n", runtime.NumCPU())
	fmt.Fprintln(w, "SRV-µs/req: server CPU time per OK response. SVC-P99: p99 from the actual send (server + connection only).")
	fmt.Fprintln(w, "LAG-P99: how late requests started after their due time (pacer lateness + waiting for a free slot); it is part of the open-loop latency.")
}

func (b *bench) find(store, target, mode string) *load.Result {
	for _, r := range b.rows {
		if r.Store == store && r.Target == target && r.Mode == mode && r.Result != nil {
			return r.Result
		}
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// cpuPerReq is the server's CPU time per OK response, in microseconds.
func cpuPerReq(r *row) string {
	if r.Result == nil || r.Result.Throughput <= 0 || r.ServerCPU <= 0 {
		return "-"
	}
	return strconv.FormatFloat(r.ServerCPU/r.Result.Throughput*1e6, 'f', 0, 64)
}

func signedMs(d time.Duration) string {
	if d < 0 {
		return "-" + ms(-d)
	}
	return "+" + ms(d)
}

func (b *bench) findRow(store, target, mode string) *row {
	for _, r := range b.rows {
		if r.Store == store && r.Target == target && r.Mode == mode && r.Result != nil {
			return r
		}
	}
	return nil
}

func (b *bench) summary(st *storeRun) {
	w := b.out
	bareClosed := b.findRow(st.name, "bare", "closed")
	bareOpen := b.find(st.name, "bare", "open")
	for _, name := range []string{"GET /v1/videos/{id}", "GET /v1/billing/balance"} {
		closedRow, open := b.findRow(st.name, name, "closed"), b.find(st.name, name, "open")
		isTask := strings.Contains(name, "videos")
		if closedRow != nil && bareClosed != nil && bareClosed.Result.Throughput > 0 {
			closed := closedRow.Result
			ratio := closed.Throughput / bareClosed.Result.Throughput
			fmt.Fprintf(w, "  %s max throughput %.0f/s = %.2f × bare (%.0f/s)", name, closed.Throughput, ratio, bareClosed.Result.Throughput)
			if isTask {
				fmt.Fprintf(w, "; DESIGN ≥ 0.70: %s", verdict(ratio >= 0.70 && closed.Errors == 0))
			}
			fmt.Fprintf(w, "\n      server CPU per request %s µs (bare %s µs)\n", cpuPerReq(closedRow), cpuPerReq(bareClosed))
		}
		if open != nil {
			fmt.Fprintf(w, "  %s at %.0f/s: p50 %s, p99 %s, p99.9 %s ms from the due time; p99 %s ms from the send",
				name, open.Rate, ms(open.Latency.P50), ms(open.Latency.P99), ms(open.Latency.P999), ms(open.Service.P99))
			if bareOpen != nil {
				fmt.Fprintf(w, "\n      bare at the same rate: p99 %s ms (%s ms from the send): %s ms added",
					ms(bareOpen.Latency.P99), ms(bareOpen.Service.P99), signedMs(open.Latency.P99-bareOpen.Latency.P99))
			}
			if isTask {
				ok := open.Sustained() && open.Latency.P99 < b.o.readSLO
				fmt.Fprintf(w, "; DESIGN p99 < %s ms: %s", ms(b.o.readSLO), verdict(ok))
				if !ok && bareOpen != nil && open.Sustained() && open.Latency.P99-bareOpen.Latency.P99 < b.o.readSLO {
					if open.Latency.P99 < bareOpen.Latency.P99 {
						fmt.Fprint(w, " (bare's own p99 was higher: noise dominates, rerun on a quiet machine)")
					} else {
						fmt.Fprint(w, " (but within it as latency added over bare)")
					}
				}
			}
			if !open.Sustained() {
				fmt.Fprintf(w, " — rate NOT sustained (achieved %.0f/s, %d errors, %d dropped)", open.Throughput, open.Errors, open.Dropped)
			}
			fmt.Fprintln(w)
		}
	}
	create := "POST /v1/videos"
	if open := b.find(st.name, create, "open"); open != nil {
		ok := open.Sustained() && open.Latency.P99 < b.o.createSLO
		fmt.Fprintf(w, "  %s at %.0f/s: p50 %s, p99 %s, p99.9 %s ms; DESIGN p99 < %s ms: %s", create, open.Rate,
			ms(open.Latency.P50), ms(open.Latency.P99), ms(open.Latency.P999), ms(b.o.createSLO), verdict(ok))
		if !open.Sustained() {
			fmt.Fprintf(w, " — rate NOT sustained (achieved %.0f/s, %d errors, %d dropped)", open.Throughput, open.Errors, open.Dropped)
		}
		fmt.Fprintln(w)
	}
	many := "POST /v1/videos, 100 keys"
	if open := b.find(st.name, many, "open"); open != nil {
		fmt.Fprintf(w, "  %s at %.0f/s: p50 %s, p99 %s, p99.9 %s ms", many, open.Rate, ms(open.Latency.P50), ms(open.Latency.P99), ms(open.Latency.P999))
		if !open.Sustained() {
			fmt.Fprintf(w, " — rate NOT sustained (achieved %.0f/s, %d errors, %d dropped)", open.Throughput, open.Errors, open.Dropped)
		}
		fmt.Fprintln(w)
	}
	if r := b.findRow(st.name, many, "closed"); r != nil {
		fmt.Fprintf(w, "  %s max throughput (closed loop, %d workers): %.0f/s\n", many, b.o.concurrency, r.Result.Throughput)
	}
	if s := st.search; s != nil {
		fmt.Fprintf(w, "  %s max throughput (closed loop, %d workers): %.0f/s; ", create, b.o.concurrency, s.closedPeak)
		switch {
		case s.best > 0 && s.failing > 0:
			fmt.Fprintf(w, "max sustainable open-loop rate ≈ %.0f/s (p99 %s ms; %.0f/s failed)\n", s.best, ms(s.bestP99), s.failing)
		case s.best > 0:
			fmt.Fprintf(w, "max sustainable open-loop rate ≥ %.0f/s (p99 %s ms; nothing tested failed)\n", s.best, ms(s.bestP99))
		default:
			fmt.Fprintf(w, "no open-loop rate tested held up (lowest failing %.0f/s)\n", s.failing)
		}
		fmt.Fprintf(w, "      (sustainable: every request answered OK, no backlog after the window, p99 ≤ %s ms)\n", ms(b.o.createSLO))
	}
}
