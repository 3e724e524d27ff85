package console

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Each console decides per request, on the listener that serves it, whether the browser came
// over https: the operator console typically runs on a private plain-HTTP address while the
// public URL is https, and a Secure cookie set over plain HTTP is dropped by the browser, so
// no operator could sign in. The answer sets the session cookie's Secure flag and the scheme
// a form post's Origin must name.

// https reports whether r reached this console over https: TLS on this listener, a trusted
// proxy's X-Forwarded-Proto, or (no proxy says either way) a request addressed to the host of
// an https PublicURL or of a tenant's https address.
func (k *core) https(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	switch k.Proxies.ForwardedProto(r) {
	case "https":
		return true
	case "http":
		return false
	}
	if k.httpsHost != "" && hostPort(r.Host, "https") == k.httpsHost {
		return true
	}
	return k.httpsAddress != nil && k.httpsAddress(r.Host)
}

func (k *core) scheme(r *http.Request) string {
	if k.https(r) {
		return "https"
	}
	return "http"
}

// sameOrigin refuses a request a browser marks as coming from another site, or whose Origin
// is not this console's origin: scheme, host and port. Browsers send at least one of the two
// headers on every form post.
func (k *core) sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Host == "" {
		return false
	}
	scheme := k.scheme(r)
	if strings.ToLower(u.Scheme) == scheme && hostPort(u.Host, scheme) == hostPort(r.Host, scheme) {
		return true
	}
	if hostPort(u.Host, u.Scheme) == hostPort(r.Host, u.Scheme) && u.Scheme == "https" {
		// The browser used https to reach this host, but nothing told this listener so: a
		// TLS proxy missing from --trusted-proxies, or one that does not send
		// X-Forwarded-Proto. Refused (anyone can send an https Origin), with the fix logged.
		k.Logger.WarnContext(r.Context(), "console: a form post came from an https page but this request did not arrive over https; "+
			"list the TLS proxy in front of this listener in --trusted-proxies and have it send X-Forwarded-Proto (docs/console.md)",
			"origin", o, "peer", r.RemoteAddr)
	}
	return false
}

// hostPort is a host (as in a Host header or a URL) with the scheme's default port made
// explicit and lower-cased, so that "Example.com" and "example.com:443" compare equal over
// https.
func hostPort(host, scheme string) string {
	host = strings.ToLower(host)
	if h, p, err := net.SplitHostPort(host); err == nil {
		if p == "" {
			p = defaultPort(scheme)
		}
		return net.JoinHostPort(h, p)
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), defaultPort(scheme))
}

func defaultPort(scheme string) string {
	if strings.EqualFold(scheme, "https") {
		return "443"
	}
	return "80"
}
