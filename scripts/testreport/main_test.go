package main

import (
	"strings"
	"testing"
)

// stream is `go test -json` output of two packages: one passing with the conformance suite on
// two drivers, one with a failed test, a passing test, and a test a panic left unended.
const stream = `{"Action":"start","Package":"m/store"}
{"Action":"run","Package":"m/store","Test":"TestConformanceA"}
{"Action":"output","Package":"m/store","Test":"TestConformanceA/Keys","Output":"=== RUN   TestConformanceA/Keys\n"}
{"Action":"pass","Package":"m/store","Test":"TestConformanceA/Keys","Elapsed":0.1}
{"Action":"pass","Package":"m/store","Test":"TestConformanceA/Money","Elapsed":0.2}
{"Action":"pass","Package":"m/store","Test":"TestConformanceA","Elapsed":0}
{"Action":"pass","Package":"m/store","Test":"TestConformanceB/Keys","Elapsed":0.1}
{"Action":"fail","Package":"m/store","Test":"TestConformanceB/Money","Elapsed":0.1}
{"Action":"output","Package":"m/store","Output":"ok  \tm/store\t1.500s\n"}
{"Action":"pass","Package":"m/store","Elapsed":1.5}
{"Action":"output","Package":"m/api","Test":"TestGood","Output":"quiet line of a passing test\n"}
{"Action":"pass","Package":"m/api","Test":"TestGood","Elapsed":7.25}
{"Action":"output","Package":"m/api","Test":"TestBad","Output":"    api_test.go:9: want 2, got 3\n"}
{"Action":"output","Package":"m/api","Test":"TestBad","Output":"--- FAIL: TestBad (0.50s)\n"}
{"Action":"fail","Package":"m/api","Test":"TestBad","Elapsed":0.5}
{"Action":"output","Package":"m/api","Test":"TestHung","Output":"panic: test timed out after 15m0s\n"}
{"Action":"output","Package":"m/api","Output":"FAIL\tm/api\t900.0s\n"}
{"Action":"fail","Package":"m/api","Elapsed":900}
not an event: a build error printed plainly
`

func TestReportShowsFailuresSummariesAndSlowestTests(t *testing.T) {
	r := newReport()
	var out strings.Builder
	if err := r.read(strings.NewReader(stream), &out); err != nil {
		t.Fatal(err)
	}
	r.summary(&out)
	got := out.String()
	for _, want := range []string{
		"ok  \tm/store\t1.500s\n",
		"api_test.go:9: want 2, got 3\n--- FAIL: TestBad (0.50s)\n",
		"panic: test timed out after 15m0s\n",
		"FAIL\tm/api\t900.0s\n",
		"not an event: a build error printed plainly\n",
		"TestConformanceA                   2 passed, 0 failed, 0 skipped",
		"TestConformanceB                   1 passed, 1 failed, 0 skipped",
		"7.3s  m/api TestGood",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "quiet line of a passing test") || strings.Contains(got, "=== RUN   TestConformanceA/Keys") {
		t.Errorf("the report prints a passing test's output:\n%s", got)
	}
	if !r.failed {
		t.Error("a failed test left the report passing")
	}
}

func TestReportOfPassingPackagesIsNotFailed(t *testing.T) {
	r := newReport()
	var out strings.Builder
	if err := r.read(strings.NewReader(`{"Action":"pass","Package":"m/x","Test":"TestA","Elapsed":1}
{"Action":"pass","Package":"m/x","Elapsed":1}
`), &out); err != nil {
		t.Fatal(err)
	}
	if r.failed || out.String() != "ok  \tm/x\t1.000s\n" {
		t.Errorf("failed=%v, printed %q", r.failed, out.String())
	}
}
