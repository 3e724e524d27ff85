package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"mediagen/internal/apidoc"
)

// The answers the docs show must be answers docs/openapi.yaml documents, so that a renamed or
// removed field cannot live on in a sample:
//
//   - a ```json block whose info string is "response STATUS METHOD PATH" is the body of that
//     answer (PATH as a concrete path or the template, e.g. /v1/videos/{task_id});
//   - a ```http block whose info string is "response METHOD PATH" is a whole answer: status
//     line, headers, blank line, body;
//   - under a curl command of a ```sh block, the comment lines that show its answer
//     ("# 200 {…}", "# HTTP/1.1 502 …" then "# {…}", or "# {…}" for a 200) are checked the same
//     way; a bare … there (an elided number) is read as 0.
//
// Every other ```json block must be a request (docs_examples_test.go runs those).

type docResponse struct {
	where        string
	method, path string
	status       int
	contentType  string
	body         string
}

var (
	statusLineRE = regexp.MustCompile(`^HTTP/\d(?:\.\d)? (\d{3})\b`)
	statusBodyRE = regexp.MustCompile(`^(\d{3}) ([{\[].*)$`)
	headerLineRE = regexp.MustCompile(`^([A-Za-z0-9-]+): (.*)$`)
	bareEllipsis = regexp.MustCompile(`([:\[,]\s*)…`)
)

func collectDocResponses(t *testing.T) []docResponse {
	t.Helper()
	var out []docResponse
	for _, b := range docBlocks(t) {
		f := strings.Fields(b.info)
		switch {
		case b.lang == "json" && len(f) == 4 && f[0] == "response":
			status, err := strconv.Atoi(f[1])
			if err != nil {
				t.Errorf("%s: info %q: want response STATUS METHOD PATH", b.where(), b.info)
				continue
			}
			out = append(out, docResponse{where: b.where(), method: f[2], path: f[3], status: status, contentType: "application/json", body: b.text})
		case b.lang == "json" && len(f) >= 2 && (f[0] == "POST" || f[0] == "GET"):
			// a request: run by TestDocsExamplesRunOffline
		case b.lang == "json":
			t.Errorf("%s: a json block is a request (```json POST /v1/…) or an answer (```json response 200 GET /v1/…); this one is neither", b.where())
		case b.lang == "http" && len(f) == 3 && f[0] == "response":
			r := parseShownAnswer(strings.Split(b.text, "\n"))
			r.where, r.method, r.path = b.where(), f[1], f[2]
			out = append(out, r)
		case b.lang == "sh":
			out = append(out, shownCurlAnswers(b)...)
		}
	}
	return out
}

// parseShownAnswer reads an answer written as lines: an optional status line (or a status
// before the body on its line), headers, and the body.
func parseShownAnswer(lines []string) docResponse {
	r := docResponse{status: 200, contentType: "application/json"}
	var body []string
	for _, line := range lines {
		l := strings.TrimSpace(line)
		if len(body) > 0 {
			body = append(body, l)
			continue
		}
		if m := statusLineRE.FindStringSubmatch(l); m != nil {
			r.status, _ = strconv.Atoi(m[1])
			continue
		}
		if m := statusBodyRE.FindStringSubmatch(l); m != nil {
			r.status, _ = strconv.Atoi(m[1])
			body = append(body, m[2])
			continue
		}
		if m := headerLineRE.FindStringSubmatch(l); m != nil {
			if strings.EqualFold(m[1], "Content-Type") {
				r.contentType = m[2]
			}
			continue
		}
		if strings.HasPrefix(l, "{") || strings.HasPrefix(l, "[") {
			body = append(body, l)
		}
	}
	r.body = strings.Join(body, "\n")
	return r
}

// shownCurlAnswers returns the answers shown in comments right below the curl commands of a
// block.
func shownCurlAnswers(b docBlock) []docResponse {
	var out []docResponse
	lines := strings.Split(b.text, "\n")
	for i := 0; i < len(lines); i++ {
		c := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(c, "curl ") {
			continue
		}
		start := i
		for i+1 < len(lines) && strings.HasSuffix(strings.TrimSpace(lines[i]), "\\") || i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "-d '") {
			i++
			c += " " + strings.TrimSpace(lines[i])
		}
		// The -d body may run over several lines up to its closing quote.
		for strings.Count(c, "'")%2 == 1 && i+1 < len(lines) {
			i++
			c += " " + strings.TrimSpace(lines[i])
		}
		m := curlURLRE.FindStringSubmatch(c)
		if m == nil {
			continue
		}
		var shown []string
		for i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "#") {
			i++
			shown = append(shown, bareEllipsis.ReplaceAllString(strings.TrimPrefix(strings.TrimSpace(lines[i]), "#"), "${1}0"))
		}
		r := parseShownAnswer(shown)
		if r.body == "" {
			continue
		}
		r.where = b.file + ":" + strconv.Itoa(b.line+1+start)
		r.method, r.path = "GET", m[1]
		if curlBody.MatchString(c) || strings.Contains(c, "-X POST") {
			r.method = "POST"
		}
		out = append(out, r)
	}
	return out
}

func TestDocsResponsesMatchOpenAPI(t *testing.T) {
	t.Parallel()
	doc, err := apidoc.Load("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	responses := collectDocResponses(t)
	if len(responses) < 10 {
		t.Fatalf("found %d sample answers in the docs; the parser lost them", len(responses))
	}
	for _, r := range responses {
		t.Logf("%s: %d %s %s", r.where, r.status, r.method, r.path)
		if err := doc.ValidateResponseBody(r.method, r.path, r.status, r.contentType, []byte(r.body)); err != nil {
			t.Errorf("%s: the answer shown is not what docs/openapi.yaml documents: %v", r.where, err)
		}
	}
}
