// Command routing measures routing across upstream accounts: it runs the service's routing
// test (cmd/mediagen TestRouteAcrossFourAccountsMakesOnePaidJobPerTask) with -tasks tasks —
// one alias over four fake Ark accounts: one refusing its key (401), one rate-limiting every
// create (429, Retry-After 1 s), one full (max_in_flight 2), one losing every create's answer
// — and prints its figures: tasks per account (paid jobs counted on each fake), fallbacks by
// reason, tasks that left an account, slot waits, and the wall time. The test itself fails
// if any task made other than exactly one paid job, if any task did not complete, or if the
// ledger or the charges are off; this command prints that verdict too.
//
// -mix picks the accounts: ark (the test above), ark-kling (TestRouteAcrossArkAndKlingFallsBackAndSpillsOver:
// [ark-broken, ark-full, kling-main], the Kling account losing every create's answer) or
// ark-dashscope (TestRouteAcrossArkAndDashScopeFallsBackAndSpillsOver: two Ark and two DashScope
// accounts, a refused key, a DashScope account dropping every create before a job, a full Ark
// account, a working DashScope account). -test runs any other routing test of the same shape.
//
// six-kinds (TestRouteAcrossSixKindsMakesOnePaidJobPerTask): one alias over six accounts of six
// kinds — Ark refusing its key, MiniMax answering every create 429, DashScope Wan full
// (max_in_flight 1), Kling losing every create's answer, Gemini Veo and Runway working — with
// tasks of 5 s and 10 s (no duration is made by all six), each given only the accounts that can
// make it; it also checks the operator's cost per account in each kind's unit.
//
//	go run ./bench/routing [-tasks 500] [-mix ark|ark-kling|ark-dashscope|ark-minimax|ark-gemini|ark-runway|ark-vertex|six-kinds] [-test NAME]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

func main() {
	tasks := flag.Int("tasks", 500, "tasks through the routed alias")
	mix := flag.String("mix", "ark", "the accounts: ark (four Ark accounts), ark-kling, ark-dashscope, ark-minimax, ark-gemini, ark-runway, ark-vertex or six-kinds")
	other := flag.String("test", "", "a routing test to run instead of -mix's")
	flag.Parse()
	test := map[string]string{"ark": "TestRouteAcrossFourAccountsMakesOnePaidJobPerTask",
		"ark-kling":     "TestRouteAcrossArkAndKlingFallsBackAndSpillsOver",
		"ark-dashscope": "TestRouteAcrossArkAndDashScopeFallsBackAndSpillsOver",
		"ark-minimax":   "TestRouteAcrossMiniMaxAndArkFallsBackWithOnePaidJobPerTask",
		"ark-gemini":    "TestRouteAcrossGeminiAndArkFallsBackWithOnePaidJobPerTask",
		"ark-runway":    "TestRouteAcrossRunwayAndArkFallsBackWithOnePaidJobPerTask",
		"ark-vertex":    "TestRouteAcrossVertexAndArkFallsBackWithOnePaidJobPerTask",
		"six-kinds":     "TestRouteAcrossSixKindsMakesOnePaidJobPerTask"}[*mix]
	if *other != "" {
		test = *other
	}
	if test == "" {
		fmt.Fprintln(os.Stderr, "-mix: want ark, ark-kling, ark-dashscope, ark-minimax, ark-gemini, ark-runway, ark-vertex or six-kinds")
		os.Exit(2)
	}
	cmd := exec.Command("go", "test", "./cmd/mediagen/", "-run", "^"+test+"$",
		"-count=1", "-v", "-timeout", "60m")
	cmd.Env = append(os.Environ(), "MEDIAGEN_ROUTE_TASKS="+strconv.Itoa(*tasks))
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sc := bufio.NewScanner(out)
	printing, failed := false, false
	var all []string
	for sc.Scan() {
		line := sc.Text()
		all = append(all, line)
		switch {
		case strings.Contains(line, "ROUTING "):
			printing = true
			_, rest, _ := strings.Cut(line, "ROUTING ")
			fmt.Println(rest)
			continue
		case strings.HasPrefix(line, "--- FAIL"), strings.HasPrefix(line, "FAIL"):
			if !failed {
				fmt.Println(strings.Join(all, "\n"))
			}
			failed = true
			printing = false
			continue
		case strings.HasPrefix(line, "--- PASS"), strings.HasPrefix(line, "PASS"), strings.HasPrefix(line, "ok "):
			printing = false
		}
		if printing || failed {
			fmt.Println(strings.TrimSpace(line))
		}
	}
	err = cmd.Wait()
	switch {
	case err != nil || failed:
		fmt.Println("verdict: FAILED (see above)")
		os.Exit(1)
	default:
		fmt.Println("verdict: every task completed with exactly one paid upstream job; charges and ledger exact")
	}
}
