// Command testreport runs `go test -json` with the arguments it is given and prints what make
// test shows: a line per package as go test prints it, the whole output of every test that
// failed, the store conformance suite's results per driver, and the slowest tests (the budget
// of make test is a number someone chose: issue 29). It exits with go test's status.
//
// It replaces a second, verbose run of the conformance suite that only printed its names
// (about 50 s of make test): one run's events hold both.
//
//	go run ./scripts/testreport -count=1 ./...
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

func main() {
	cmd := exec.Command("go", append([]string{"test", "-json"}, os.Args[1:]...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	r := newReport()
	if err := r.read(out, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
	}
	err = cmd.Wait()
	r.summary(os.Stdout)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	case r.failed:
		os.Exit(1)
	}
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

type testKey struct{ pkg, test string }

type report struct {
	output  map[testKey][]string // output of tests still running, and of packages
	results map[testKey]string   // pass, fail or skip of each test
	elapsed map[testKey]float64
	failed  bool
}

func newReport() *report {
	return &report{output: map[testKey][]string{}, results: map[testKey]string{}, elapsed: map[testKey]float64{}}
}

// read consumes the event stream, printing each package's result as it ends and each failed
// test's output. A line that is not an event (go test prints some build errors plainly) is
// passed through.
func (r *report) read(in io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		r.add(e, w)
	}
	return sc.Err()
}

func (r *report) add(e event, w io.Writer) {
	k := testKey{e.Package, e.Test}
	switch e.Action {
	case "output", "build-output":
		r.output[k] = append(r.output[k], e.Output)
	case "pass", "skip":
		if e.Test == "" {
			r.endPackage(k, e, w)
			return
		}
		r.results[k], r.elapsed[k] = e.Action, e.Elapsed
		delete(r.output, k)
	case "fail", "build-fail":
		r.failed = true
		if e.Test == "" {
			r.endPackage(k, e, w)
			return
		}
		r.results[k], r.elapsed[k] = "fail", e.Elapsed
		// A parent's output holds its subtests' "--- FAIL" lines; each failed test prints its own.
		fmt.Fprint(w, strings.Join(r.output[k], ""))
		delete(r.output, k)
	}
}

// endPackage prints the package's line as go test does ("ok  pkg  1.2s", "FAIL pkg …"); a
// failed package's own output (a panic, a build error, TestMain) is printed before it.
func (r *report) endPackage(k testKey, e event, w io.Writer) {
	lines := r.output[k]
	delete(r.output, k)
	if e.Action == "fail" || e.Action == "build-fail" {
		// Tests that never ended (a panic elsewhere, the -timeout) print what they wrote.
		var unended []testKey
		for o := range r.output {
			if o.pkg == k.pkg {
				unended = append(unended, o)
			}
		}
		sort.Slice(unended, func(i, j int) bool { return unended[i].test < unended[j].test })
		for _, o := range unended {
			fmt.Fprint(w, strings.Join(r.output[o], ""))
			delete(r.output, o)
		}
		for _, l := range lines {
			if !strings.HasPrefix(l, "ok ") && !strings.HasPrefix(l, "PASS") {
				fmt.Fprint(w, l)
			}
		}
		return
	}
	// The package's last output line is go test's own summary ("ok  \tpkg\t1.2s").
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "ok ") || strings.HasPrefix(lines[i], "?") {
			fmt.Fprint(w, lines[i])
			return
		}
	}
	fmt.Fprintf(w, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
}

// summary prints the conformance suites per driver and the slowest tests.
func (r *report) summary(w io.Writer) {
	type suite struct{ pass, fail, skip int }
	suites := map[string]*suite{}
	for k, res := range r.results {
		top, sub, ok := strings.Cut(k.test, "/")
		if !ok || strings.Contains(sub, "/") || !strings.HasPrefix(top, "TestConformance") {
			continue
		}
		s := suites[top]
		if s == nil {
			s = &suite{}
			suites[top] = s
		}
		switch res {
		case "pass":
			s.pass++
		case "fail":
			s.fail++
		default:
			s.skip++
		}
	}
	if len(suites) > 0 {
		fmt.Fprintln(w, "conformance suites, per driver (internal/store/storetest, internal/blob):")
		names := make([]string, 0, len(suites))
		for n := range suites {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			s := suites[n]
			fmt.Fprintf(w, "  %-32s %3d passed, %d failed, %d skipped\n", n, s.pass, s.fail, s.skip)
		}
	}
	type timing struct {
		k       testKey
		elapsed float64
	}
	var top []timing
	for k, d := range r.elapsed {
		if !strings.Contains(k.test, "/") {
			top = append(top, timing{k, d})
		}
	}
	sort.Slice(top, func(i, j int) bool { return top[i].elapsed > top[j].elapsed })
	if len(top) > 10 {
		top = top[:10]
	}
	if len(top) > 0 {
		fmt.Fprintln(w, "slowest tests (running time, without the wait for a parallel slot):")
		for _, t := range top {
			fmt.Fprintf(w, "  %6s  %s %s\n", time.Duration(t.elapsed*float64(time.Second)).Round(100*time.Millisecond), t.k.pkg, t.k.test)
		}
	}
}
