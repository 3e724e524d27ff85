// Package console is the web console: server-rendered pages for tenants (on the public
// address, signed in with an API key) and for operators (on the admin listener, signed in with
// an admin token), over the same use cases as the public and admin APIs (docs/console.md).
//
// The model is pkgsite and miniflux: html/template pages, one small script for live progress
// and copy buttons, charts drawn on the server as SVG with a table of their numbers beside
// them, everything embedded in the binary (no CDN, no font, works offline).
//
// Security, in one place (core.go, session.go, scheme.go): a session is a random secret in an
// HttpOnly, SameSite=Strict cookie (Secure when this listener's request came over https) whose hash names a row of console_sessions; the
// credential that signed in is re-checked on every request, so revoking a key or token ends its
// sessions. Every POST carries the session's CSRF token and is refused from another origin
// (scheme, host and port).
// Every answer carries a strict Content-Security-Policy (no inline script or style),
// X-Frame-Options: DENY and no-store caching. Sign-in attempts are rate-limited per client
// address. The key or token a person types is never put in a URL, in storage or in a log.
package console
