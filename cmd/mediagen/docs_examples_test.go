package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/testkit"
)

// The documentation's examples are run against a service started as `make run` starts it
// (demo catalog, sandbox samples, no --fetch-allow), so that they stay copy-pasteable offline:
//
//   - every curl command of a ```sh block that calls http://127.0.0.1:8080/v1/… (the key
//     written $KEY or mg_…; lines with <placeholders> are skipped);
//   - every ```json block whose info string is a request line, e.g. "json POST /v1/videos",
//     optionally followed by expect=failed|expired (a video task's final status; default
//     completed; a failed speech request is its 502 answer) — $GROUP_ID and $ASSET_ID stand for the ids the previous examples made;
//   - every `mediagen video|speech|balance|assets|tour …` line of a ```sh block (lines with
//     … or <placeholders> are skipped; ./bin/mediagen counts as mediagen; a command shown
//     twice runs once), run in a scratch directory.
//
// Video tasks are waited for and must end in the expected state; asset creations must end
// Active; every exchange is also checked against docs/openapi.yaml.

type docExample struct {
	where        string
	method, path string
	body         string
	expect       string
	cli          []string
}

var (
	fenceRE   = regexp.MustCompile("^```(\\S*)\\s*(.*)$")
	curlURLRE = regexp.MustCompile(`http://127\.0\.0\.1:8080(/v1/\S+?)['"]?(\s|$)`)
	curlBody  = regexp.MustCompile(`(?s)-d '(.*?)'`)
	// trailingComment is a shell comment after a command (the docs' commands quote no #).
	trailingComment = regexp.MustCompile(`\s+#.*$`)
)

func collectDocExamples(t *testing.T) []docExample {
	t.Helper()
	files, _ := filepath.Glob("../../docs/*.md")
	files = append([]string{"../../README.md"}, files...)
	var out []docExample
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var lang, info string
		var block []string
		start, in := 0, false
		for i, line := range strings.Split(string(b), "\n") {
			m := fenceRE.FindStringSubmatch(strings.TrimSpace(line))
			if !in && m != nil {
				in, lang, info, block, start = true, m[1], m[2], nil, i+1
				continue
			}
			if in && strings.TrimSpace(line) == "```" {
				in = false
				where := filepath.Base(f) + ":" + strconv.Itoa(start)
				out = append(out, examplesOfBlock(where, lang, info, block)...)
				continue
			}
			if in {
				block = append(block, line)
			}
		}
	}
	return out
}

func examplesOfBlock(where, lang, info string, block []string) []docExample {
	var out []docExample
	switch lang {
	case "json":
		f := strings.Fields(info)
		if len(f) < 2 || (f[0] != "POST" && f[0] != "GET") {
			return nil
		}
		ex := docExample{where: where, method: f[0], path: f[1], body: strings.Join(block, "\n"), expect: "completed"}
		for _, opt := range f[2:] {
			if v, ok := strings.CutPrefix(opt, "expect="); ok {
				ex.expect = v
			}
		}
		out = append(out, ex)
	case "sh":
		var cmds []string
		for _, line := range block {
			// ./bin/mediagen is the binary `make build` makes: the same command.
			trimmed := strings.TrimPrefix(strings.TrimSpace(line), "./bin/")
			switch {
			case strings.HasPrefix(trimmed, "#"):
			case strings.HasPrefix(trimmed, "curl ") || strings.HasPrefix(trimmed, "mediagen "):
				cmds = append(cmds, trimmed)
			case len(cmds) > 0 && trimmed != "":
				cmds[len(cmds)-1] += "\n" + trimmed
			}
		}
		for _, c := range cmds {
			if strings.Contains(c, "<") || strings.Contains(c, "…") && !strings.Contains(c, "Bearer mg_…") {
				continue
			}
			if strings.HasPrefix(c, "mediagen ") {
				c = trailingComment.ReplaceAllString(c, "")
				args := shellSplit(strings.ReplaceAll(c, "\\\n", " "))[1:]
				switch args[0] {
				case "video", "speech", "balance", "assets", "tour":
					out = append(out, docExample{where: where, cli: args})
				}
				continue
			}
			m := curlURLRE.FindStringSubmatch(c)
			if m == nil {
				continue
			}
			ex := docExample{where: where, method: "GET", path: m[1], expect: "completed"}
			if bm := curlBody.FindStringSubmatch(c); bm != nil {
				ex.method, ex.body = "POST", bm[1]
			}
			switch {
			case strings.Contains(ex.body, "[sandbox:fail"):
				ex.expect = "failed"
			case strings.Contains(ex.body, "[sandbox:expire"):
				ex.expect = "expired"
			}
			out = append(out, ex)
		}
	}
	return out
}

// shellSplit splits a command line the way sh does for plain words and '…' or "…" quotes.
func shellSplit(s string) []string {
	var args []string
	var cur strings.Builder
	var quote rune
	inWord := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args
}

// startDocsServer starts the service the docs' examples run against, as `make run` starts it,
// and returns it with the examples. Eight workers: the examples' tasks (a few of them 1080p
// encodes) run side by side rather than queue behind four.
func startDocsServer(t *testing.T) (*Main, []docExample) {
	t.Helper()
	requireTools(t)
	examples := collectDocExamples(t)
	if len(examples) < 15 {
		t.Fatalf("found %d examples in the docs; the parser lost them", len(examples))
	}
	m, _ := startMain(t, t.TempDir(), "--sandbox-pace", "200ms", "--log-level", "warn", "--workers", "8")
	return m, examples
}

// TestDocsExamplesRunOffline runs the docs' HTTP examples; TestDocsCommandLinesRunOffline
// runs their command lines, each test with its own service: every example can be pasted alone
// (none needs what the other kind made), and a failure says which kind broke.
//
// It submits its examples before it calls t.Parallel, while the package's other tests wait
// for the sequential ones to end, and waits for their tasks in the parallel phase. Its
// longest task chain (the 10-bit production of video.md: a 1080p generation, then a 10-bit
// HEVC encode, one after the other) then starts in the first seconds of the run. As a
// parallel test from the start it got its slot after about 50 s and, sharing two cores with
// a dozen others, ended the whole package's run alone (bench/README.md#make-test).
func TestDocsExamplesRunOffline(t *testing.T) {
	m, examples := startDocsServer(t)
	e := &e2e{t: t, m: m, key: m.DemoKey}
	ids := map[string]string{}
	type pendingTask struct{ where, id, expect string }
	var pending []pendingTask
	for _, ex := range examples {
		if ex.cli != nil {
			continue
		}
		t.Logf("%s: %s %s", ex.where, ex.method, ex.path)
		body := strings.NewReplacer("$GROUP_ID", ids["group"], "$ASSET_ID", ids["asset"]).Replace(ex.body)
		status, b := e.call(ex.method, ex.path, body)
		if ex.path == "/v1/audio/speech" && ex.expect == "failed" {
			// Speech is synchronous: its failure is the answer itself.
			if status != 502 || !bytes.Contains(b, []byte(`"code":"speech_generation_failed"`)) {
				t.Errorf("%s: want the 502 speech failure, got %d %s", ex.where, status, b)
			}
			continue
		}
		if status < 200 || status > 299 {
			t.Errorf("%s: %s %s: %d %s", ex.where, ex.method, ex.path, status, b)
			continue
		}
		var answer struct {
			ID      string `json:"id"`
			AssetID string `json:"Id"`
		}
		_ = json.Unmarshal(b, &answer, json.RejectUnknownMembers(false))
		switch {
		case ex.method == "POST" && ex.path == "/v1/videos":
			// The tasks run side by side on the server's workers; they are waited for at the end.
			pending = append(pending, pendingTask{where: ex.where, id: answer.ID, expect: ex.expect})
		case strings.HasSuffix(ex.path, "/asset-groups/create"):
			ids["group"] = answer.AssetID
		case strings.HasSuffix(ex.path, "/assets/create"):
			ids["asset"] = answer.AssetID
			waitAssetActive(t, e, ex.path, answer.AssetID)
		}
	}
	t.Parallel()
	for _, p := range pending {
		if task := e.wait(p.id); task.Status != p.expect {
			t.Errorf("%s: task %s ended %s (%+v), want %s", p.where, p.id, task.Status, task.Error, p.expect)
		}
	}
}

func TestDocsCommandLinesRunOffline(t *testing.T) {
	t.Parallel()
	m, examples := startDocsServer(t)
	scratch := t.TempDir()
	// The commands run all at once: each is a command a reader can paste alone, and they wait
	// on the server's workers far more than they compute.
	var cli sync.WaitGroup
	defer cli.Wait()
	ran := map[string]bool{}
	for _, ex := range examples {
		if ex.cli == nil {
			continue
		}
		// A command shown on several pages (mediagen tour) runs once.
		key := strings.Join(ex.cli, "\x00")
		if ran[key] {
			continue
		}
		ran[key] = true
		t.Logf("%s: mediagen %s", ex.where, strings.Join(ex.cli, " "))
		cli.Go(func() { runDocCommand(t, m, scratch, ex) })
	}
	if len(ran) < 5 {
		t.Fatalf("found %d command lines in the docs; the parser lost them", len(ran))
	}
}

// runDocCommand runs one `mediagen …` line of the docs against m; files it makes go to scratch.
func runDocCommand(t *testing.T, m *Main, scratch string, ex docExample) {
	vars := map[string]string{"MEDIAGEN_API_KEY": m.DemoKey, "MEDIAGEN_BASE_URL": m.URL(), "MEDIAGEN_POLL_INTERVAL": "100ms"}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Files the command makes go to a scratch directory, also those the tour saves to its
	// default directory (relative: it would land in this package's source tree).
	args := append([]string(nil), ex.cli...)
	hasOutDir := false
	for i := range args {
		if i > 0 && (args[i-1] == "--out" || args[i-1] == "--out-dir") {
			args[i] = filepath.Join(scratch, args[i])
			hasOutDir = hasOutDir || args[i-1] == "--out-dir"
		}
	}
	if args[0] == "tour" && !hasOutDir {
		args = append(args, "--out-dir", filepath.Join(scratch, "mediagen-tour"))
	}
	if err := run(ctx, args, env(vars), &stdout, &stderr); err != nil {
		t.Errorf("%s: mediagen %s: %v\n%s%s", ex.where, strings.Join(ex.cli, " "), err, stdout.String(), stderr.String())
	}
}

func waitAssetActive(t *testing.T, e *e2e, createPath, id string) {
	t.Helper()
	get := strings.TrimSuffix(createPath, "create") + "get"
	testkit.WaitEvery(t, 100*time.Millisecond, time.Minute, fmt.Sprintf("asset %s not Active in time", id), func() bool {
		_, b := e.call("POST", get, `{"Id":"`+id+`"}`)
		if bytes.Contains(b, []byte(`"Status":"Failed"`)) {
			t.Fatalf("asset %s failed: %s", id, b)
		}
		return bytes.Contains(b, []byte(`"Status":"Active"`))
	})
}
