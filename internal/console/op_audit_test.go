package console

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/store"
)

var auditRowID = regexp.MustCompile(`<tr id="(adm_[^"]+|[a-z]+_[a-z0-9]+)">`)
var nextLink = regexp.MustCompile(`<a href="([^"]+)" rel="next">`)

// auditPages walks the audit log from path by its next links, returning every entry id in
// the order shown.
func auditPages(t *testing.T, b *browser, path string) (ids []string, pages int) {
	t.Helper()
	for path != "" {
		p := b.get(path)
		if p.status != http.StatusOK {
			t.Fatalf("%s: %d\n%s", path, p.status, p.body)
		}
		pages++
		for _, m := range auditRowID.FindAllStringSubmatch(p.body, -1) {
			ids = append(ids, m[1])
		}
		path = ""
		if m := nextLink.FindStringSubmatch(p.body); m != nil {
			path = html.UnescapeString(m[1])
		}
		if pages > 20 {
			t.Fatal("the pages do not end")
		}
	}
	return ids, pages
}

func TestAuditLogListsAdminWritesNewestFirstFilteredAndPaged(t *testing.T) {
	e := newOpEnv(t)
	ctx := context.Background()
	cli := admin.CLIActor("tester")
	const keys = 110
	for i := range keys {
		if _, err := e.svc.CreateKey(ctx, cli, admin.KeyInput{Tenant: "demo", Name: fmt.Sprintf("key %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// The newest entry, made in a later millisecond than the others (ids sort by time).
	for start := time.Now().UnixMilli(); time.Now().UnixMilli() == start; {
	}
	newest, err := e.svc.CreateKey(ctx, cli, admin.KeyInput{Tenant: "demo", Name: "newest"})
	if err != nil {
		t.Fatal(err)
	}
	all, err := e.st.Audit(ctx, store.AuditQuery{Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, e.ts.URL)
	b.signIn(e.viewer)
	for _, tc := range []struct {
		name, path string
		want       int // entries
		pages      int
	}{
		{"everything", "/console/audit", len(all), 3},
		{"by action", "/console/audit?action=key.create", keys + 1, 3},
		{"by target", "/console/audit?target_type=key&target_id=" + newest.ID, 1, 1},
		{"by another action", "/console/audit?action=token.create", 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, pages := auditPages(t, b, tc.path)
			if len(ids) != tc.want || pages != tc.pages {
				t.Fatalf("%d entries on %d pages; want %d on %d", len(ids), pages, tc.want, tc.pages)
			}
			seen := map[string]bool{}
			for i, id := range ids {
				if seen[id] {
					t.Fatalf("entry %s shown twice", id)
				}
				seen[id] = true
				if i > 0 && ids[i-1] <= id {
					t.Fatalf("entries not newest first at %d: %s then %s", i, ids[i-1], id)
				}
			}
			if tc.name != "by another action" {
				body := b.get(tc.path).body
				i := strings.Index(body, `<tr id="`)
				if i < 0 || !strings.Contains(body[i:i+strings.Index(body[i:], "</tr>")], newest.ID) {
					t.Errorf("the first row is not the newest entry (key %s)", newest.ID)
				}
			}
		})
	}
}

func TestAuditEntryTextIsEscaped(t *testing.T) {
	e := newOpEnv(t)
	name := `<script>alert("x")</script><img src=x onerror=alert(1)>`
	if _, err := e.svc.CreateKey(context.Background(), admin.CLIActor("tester"), admin.KeyInput{Tenant: "demo", Name: name}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.viewer)
	p := b.get("/console/audit?action=key.create")
	if p.status != http.StatusOK {
		t.Fatalf("audit: %d\n%s", p.status, p.body)
	}
	if strings.Contains(p.body, "<script>alert") || strings.Contains(p.body, "<img src=x") {
		t.Fatal("the key's name reached the page unescaped")
	}
	if !strings.Contains(p.body, "&lt;script&gt;alert") && !strings.Contains(p.body, `\u003cscript\u003ealert`) {
		t.Errorf("the key's name is not shown in the entry's after JSON:\n%s", p.body)
	}
	if !strings.Contains(p.body, `<pre class="json">`) || !strings.Contains(p.body, "<details>") {
		t.Error("the entry's change is not expandable JSON")
	}
}

func TestAuditFilterErrorsShowNextToTheirField(t *testing.T) {
	e := newOpEnv(t)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.viewer)
	for _, tc := range []struct{ query, field, keep string }{
		{"since=yesterday&action=key.create", "since", `value="yesterday"`},
		{"since=2026-11-02&until=2026-11-01", "until", `value="2026-11-01"`},
		{"actor=" + strings.Repeat("a", 300), "actor", `value="aaaa`},
	} {
		p := b.get("/console/audit?" + tc.query)
		if p.status != http.StatusBadRequest {
			t.Errorf("%s: %d; want 400", tc.query, p.status)
		}
		want := `id="f-` + tc.field + `" name="` + tc.field + `"`
		if !strings.Contains(p.body, want) || !strings.Contains(p.body, `aria-describedby="f-`+tc.field+`-error"`) || !strings.Contains(p.body, tc.keep) {
			t.Errorf("%s: the form lacks the %s error or the typed value:\n%s", tc.query, tc.field, p.body)
		}
		if strings.Contains(p.body, "<table class=\"rows audit\">") {
			t.Errorf("%s: entries listed despite the error", tc.query)
		}
	}
}
