package contract

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"mediagen/internal/apierr"
	"mediagen/internal/hostname"
)

// checkSpeechURL applies the static (no I/O) rules to a speech reference URL:
//
//   - absolute https with a host; http, file://, asset://, data:, ftp and every other scheme,
//     scheme-relative and relative URLs, and bare Base64 (no scheme) are rejected;
//   - at most MaxURLBytes bytes; no white space, control characters or backslashes;
//   - no user info (also an empty one, "https://@host");
//   - the port, when written, is 1 to 65535. Any port is accepted here: which ports may be
//     fetched is deployment policy and belongs to safefetch (it allows 443 and 80 by default);
//   - the host is an ASCII DNS name (international names in punycode) of at least two labels,
//     without a trailing dot, and not localhost, *.localhost, *.local, *.internal or
//     *.home.arpa; a name whose last label is numeric (2130706433, 0x7f000001, 0177.0.0.1,
//     127.1) is an IP address in disguise and is rejected whatever it would reach;
//   - an IP literal must be public: IPv4 outside the IANA special-purpose ranges (loopback,
//     private, link-local, CGNAT, unspecified, multicast, documentation, benchmarking,
//     reserved, broadcast) and IPv6 inside 2000::/3 outside its special-purpose ranges, so
//     ::1, ::, fe80::/10, fc00::/7, ff00::/8, NAT64 and 6to4 are rejected. IPv4-mapped IPv6 is
//     judged by the IPv4 address it maps. Zoned IPv6 literals are rejected. The ranges are
//     code.dny.dev/ssrf's, the list safefetch checks every dialled address against.
//
// A host name that resolves to a private address passes here; safefetch catches it at fetch
// time, when the service confirms the reference is reachable.
func checkSpeechURL(param, s string) *apierr.Error {
	if err := checkURLText(param, s); err != nil {
		return err
	}
	if len(s) >= len(assetScheme) && strings.EqualFold(s[:len(assetScheme)], assetScheme) {
		return invalidf(param, "%s must be a public https URL; asset:// references are not accepted for speech.", param)
	}
	if strings.ContainsRune(s, '\\') {
		return invalidf(param, "%s must not contain backslashes.", param)
	}
	u, perr := url.Parse(s)
	if perr != nil {
		return invalidf(param, "%s is not a valid URL; send an absolute https URL with any special characters percent-encoded outside the host.", param)
	}
	if u.Scheme == "" {
		return invalidf(param, "%s must be an absolute https URL; inline data and Base64 are not supported.", param)
	}
	switch u.Scheme {
	case "https":
	case "http":
		return invalidf(param, "%s must use https; plain http is not accepted for speech references.", param)
	case "file":
		return invalidf(param, "%s must be a public https URL; file:// URLs are not accepted.", param)
	default:
		return invalidf(param, "%s must be a public https URL; the %s scheme is not supported.", param, u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" || !strings.HasPrefix(s[len(u.Scheme):], "://") {
		return invalidf(param, "%s must be an absolute https URL with a host.", param)
	}
	// The authority as written: url.Parse drops an empty user info ("https://@host").
	if u.User != nil || strings.Contains(authority(s), "@") {
		return invalidf(param, "%s must not contain user credentials.", param)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return invalidf(param, "%s has an invalid port.", param)
		}
	}
	return checkSpeechHost(param, strings.ToLower(u.Hostname()))
}

// authority returns the text between "scheme://" and the next '/', '?' or '#'.
func authority(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return ""
	}
	a := s[i+3:]
	if j := strings.IndexAny(a, "/?#"); j >= 0 {
		a = a[:j]
	}
	return a
}

const notPublicHost = "%s must point to a public host; localhost, loopback, private, link-local and other non-public addresses are not accepted."

func checkSpeechHost(param, host string) *apierr.Error {
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" || !hostname.PublicIP(ip) {
			return invalidf(param, notPublicHost, param)
		}
		return nil
	}
	if strings.ContainsAny(host, ":[]%") {
		return invalidf(param, "%s has an invalid host.", param)
	}
	if host == "" || len(host) > 253 {
		return invalidf(param, "%s must have a host name of 1 to 253 characters.", param)
	}
	if strings.HasSuffix(host, ".") {
		return invalidf(param, "%s must not end its host name with a dot.", param)
	}
	if hostname.IsLocal(host) {
		return invalidf(param, notPublicHost, param)
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if !hostname.ValidLabel(l) {
			return invalidf(param, "%s must have an ASCII host name of letters, digits, '-' and '_' (international names in punycode).", param)
		}
	}
	if hostname.NumericLabel(labels[len(labels)-1]) {
		return invalidf(param, "%s must not use a numeric host name; decimal, octal and hexadecimal spellings of IP addresses are not accepted.", param)
	}
	if len(labels) == 1 {
		return invalidf(param, "%s must use a fully qualified public host name; single-label names are not accepted.", param)
	}
	return nil
}
