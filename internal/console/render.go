package console

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/money"
)

// view is what every page template gets: the page's own data in .Data, and the frame's.
type view struct {
	Title   string
	Kind    Kind
	Session *Session
	Path    string // the request's path, to mark the current tab
	Data    any
}

// CSRF is the session's form token, for the hidden field of every form ({{template "csrf" .}}).
func (v view) CSRF() string {
	if v.Session == nil {
		return ""
	}
	return v.Session.CSRF
}

// Operator tells the templates which console they draw.
func (v view) Operator() bool { return v.Kind == KindOperator }

// NavCurrent is the aria-current of the main nav's link to href: "page" on that very page,
// "true" on a page under it (a task under Tasks, the create preview under Create, a key or
// key form under Keys), "" elsewhere.
func (v view) NavCurrent(href string) string {
	switch {
	case v.Path == href:
		return "page"
	case href == "/console/":
		// The tenant's Tasks tab is the root; its records' pages are under it.
		if v.Kind == KindTenant && (strings.HasPrefix(v.Path, "/console/tasks/") || strings.HasPrefix(v.Path, "/console/speech/")) {
			return "true"
		}
		return ""
	case strings.HasPrefix(v.Path, href+"/"),
		href == "/console/tasks" && v.Kind == KindOperator && strings.HasPrefix(v.Path, "/console/speech/"):
		return "true"
	}
	return ""
}

// Can is Session.Can for templates: {{if .Can "operator"}}…{{end}}.
func (v view) Can(role string) bool { return v.Session.Can(admin.Role(role)) }

// parsePages parses every page of the kind (templates/<kind>_*.html, plus the shared ones)
// with the layout: one template set per page, each defining "title" and "content".
func parsePages(kind Kind, funcs template.FuncMap, statics map[string]string) (map[string]*template.Template, error) {
	fm := template.FuncMap{
		"static":  func(name string) string { return "/console/static/" + name + "?v=" + statics[name] },
		"money":   displayMoney,
		"when":    formatTime,
		"ago":     func(t time.Time) string { return ago(t, time.Now()) },
		"query":   url.QueryEscape,
		"pathesc": url.PathEscape,
		"add":     func(a, b int) int { return a + b },
	}
	for name, f := range funcs {
		fm[name] = f
	}
	base, err := template.New("layout.html").Funcs(fm).ParseFS(templateFS, "templates/layout.html", "templates/parts.html")
	if err != nil {
		return nil, fmt.Errorf("console layout: %w", err)
	}
	files, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		switch {
		case name == "layout" || name == "parts":
			continue
		case strings.HasPrefix(name, "tenant_") && kind != KindTenant, strings.HasPrefix(name, "op_") && kind != KindOperator:
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, f)
		if err != nil {
			return nil, fmt.Errorf("console page %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// hashStatics names each embedded static file's content hash.
func hashStatics() (map[string]string, error) {
	out := map[string]string{}
	err := fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(staticFS, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[strings.TrimPrefix(p, "static/")] = hex.EncodeToString(sum[:6])
		return nil
	})
	return out, err
}

// render writes page name with data; a template failure is a plain 500 (the page is buffered,
// so half a page is never sent).
func (k *core) render(w http.ResponseWriter, r *http.Request, s *Session, status int, name, title string, data any) {
	t, ok := k.pages[name]
	if !ok {
		k.Logger.ErrorContext(r.Context(), "console: no such page template", "page", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", view{Title: title, Kind: k.kind, Session: s, Path: r.URL.Path, Data: data}); err != nil {
		k.Logger.ErrorContext(r.Context(), "console: render failed", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// Render is render for the pages of this package's two consoles.
func (k *core) Render(w http.ResponseWriter, r *http.Request, s *Session, name, title string, data any) {
	k.render(w, r, s, http.StatusOK, name, title, data)
}

// formatTime shows a time in UTC to the second ("—" for none).
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func ago(t, now time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "in " + (-d).Round(time.Second).String()
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// displayMoney shows an amount to at least the cent, exactly beyond it: 37.5 → "37.50",
// 0 → "0.00", 0.144586 → "0.144586" (a reservation is exact to the micro).
func displayMoney(m money.Micros) string {
	s := m.String()
	dot := strings.IndexByte(s, '.')
	switch {
	case dot < 0:
		return s + ".00"
	case len(s)-dot == 2:
		return s + "0"
	}
	return s
}
