package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"mediagen/internal/apidoc"
)

// TestDocsAdminCurlExamplesRun runs every curl example of docs/admin.md, in order, against a
// service with --admin-listen and an owner token made by the CLI: each must succeed, and each
// exchange must fit docs/admin-openapi.yaml. $KEY_ID, $TOKEN_ID and $GROUP_ID stand for the ids
// the earlier creations answered.
func TestDocsAdminCurlExamplesRun(t *testing.T) {
	t.Parallel()
	doc, err := apidoc.Load("../../docs/admin-openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../../docs/admin.md")
	if err != nil {
		t.Fatal(err)
	}
	var curls []string
	in, lang := false, ""
	for _, line := range strings.Split(string(raw), "\n") {
		trimmed := strings.TrimSpace(line)
		if m := fenceRE.FindStringSubmatch(trimmed); m != nil && !in {
			in, lang = true, m[1]
			continue
		}
		if in && trimmed == "```" {
			in = false
			continue
		}
		if !in || lang != "sh" {
			continue
		}
		switch {
		case strings.HasPrefix(trimmed, "curl "):
			curls = append(curls, trimmed)
		case len(curls) > 0 && strings.HasSuffix(curls[len(curls)-1], "\\"):
			curls[len(curls)-1] = strings.TrimSuffix(curls[len(curls)-1], "\\") + " " + trimmed
		}
	}
	if len(curls) < 12 {
		t.Fatalf("found %d curl examples in docs/admin.md; the parser lost them", len(curls))
	}
	dir := t.TempDir()
	token := reAdminToken.FindString(adminAs(t, dir, "root", "token", "create", "--name", "docs", "--role", "owner"))
	m, _ := startMain(t, dir, "--admin-listen", "127.0.0.1:0", "--log-level", "warn")
	vars := map[string]string{"ADMIN_TOKEN": token}
	urlRE := regexp.MustCompile(`http://127\.0\.0\.1:9091(/admin/v1/[^\s"']+)`)
	for _, c := range curls {
		for name, v := range vars {
			c = strings.ReplaceAll(c, "$"+name, v)
		}
		if strings.Contains(c, "$") {
			t.Fatalf("%s: a variable is not set by an earlier example", c)
		}
		args := shellSplit(c)
		u := urlRE.FindStringSubmatch(c)
		if u == nil {
			t.Fatalf("%s: no admin URL", c)
		}
		method, body, explicit := "GET", "", false
		header := http.Header{}
		for i := 0; i < len(args); i++ {
			switch args[i] {
			case "-X":
				method, explicit = args[i+1], true
				i++
			case "-d":
				body = args[i+1]
				if !explicit { // as curl: -d means POST unless -X names the method
					method = "POST"
				}
				i++
			case "-H":
				k, v, _ := strings.Cut(args[i+1], ":")
				header.Set(k, strings.TrimSpace(v))
				i++
			}
		}
		if body != "" {
			header.Set("Content-Type", "application/x-www-form-urlencoded") // what curl -d sends
		}
		req, _ := http.NewRequest(method, m.AdminURL()+u[1], strings.NewReader(body))
		req.Header = header
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode >= 300 {
			t.Errorf("%s\n→ %d %s", c, res.StatusCode, got)
			continue
		}
		ex := apidoc.Exchange{Method: method, Path: u[1], ReqHeader: header.Clone(), ReqBody: []byte(body), Status: res.StatusCode,
			RespHeader: res.Header, RespBody: got}
		ex.ReqHeader.Set("Content-Type", "application/json") // the document describes JSON bodies; curl labels them otherwise
		if err := doc.CheckExchange(ex); err != nil {
			t.Errorf("%s: %v", c, err)
		}
		var obj struct{ Object, ID string }
		_ = json.Unmarshal(got, &obj)
		if method == "POST" && !strings.HasSuffix(u[1], "/revoke") {
			switch obj.Object {
			case "api_key":
				vars["KEY_ID"] = obj.ID
			case "admin_token":
				vars["TOKEN_ID"] = obj.ID
			case "asset_group":
				vars["GROUP_ID"] = obj.ID
			}
		}
	}
}
