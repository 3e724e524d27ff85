package main

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	opadmin "mediagen/internal/admin"
	"mediagen/internal/catalog"
)

var videoSrc = regexp.MustCompile(`<video controls[^>]* src="([^"]+)"`)

// TestOperatorConsoleTaskPagePlaysTheResultFromThePublicAddress: the operator console on the
// admin listener shows a completed task's result as a <video> whose signed link is on the
// public address (the disk store's), the CSP allows that origin for media, and the link
// serves the video.
func TestOperatorConsoleTaskPagePlaysTheResultFromThePublicAddress(t *testing.T) {
	t.Parallel()
	e := startE2E(t, "--admin-listen", "127.0.0.1:0")
	svc := opadmin.New(opadmin.Config{Store: e.m.db, Catalog: func() *catalog.Catalog { return e.m.catalogs.Current() }})
	tok, err := svc.CreateToken(context.Background(), opadmin.CLIActor("t"), opadmin.TokenInput{Name: "support", Role: "viewer"})
	if err != nil {
		t.Fatal(err)
	}
	done := e.create(`{"model":"demo-video-fast","prompt":"a red kite over the sea","metadata":{"duration":4,"resolution":"480p"}}`)
	if got := e.wait(done); got.Status != "completed" {
		t.Fatalf("task %s: %+v", done, got)
	}

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	admin := e.m.AdminURL()
	req, _ := http.NewRequest("POST", admin+"/console/signin", strings.NewReader(url.Values{"secret": {tok.Secret}, "next": {"/console/"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", admin)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("sign in: %d", res.StatusCode)
	}
	res, err = c.Get(admin + "/console/tasks/" + done)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := videoSrc.FindStringSubmatch(string(body))
	if res.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("operator task page: %d, no <video>:\n%s", res.StatusCode, body)
	}
	src := strings.ReplaceAll(m[1], "&amp;", "&")
	public := e.m.URL()
	if !strings.HasPrefix(src, public+"/") {
		t.Errorf("the result's link %q is not on the public address %s", src, public)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "media-src 'self' "+public) {
		t.Errorf("CSP %q does not allow media from %s", csp, public)
	}
	res, err = http.Get(src)
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 12)
	_, _ = io.ReadFull(res.Body, head)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(head[4:8]) != "ftyp" {
		t.Errorf("GET the result's link: %d, starts %q; want an MP4", res.StatusCode, head)
	}
}
