package httpapi

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"html/template"
	"io"
	"mime"
	"net/http"

	"mediagen/internal/apierr"
	"mediagen/internal/asset"
)

// The real-human verification page: GET /verify/{token} is the H5Link the end user opens, a
// self-contained page (inline CSS and JS under a nonce CSP, no external assets) that works on a
// phone-sized screen. Its buttons POST /verify/{token}/{start|confirm|decline} with a JSON
// content type (so a cross-site form cannot submit them) and get {"State":…} back. No API key:
// the token in the path is the credential, so the page sends no Referer and is never cached.

type pageData struct {
	State        string
	TenantName   string
	Expires      string
	CheckSeconds int
	Nonce        string
}

func nonce() string {
	var b [18]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func pageHeaders(w http.ResponseWriter, n string) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+n+"'; style-src 'nonce-"+n+
		"'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
}

// verifyPage answers GET /verify/{token}: the page in the session's current state.
func (s *Server) verifyPage(w http.ResponseWriter, r *http.Request) error {
	n := nonce()
	pageHeaders(w, n)
	if s.assets == nil {
		return errAssetsUnavailable()
	}
	st, err := s.assets.Page(r.Context(), r.PathValue("token"))
	if errors.Is(err, asset.ErrUnknownToken) {
		return writePage(w, http.StatusNotFound, pageData{State: "invalid", Nonce: n})
	}
	if err != nil {
		return err
	}
	return writePage(w, http.StatusOK, pageData{State: st.State, TenantName: st.TenantName,
		Expires: st.ExpiresAt.UTC().Format("15:04 UTC, 2 Jan 2006"), CheckSeconds: st.CheckSeconds, Nonce: n})
}

func writePage(w http.ResponseWriter, status int, d pageData) error {
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, d); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
	return nil
}

// actionAnswer is the success answer of a page action; refusals are error envelopes
// (400 verify_token_expired, check_not_started, check_incomplete; 404 verify_token_not_found).
type actionAnswer struct {
	State string `json:"State"`
}

// verifyAction answers POST /verify/{token}/{action}.
func (s *Server) verifyAction(w http.ResponseWriter, r *http.Request) error {
	pageHeaders(w, nonce())
	if s.assets == nil {
		return errAssetsUnavailable()
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return apierr.New(apierr.KindUnsupportedMediaType, "Content-Type must be application/json.")
	}
	st, err := s.assets.Act(r.Context(), r.PathValue("token"), r.PathValue("action"))
	if err != nil {
		return err // the body stays unread: an unknown token does not wait for it
	}
	// The body carries nothing; it is read only once the token has proved the caller, so the
	// connection can be kept.
	_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, 1<<10))
	writeJSON(w, http.StatusOK, actionAnswer{State: st.State})
	return nil
}

var pageTemplate = template.Must(template.New("verify").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1, viewport-fit=cover">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex, nofollow">
<title>Identity check</title>
<style nonce="{{.Nonce}}">
:root { color-scheme: light dark; --fg:#16202c; --muted:#5a6878; --bg:#f3f5f8; --card:#fff; --line:#dde3ea;
  --accent:#1f6feb; --accent-fg:#fff; --ok:#1a7f37; --bad:#b42318; }
@media (prefers-color-scheme: dark) { :root { --fg:#e8edf3; --muted:#9aa8b8; --bg:#0e1419; --card:#161f28;
  --line:#2a3642; --accent:#4c8df6; --ok:#3fb950; --bad:#f47067; } }
* { box-sizing: border-box; }
html, body { margin: 0; padding: 0; }
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg);
  min-height: 100vh; display: flex; justify-content: center; padding: max(16px, env(safe-area-inset-top)) 16px 24px; }
main { width: 100%; max-width: 440px; background: var(--card); border: 1px solid var(--line); border-radius: 18px;
  padding: 24px 20px 20px; box-shadow: 0 8px 24px rgba(0,0,0,.06); align-self: flex-start; }
header { display: flex; align-items: center; gap: 12px; margin-bottom: 16px; }
header svg { flex: none; }
h1 { font-size: 1.35rem; line-height: 1.2; margin: 0; }
.sub { color: var(--muted); font-size: .9rem; margin: 2px 0 0; }
h2 { font-size: 1.1rem; margin: 8px 0; }
p, li { margin: 0 0 10px; }
ul { padding-left: 20px; margin: 0 0 14px; }
.note { background: var(--bg); border-radius: 10px; padding: 10px 12px; font-size: .9rem; color: var(--muted); }
label.agree { display: flex; gap: 10px; align-items: flex-start; margin: 16px 0; font-weight: 600; cursor: pointer; }
label.agree input { width: 22px; height: 22px; margin: 1px 0 0; flex: none; accent-color: var(--accent); }
button { display: block; width: 100%; min-height: 48px; border-radius: 12px; font: inherit; font-weight: 600;
  border: 1px solid transparent; cursor: pointer; margin-top: 10px; }
button.primary { background: var(--accent); color: var(--accent-fg); }
button.secondary { background: transparent; color: var(--fg); border-color: var(--line); }
button:disabled { opacity: .45; cursor: not-allowed; }
button:focus-visible, input:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.frame { position: relative; width: 220px; height: 220px; margin: 12px auto 28px; }
.frame svg { position: absolute; inset: 0; }
.ring { transform: rotate(-90deg); transform-origin: 50% 50%; }
.ring circle.track { stroke: var(--line); }
.ring circle.bar { stroke: var(--accent); stroke-dasharray: 628; stroke-dashoffset: 628; stroke-linecap: round; }
.running .ring circle.bar { animation: fill var(--secs) linear forwards; }
.complete .ring circle.bar { stroke: var(--ok); stroke-dashoffset: 0; }
@keyframes fill { to { stroke-dashoffset: 0; } }
.count { position: absolute; left: 50%; bottom: -6px; transform: translateX(-50%); min-width: 64px; padding: 2px 16px;
  border-radius: 999px; background: var(--card); border: 1px solid var(--line); text-align: center; font-size: 1.6rem;
  font-weight: 700; font-variant-numeric: tabular-nums; box-shadow: 0 2px 8px rgba(0,0,0,.08); }
.face { opacity: .35; clip-path: circle(45% at 50% 50%); }
.running .face { animation: pulse 1.2s ease-in-out infinite; }
@keyframes pulse { 50% { opacity: .7; } }
@media (prefers-reduced-motion: reduce) { .running .face { animation: none; } }
.status { text-align: center; min-height: 1.5em; color: var(--muted); }
.result { text-align: center; padding: 8px 0; }
.result svg { margin: 8px auto 4px; display: block; }
.ok { color: var(--ok); } .bad { color: var(--bad); }
.msg { color: var(--bad); margin-top: 12px; font-size: .95rem; }
footer { margin-top: 18px; color: var(--muted); font-size: .8rem; text-align: center; }
[hidden] { display: none !important; }
</style>
</head>
<body data-state="{{.State}}" data-check="{{.CheckSeconds}}">
<main>
<header>
<svg width="40" height="40" viewBox="0 0 24 24" aria-hidden="true"><path fill="currentColor" opacity=".15" d="M12 2 4 5v6c0 5 3.4 9.4 8 11 4.6-1.6 8-6 8-11V5z"/><path fill="none" stroke="currentColor" stroke-width="1.6" d="M12 2 4 5v6c0 5 3.4 9.4 8 11 4.6-1.6 8-6 8-11V5z"/><path fill="none" stroke="currentColor" stroke-width="1.8" stroke-linecap="round" d="m8.5 12 2.5 2.5 4.5-5"/></svg>
<div><h1>Identity check</h1>{{if .TenantName}}<p class="sub">Requested by {{.TenantName}}</p>{{end}}</div>
</header>

{{if eq .State "invalid"}}
<section id="invalid" class="result"><h2 class="bad">This link is not valid</h2>
<p>Ask the service that sent it for a new verification link.</p></section>
{{else}}
<section id="consent" hidden>
<p><strong>{{.TenantName}}</strong> asks you to confirm that you are a real person before media of you can be used to generate videos.</p>
<ul>
<li>You will look at the screen for {{.CheckSeconds}} seconds while the presence check runs.</li>
<li>If you agree, {{.TenantName}} can create a verified real-person asset group for media of you. You can ask them to delete it at any time.</li>
</ul>
<p class="note">Sandbox: the liveness check is simulated. The camera is not used and nothing is recorded or uploaded.</p>
<label class="agree"><input type="checkbox" id="agree"> I agree to this verification and to the use described above.</label>
<button type="button" class="primary" id="start" disabled>Start check</button>
<button type="button" class="secondary" id="decline">Decline</button>
</section>

<section id="check" hidden>
<div class="frame" id="frame">
<svg viewBox="0 0 220 220" aria-hidden="true" class="face"><circle cx="110" cy="88" r="38" fill="currentColor"/><path d="M44 196c8-40 36-58 66-58s58 18 66 58z" fill="currentColor"/></svg>
<svg viewBox="0 0 220 220" class="ring" aria-hidden="true"><circle class="track" cx="110" cy="110" r="100" fill="none" stroke-width="8"/><circle class="bar" cx="110" cy="110" r="100" fill="none" stroke-width="8"/></svg>
<div class="count" id="count" aria-live="polite"></div>
</div>
<p class="status" id="status" role="status">Keep your face inside the circle.</p>
<button type="button" class="primary" id="confirm" hidden>Confirm</button>
<button type="button" class="secondary" id="decline2">Decline</button>
</section>

<section id="passed" class="result" hidden>
<svg width="64" height="64" viewBox="0 0 24 24" class="ok" aria-hidden="true"><circle cx="12" cy="12" r="11" fill="currentColor" opacity=".15"/><path d="m7 12.5 3.2 3.2L17 9" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round"/></svg>
<h2 class="ok">You are verified</h2>
<p>Thank you. You can close this page.</p></section>

<section id="declined" class="result" hidden>
<h2>You declined</h2>
<p>No verification was recorded and nothing was created. You can close this page.</p></section>

<section id="expired" class="result" hidden>
<h2 class="bad">This link has expired</h2>
<p>Ask the service that sent it for a new verification link.</p></section>

<p class="msg" id="msg" role="alert" hidden></p>
<noscript><p class="msg">This page needs JavaScript to run the check.</p></noscript>
<footer id="expiry">This link expires at {{.Expires}}.</footer>
{{end}}
</main>
{{if ne .State "invalid"}}
<script nonce="{{.Nonce}}">
(function () {
  "use strict";
  var body = document.body, secs = Math.max(1, parseInt(body.dataset.check, 10) || 3);
  var $ = function (id) { return document.getElementById(id); };
  var sections = ["consent", "check", "passed", "declined", "expired"];
  function show(state) {
    var id = state === "pending" ? "consent" : state === "started" ? "check" : state;
    sections.forEach(function (s) { $(s).hidden = s !== id; });
    body.dataset.state = state;
    if (state === "passed" || state === "declined" || state === "expired") { $("expiry").hidden = true; }
  }
  function fail(m) { var e = $("msg"); e.textContent = m; e.hidden = false; }
  function act(action) {
    $("msg").hidden = true;
    return fetch(location.pathname.replace(/\/+$/, "") + "/" + action, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: "{}", credentials: "omit", cache: "no-store"
    }).then(function (r) {
      return r.json().then(function (j) { return { ok: r.ok, j: j }; }, function () { return { ok: false, j: {} }; });
    });
  }
  // handle shows a finished state or a refusal; it returns true when the page should go on.
  function handle(res) {
    var e = res.j && res.j.error;
    if (!res.ok) {
      if (e && e.code === "verify_token_expired") { show("expired"); return false; }
      fail((e && e.message) || "Something went wrong. Try again.");
      return false;
    }
    var s = res.j.State;
    if (s === "passed" || s === "declined" || s === "expired") { show(s); return false; }
    return true;
  }
  function offline() { fail("The service could not be reached. Check your connection and try again."); }
  var timer = null;
  function runCheck() {
    show("started");
    var frame = $("frame"), left = secs;
    frame.style.setProperty("--secs", secs + "s");
    frame.className = "frame running";
    $("confirm").hidden = true;
    $("status").textContent = "Keep your face inside the circle.";
    $("count").textContent = left;
    if (timer) { clearInterval(timer); }
    timer = setInterval(function () {
      left -= 1;
      if (left > 0) { $("count").textContent = left; return; }
      clearInterval(timer); timer = null;
      frame.className = "frame complete";
      $("count").textContent = "\u2713";
      $("status").textContent = "Check complete. Confirm to finish.";
      $("confirm").hidden = false; $("confirm").disabled = false; $("confirm").focus();
    }, 1000);
  }
  $("agree").addEventListener("change", function () { $("start").disabled = !this.checked; });
  $("start").addEventListener("click", function () {
    var b = this; b.disabled = true;
    act("start").then(function (res) { if (handle(res)) { runCheck(); } else { b.disabled = false; } }, function () { b.disabled = false; offline(); });
  });
  $("confirm").addEventListener("click", function () {
    var b = this; b.disabled = true;
    act("confirm").then(function (res) { if (handle(res)) { show(res.j.State); } else { b.disabled = false; } }, function () { b.disabled = false; offline(); });
  });
  function decline() { act("decline").then(handle, offline); }
  $("decline").addEventListener("click", decline);
  $("decline2").addEventListener("click", decline);
  var initial = body.dataset.state;
  if (initial === "started") { runCheck(); } else { show(initial); }
})();
</script>
{{end}}
</body>
</html>
`))
