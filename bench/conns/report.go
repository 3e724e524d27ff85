package main

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"

	"mediagen/bench/internal/proc"
	"mediagen/bench/load"
)

// The targets (issue 25, part 3).
const (
	targetP99   = 50 * time.Millisecond
	targetRSSMB = 300 // megabytes, as the issue states it
)

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

func lat(r load.Result) string {
	if r.OK == 0 {
		return "no answer"
	}
	return ms(r.Latency.P50) + " · " + ms(r.Latency.P99) + " · " + ms(r.Latency.Max)
}

// refused is what the well-behaved client did not get as a 200: errors, unexpected
// statuses and requests that could not even start.
func refused(r load.Result) string {
	n := r.Errors + r.Dropped
	if n == 0 {
		return "0"
	}
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(r.Statuses)) {
		if code != 200 {
			parts = append(parts, fmt.Sprintf("%d×%d", r.Statuses[code], code))
		}
	}
	if r.Dropped > 0 {
		parts = append(parts, fmt.Sprintf("%d dropped", r.Dropped))
	}
	s := fmt.Sprintf("%d (%s)", n, strings.Join(parts, ", "))
	if r.ErrorSample != "" {
		s += ": " + r.ErrorSample
	}
	return s
}

func (b *bench) report() {
	w := b.out
	fmt.Fprintf(w, "\nbench/conns — %s, %d cores, load average %.2f at the end\n", time.Now().Format("2006-01-02 15:04"), runtime.NumCPU(), proc.LoadAvg())
	if b.srv != nil {
		fmt.Fprintf(w, "server: mediagen serve %s(SQLite, sandbox), %d stored results of %d bytes; attackers from 127.0.0.2–127.0.0.%d (uploads from the first %d) at %.0f sockets/s (nice 19); well-behaved client from 127.0.0.1 at %.0f requests/s to each target\n",
			strings.Join(append(b.o.serveArgs, ""), " "), len(b.links), b.linkSize, 1+b.o.attackers, b.o.uploadAttackers, b.o.ramp, b.o.rate)
	}
	fmt.Fprintf(w, "sizes: %d stalled downloads + %d slow uploads, then %d header sockets; then %d input_reference uploads of %d bytes at %d B/s + %d stalled after 64 KiB; then %d admin connections with unfinished headers from %d address(es), reopened; %v per attack phase; operator calls at %.0f/s; phases: %s\n\n",
		b.o.stalled, b.o.uploads, b.o.headers, b.o.pacedUploads, b.o.uploadBytes, b.o.uploadRate, b.o.stalledUploads,
		b.o.adminSlowloris, b.o.adminAttackers, b.o.hold, b.o.adminRate, strings.Join(slices.DeleteFunc(slices.Clone(allPhases), func(p string) bool { return !b.o.phases[p] }), ", "))
	fmt.Fprintf(w, "| phase | /healthz p50 · p99 · max (ms) | GET /v1/videos/{id} p50 · p99 · max (ms) | operator GET /admin/v1/whoami, new connection, p50 · p99 · max (ms) | p99 from the send · the client's start lag p99 (ms) | well-behaved requests not answered 200 (healthz / video / operator) | server VmRSS peak · end (MiB) | VmHWM (MiB) | server fds peak · end |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range b.results {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s · %s, %s · %s | %s / %s / %s | %.0f · %.0f | %.0f | %d · %d |\n", r.name, lat(r.healthz), lat(r.video), lat(r.admin),
			ms(r.healthz.Service.P99), ms(r.healthz.StartLag.P99), ms(r.video.Service.P99), ms(r.video.StartLag.P99),
			refused(r.healthz), refused(r.video), refused(r.admin), r.rssPeak, r.rssEnd, r.hwm, r.fdsPeak, r.fdsEnd)
	}
	fmt.Fprintln(w)
	for _, r := range b.results {
		if r.attack == nil {
			continue
		}
		st := r.attack
		var opened []string
		for _, k := range slices.Sorted(maps.Keys(st.Opened)) {
			opened = append(opened, fmt.Sprintf("%d %ss", st.Opened[k], k))
		}
		fmt.Fprintf(w, "- %s: sent %s; %d connects failed", r.name, strings.Join(opened, ", "), st.DialErrs)
		if st.FirstErr != "" {
			fmt.Fprintf(w, " (%s)", st.FirstErr)
		}
		if st.Opened["slow upload"] > 0 {
			fmt.Fprintf(w, "; slow uploads cut by the server: %d (median %v after the phase began), still open at the end: %d",
				len(st.UploadCut), median(st.UploadCut).Round(100*time.Millisecond), st.UploadsAtEnd)
		}
		for _, kind := range slices.Sorted(maps.Keys(st.Uploads)) {
			var as []string
			for _, k := range slices.Sorted(maps.Keys(st.Uploads[kind])) {
				as = append(as, fmt.Sprintf("%s: %d", k, st.Uploads[kind][k]))
			}
			took := slices.Clone(st.UploadTook[kind])
			slices.Sort(took)
			fmt.Fprintf(w, "; %ss answered %s, after (median · max) %v · %v", kind, strings.Join(as, ", "),
				median(took).Round(100*time.Millisecond), took[len(took)-1].Round(100*time.Millisecond))
		}
		if len(st.AdminAnswers) > 0 {
			var as []string
			for _, k := range slices.Sorted(maps.Keys(st.AdminAnswers)) {
				as = append(as, fmt.Sprintf("%s: %d", k, st.AdminAnswers[k]))
			}
			fmt.Fprintf(w, "; how the admin connections ended: %s", strings.Join(as, ", "))
		}
		if len(st.HeaderAnswers) > 0 {
			var as []string
			for _, k := range slices.Sorted(maps.Keys(st.HeaderAnswers)) {
				as = append(as, fmt.Sprintf("%s: %d", k, st.HeaderAnswers[k]))
			}
			sent := slices.Clone(st.HeaderBodySent)
			slices.Sort(sent)
			fmt.Fprintf(w, "; what each socket read back: %s; header bytes the kernel took (median · max): %d · %d",
				strings.Join(as, ", "), sent[len(sent)/2], sent[len(sent)-1])
		}
		fmt.Fprintln(w)
	}
	b.reportCounters()
	b.verdict()
}

func (b *bench) reportCounters() {
	var have []*phaseResult
	for _, r := range b.results {
		if r.counters != nil {
			have = append(have, r)
		}
	}
	w := b.out
	if len(have) == 0 {
		fmt.Fprintf(w, "\nthe server has none of the connection series (a server without the edge's bounds)\n")
		return
	}
	fmt.Fprintf(w, "\nthe server's own figures over each phase (counters: the change; gauges: at the end)\n\n| series |")
	for _, r := range have {
		fmt.Fprintf(w, " %s |", r.name)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(have)))
	for i, c := range have[0].counters {
		fmt.Fprintf(w, "| `%s` |", c.name)
		for _, r := range have {
			fmt.Fprintf(w, " %.0f |", r.counters[i].value)
		}
		fmt.Fprintln(w)
	}
}

func (b *bench) verdict() {
	var worst time.Duration
	var bad int64
	var hwm float64
	for _, r := range b.results {
		for _, x := range []load.Result{r.healthz, r.video, r.admin} {
			worst = max(worst, x.Latency.P99)
			bad += x.Errors + x.Dropped
		}
		hwm = max(hwm, r.hwm)
	}
	mb := hwm * 1.048576
	check := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	fmt.Fprintf(b.out, "\ntargets: well-behaved p99 ≤ %v: %s (worst %s ms); server RSS ≤ %d MB: %s (VmHWM %.0f MB = %.0f MiB); nothing refused to the well-behaved client: %s (%d)\n",
		targetP99, check(worst <= targetP99), ms(worst), targetRSSMB, check(mb <= targetRSSMB), mb, hwm, check(bad == 0), bad)
}
