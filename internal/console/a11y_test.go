package console

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"mediagen/internal/asset"
	"mediagen/internal/store"
)

// The accessibility and page-hygiene checks of every console page: each page of both consoles
// is rendered signed in, with data, and its HTML is checked mechanically.

// renderedPage is one page of a console as a browser received it.
type renderedPage struct {
	name, path string
	tab        string // the main nav link marked current ("" on sign-in and error pages)
	page
}

// consoleFixture is a console with data, signed in: its address, the secret that signs in
// and its pages as rendered.
type consoleFixture struct {
	base, secret string
	pages        []renderedPage
}

// withLinks gives the tenant env a console that links results like the tasks env's.
func withLinks(t *testing.T, e *tenantEnv, c *TenantConfig) {
	c.Links = fakeLinks{}
	c.MediaOrigins = []string{"https://media.example"}
}

// tenantPagesWithData renders every page of the tenant console: tasks of each state, assets,
// usage, each create form, a preview, a form with errors, the error page and sign-in.
func tenantPagesWithData(t *testing.T) consoleFixture {
	t.Helper()
	e := newTenantEnv(t, withAssets, withLinks, withWebhooks)
	seedEndpoint(t, e, "demo", "whe_mine")
	te := &tasksEnv{e}
	done := te.create(t, e.keyID, fastBody)
	te.advance(t, store.Advance{ID: done.ID, Status: store.StatusCompleted, Step: "done", Progress: 100, Charged: 120_000,
		Result:     []byte(`{"video_key":"videos/` + done.ID + `.mp4","thumbnail_key":"thumbs/` + done.ID + `.jpg","duration":5,"fps":24,"width":1280,"height":720}`),
		FinishedAt: e.clock.Now()})
	running := te.create(t, e.keyID, fastBody)
	te.advance(t, store.Advance{ID: running.ID, Status: store.StatusInProgress, Step: "generate_poll", Attempt: 1, Upstream: "sandbox", Progress: 40})
	failed := te.create(t, e.keyID, fastBody)
	te.advance(t, store.Advance{ID: failed.ID, Status: store.StatusFailed, Step: "done", Attempt: 1, ErrorCode: "video_generation_failed",
		ErrorMessage: "The video could not be generated.", FinishedAt: e.clock.Now()})
	ctx := context.Background()
	now := e.clock.Now()
	if err := e.st.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateSpeech(ctx, store.Speech{ID: "speech_done", KeyID: e.keyID, TenantID: "demo", Model: "demo-speech",
			Status: store.SpeechPending, PayloadHash: []byte{1}, Request: []byte(`{}`), Pricing: []byte(`{}`), Reserved: 50_000,
			AttemptToken: "tok", AttemptUntil: now.Add(time.Minute), CreatedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
		return tx.FinishSpeech(ctx, store.SpeechFinish{ID: "speech_done", Token: "tok", Status: store.SpeechCompleted, Charged: 30_000, FinishedAt: now,
			Result: []byte(`{"audio_key":"speech/speech_done.mp3","content_type":"audio/mpeg","bytes":1000,"duration_us":2500000,"original_duration_us":2500000}`)})
	}); err != nil {
		t.Fatal(err)
	}
	seedGroup(t, e, "grp_brand", "demo", store.LibraryVirtual, store.GroupOriginTenant, "Brand assets")
	seedAsset(t, e, "asset_logo", "demo", "grp_brand", store.LibraryVirtual, asset.TypeImage, "logo.png", true)
	seedAsset(t, e, "asset_clip", "demo", "grp_brand", store.LibraryVirtual, asset.TypeVideo, "clip.mp4", false)

	b := newBrowser(t, e.ts.URL)
	out := []renderedPage{{name: "sign-in", path: "/console/signin", page: b.get("/console/signin")}}
	b.signIn(e.key)
	for _, p := range []struct{ name, path, tab string }{
		{"tasks", "/console/", "/console/"},
		{"tasks filtered", "/console/?status=completed", "/console/"},
		{"task completed", "/console/tasks/" + done.ID, "/console/"},
		{"task running", "/console/tasks/" + running.ID, "/console/"},
		{"task failed", "/console/tasks/" + failed.ID, "/console/"},
		{"speech list", "/console/?kind=speech", "/console/"},
		{"speech completed", "/console/speech/speech_done", "/console/"},
		{"usage", "/console/usage", "/console/usage"},
		{"assets", "/console/assets", "/console/assets"},
		{"webhooks", "/console/webhooks", "/console/webhooks"},
		{"webhook log", "/console/webhooks/whe_mine", "/console/webhooks"},
		{"webhook log filtered badly", "/console/webhooks/whe_mine?from=soon", "/console/webhooks"},
		{"create", "/console/create", "/console/create"},
		{"create native", "/console/create?route=" + routeNative, "/console/create"},
		{"create enhancement", "/console/create?route=" + routeEnhancement, "/console/create"},
		{"create production", "/console/create?route=" + routeProduction, "/console/create"},
		{"not found", "/console/nope", ""},
	} {
		out = append(out, renderedPage{name: p.name, path: p.path, tab: p.tab, page: b.get(p.path)})
	}
	form := with(b.createForm(routeNative), "model", "demo-video-fast", "prompt", "a red kite", "duration", "5",
		"resolution", "480p", "ratio", "16:9", "generate_audio", "false")
	out = append(out, renderedPage{name: "create preview", path: "/console/create/preview", tab: "/console/create", page: b.post("/console/create/preview", form)})
	out = append(out, renderedPage{name: "create invalid", path: "/console/create/preview", tab: "/console/create",
		page: b.post("/console/create/preview", with(form, "prompt", "", "duration", "999"))})
	return consoleFixture{base: e.ts.URL, secret: e.key, pages: out}
}

// operatorPagesWithData renders every page of the operator console as an owner: overview,
// tenants, audit, keys and each key write's form and confirmation, tasks and a task.
func operatorPagesWithData(t *testing.T) consoleFixture {
	t.Helper()
	e := newOpEnv(t, func(c *OperatorConfig) { c.Links = fakeLinks{}; c.MediaOrigins = []string{"https://media.example"} })
	k := e.newKey(t, 10_000_000)
	now := e.clock.Now()
	e.addTask(t, k.ID, "video_fail", store.StatusFailed, now.Add(-2*time.Minute))
	e.addTask(t, k.ID, "video_done", store.StatusInProgress, now.Add(-time.Minute))
	e.completeTask(t, "video_done", `{"video_key":"videos/video_done.mp4","thumbnail_key":"thumbs/video_done.jpg","duration":5,"fps":24,"width":1280,"height":720}`)
	e.addSpeech(t, k.ID, "speech_done", true)
	seedOpEndpoint(t, e, "demo", "whe_op1")
	b := newBrowser(t, e.ts.URL)
	out := []renderedPage{{name: "sign-in", path: "/console/signin", page: b.get("/console/signin")}}
	b.signIn(e.owner)
	paths := []struct{ name, path, tab string }{
		{"overview", "/console/", "/console/"},
		{"tenants", "/console/tenants", "/console/tenants"},
		{"tenants reload", "/console/tenants/reload", "/console/tenants"},
		{"audit", "/console/audit", "/console/audit"},
		{"keys", "/console/keys", "/console/keys"},
		{"keys search", "/console/keys?q=seed", "/console/keys"},
		{"key", "/console/keys/" + k.ID, "/console/keys"},
		{"key new", "/console/keys/new", "/console/keys"},
		{"tasks", "/console/tasks", "/console/tasks"},
		{"tasks search", "/console/tasks?status=failed", "/console/tasks"},
		{"tasks bad id", "/console/tasks?q=nothing", "/console/tasks"},
		{"task failed", "/console/tasks/video_fail", "/console/tasks"},
		{"task completed", "/console/tasks/video_done", "/console/tasks"},
		{"speech completed", "/console/speech/speech_done", "/console/tasks"},
		{"webhooks", "/console/webhooks?tenant=demo", "/console/webhooks"},
		{"webhook log", "/console/webhooks/whe_op1", "/console/webhooks"},
		{"not found", "/console/nope", ""},
	}
	for _, action := range []string{"update", "rotate", "revoke", "credit", "debit"} {
		paths = append(paths, struct{ name, path, tab string }{"key " + action, "/console/keys/" + k.ID + "/" + action, "/console/keys"})
	}
	for _, p := range paths {
		out = append(out, renderedPage{name: p.name, path: p.path, tab: p.tab, page: b.get(p.path)})
	}
	f := with(b.openForm("/console/keys/new"), "tenant", "demo", "name", "web shop", "credit", "12.5")
	out = append(out, renderedPage{name: "key new confirm", path: "/console/keys/new/confirm", tab: "/console/keys", page: b.post("/console/keys/new/confirm", f)})
	out = append(out, renderedPage{name: "key new invalid", path: "/console/keys/new/confirm", tab: "/console/keys",
		page: b.post("/console/keys/new/confirm", with(f, "credit", "lots"))})
	f = with(b.openForm("/console/keys/"+k.ID+"/credit"), "amount", "5", "note", "goodwill")
	out = append(out, renderedPage{name: "key credit confirm", path: "/console/keys/" + k.ID + "/credit/confirm", tab: "/console/keys",
		page: b.post("/console/keys/"+k.ID+"/credit/confirm", f)})
	return consoleFixture{base: e.ts.URL, secret: e.owner, pages: out}
}

func TestEveryConsolePageIsLabelledAndClean(t *testing.T) {
	for _, console := range []struct {
		name  string
		pages func(t *testing.T) consoleFixture
	}{{"tenant", tenantPagesWithData}, {"operator", operatorPagesWithData}} {
		t.Run(console.name, func(t *testing.T) {
			for _, p := range console.pages(t).pages {
				t.Run(p.name, func(t *testing.T) {
					if p.status >= 500 || !strings.Contains(p.header.Get("Content-Type"), "text/html") {
						t.Fatalf("%s: %d %s\n%s", p.path, p.status, p.header.Get("Content-Type"), p.body)
					}
					if got := navCurrent(p.body); p.tab != "" && !slices.Equal(got, []string{p.tab}) {
						t.Errorf("%s: the main nav marks %q current; want %q", p.path, got, p.tab)
					}
					// A confirmation step focuses its primary button: Enter confirms, Tab reaches Cancel.
					focused := autofocused(p.body)
					if p.status == 200 && (strings.HasSuffix(p.name, "confirm") || p.name == "tenants reload" || p.name == "create preview") {
						if len(focused) != 1 || !strings.HasPrefix(focused[0], "button") {
							t.Errorf("%s: the confirmation focuses %q; want its submit button", p.path, focused)
						}
					} else if len(focused) > 1 {
						t.Errorf("%s: %d elements autofocus: %q", p.path, len(focused), focused)
					}
					for _, problem := range pageProblems(p.body) {
						t.Errorf("%s (%d): %s", p.path, p.status, problem)
					}
				})
			}
		})
	}
}

// pageProblems checks a page's HTML: every form control is labelled, every image has alt
// text, every button has text, every table header has a scope, headings do not skip a
// level, ids are unique, there is no style attribute and no inline script, and every post
// form carries the CSRF field.
func pageProblems(body string) []string {
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		return []string{"not HTML: " + err.Error()}
	}
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	labelFor := map[string]bool{}
	ids := map[string]int{}
	var refs [][2]string // attribute, id it names
	var controls []*html.Node
	lastHeading := 0
	var walk func(n *html.Node, inLabel bool)
	walk = func(n *html.Node, inLabel bool) {
		if n.Type == html.ElementNode {
			if attr(n, "style") != "" || hasAttr(n, "style") {
				add("<%s> has a style attribute", n.Data)
			}
			if id := attr(n, "id"); id != "" {
				ids[id]++
			}
			for _, a := range []string{"aria-describedby", "aria-labelledby", "data-copy"} {
				for _, ref := range strings.Fields(attr(n, a)) {
					refs = append(refs, [2]string{a, ref})
				}
			}
			switch n.DataAtom {
			case atom.Label:
				if f := attr(n, "for"); f != "" {
					labelFor[f] = true
				}
				inLabel = true
			case atom.Input:
				switch attr(n, "type") {
				case "hidden", "submit", "button", "reset", "image":
				default:
					controls = append(controls, n)
				}
			case atom.Select, atom.Textarea:
				controls = append(controls, n)
			case atom.Img:
				if !hasAttr(n, "alt") {
					add("<img src=%q> has no alt", attr(n, "src"))
				}
			case atom.Script:
				if attr(n, "src") == "" {
					add("an inline <script>")
				}
			case atom.Button:
				if strings.TrimSpace(text(n)) == "" && attr(n, "aria-label") == "" {
					add("a <button> without text")
				}
			case atom.Th:
				if attr(n, "scope") == "" {
					add("<th>%s</th> has no scope", strings.TrimSpace(text(n)))
				}
			case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
				level := int(n.Data[1] - '0')
				if level > lastHeading+1 {
					add("<%s>%s</%s> skips a level after h%d", n.Data, strings.TrimSpace(text(n)), n.Data, lastHeading)
				}
				lastHeading = level
			case atom.Form:
				// Sign-in has no session yet: its post is held to the same-origin check instead.
				if strings.EqualFold(attr(n, "method"), "post") && attr(n, "action") != "/console/signin" && !hasCSRF(n) {
					add("<form action=%q method=post> lacks the csrf field", attr(n, "action"))
				}
			case atom.A:
				if strings.TrimSpace(text(n)) == "" && attr(n, "aria-label") == "" {
					add("a link to %q without text", attr(n, "href"))
				}
			}
			if strings.Contains(attr(n, "class"), "badge") && strings.TrimSpace(text(n)) == "" && attr(n, "data-field") == "" {
				add("a badge without text")
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, inLabel)
		}
	}
	walk(doc, false)
	for _, c := range controls {
		id := attr(c, "id")
		switch {
		case attr(c, "aria-label") != "", attr(c, "aria-labelledby") != "":
		case id == "":
			add("<%s name=%q> has no id for a label", c.Data, attr(c, "name"))
		case !labelFor[id]:
			add("<%s id=%q> has no <label for>", c.Data, id)
		}
	}
	for f := range labelFor {
		refs = append(refs, [2]string{"label for", f})
	}
	for _, r := range refs {
		if ids[r[1]] == 0 {
			add("%s=%q names no element", r[0], r[1])
		}
	}
	for id, n := range ids {
		if n > 1 {
			add("id %q is used %d times", id, n)
		}
	}
	return problems
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, name string) bool {
	for _, a := range n.Attr {
		if a.Key == name {
			return true
		}
	}
	return false
}

// text is the text content of n.
func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		if n.Type == html.ElementNode && n.DataAtom == atom.Img {
			b.WriteString(attr(n, "alt"))
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// hasCSRF reports whether form n holds the csrf hidden field with a value.
func hasCSRF(n *html.Node) bool {
	found := false
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.DataAtom == atom.Input && attr(n, "name") == "csrf" && attr(n, "value") != "" {
			found = true
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return found
}

// autofocused names the elements with autofocus ("button Yes, do it", "input secret").
func autofocused(body string) []string {
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		return nil
	}
	var out []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && hasAttr(n, "autofocus") {
			name := strings.TrimSpace(text(n))
			if name == "" {
				name = attr(n, "name")
			}
			out = append(out, n.Data+" "+name)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

// navCurrent is the hrefs of the main nav's links marked aria-current.
func navCurrent(body string) []string {
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		return nil
	}
	var out []string
	var walk func(n *html.Node, inNav bool)
	walk = func(n *html.Node, inNav bool) {
		if n.Type == html.ElementNode {
			if n.DataAtom == atom.Nav && attr(n, "aria-label") == "Main" {
				inNav = true
			}
			if inNav && n.DataAtom == atom.A && hasAttr(n, "aria-current") {
				out = append(out, attr(n, "href"))
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, inNav)
		}
	}
	walk(doc, false)
	return out
}

func TestPageProblemsFindsEachKindOfFault(t *testing.T) {
	tests := []struct{ name, html, want string }{
		{"unlabelled input", `<input id="a" name="a">`, `<input id="a"> has no <label for>`},
		{"input without id", `<label>Name <input name="n"></label>`, `<input name="n"> has no id`},
		{"unlabelled select", `<select id="s"></select>`, `<select id="s"> has no <label for>`},
		{"image without alt", `<img src="x.png">`, `has no alt`},
		{"style attribute", `<p style="color:red">x</p>`, `style attribute`},
		{"inline script", `<script>alert(1)</script>`, `inline <script>`},
		{"empty button", `<button type="button"></button>`, `<button> without text`},
		{"th without scope", `<table><tr><th>A</th></tr></table>`, `has no scope`},
		{"skipped heading", `<h1>A</h1><h3>B</h3>`, `skips a level`},
		{"post form without csrf", `<form method="post" action="/console/x"><button>Go</button></form>`, `lacks the csrf field`},
		{"duplicate id", `<p id="x">a</p><p id="x">b</p>`, `used 2 times`},
		{"empty badge", `<span class="badge failed"></span>`, `badge without text`},
		{"dangling describedby", `<label for="a">A</label><input id="a" aria-describedby="a-error">`, `aria-describedby="a-error" names no element`},
		{"dangling label", `<label for="b">B</label>`, `label for="b" names no element`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(pageProblems(tc.html), "\n")
			if !strings.Contains(got, tc.want) {
				t.Errorf("problems %q; want one with %q", got, tc.want)
			}
		})
	}
	clean := `<h1>T</h1><form method="post" action="/console/x"><input type="hidden" name="csrf" value="t">` +
		`<label for="a">A</label><input id="a" name="a"><input type="search" name="q" aria-label="Search">` +
		`<button type="submit">Go</button></form><img src="x.png" alt=""><table><tr><th scope="col">A</th></tr></table>`
	if got := pageProblems(clean); len(got) != 0 {
		t.Errorf("a clean page has problems: %q", got)
	}
}
