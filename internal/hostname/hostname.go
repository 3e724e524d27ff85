// Package hostname judges host names and IP literals as written, with no I/O: the one set of
// rules that the request checks (internal/contract) and the fetch client
// (internal/media/safefetch) share, so a URL refused at submission is the URL the fetcher
// would refuse. See docs/media.md for the fetch policy around it.
package hostname

import (
	"net/netip"
	"strconv"
	"strings"

	"code.dny.dev/ssrf"
)

// localSuffixes name the local host or local networks (RFC 6761, RFC 8375, ICANN .internal).
var localSuffixes = [...]string{".localhost", ".local", ".internal", ".home.arpa"}

// IsLocal reports "localhost" and names under a local suffix.
func IsLocal(host string) bool {
	if host == "localhost" {
		return true
	}
	for _, suf := range localSuffixes {
		if strings.HasSuffix(host, suf) {
			return true
		}
	}
	return false
}

// ValidLabel accepts 1 to 63 of lower-case ASCII letters, digits, '-' and '_' (the underscore
// appears in real CDN names). Anything else, including non-ASCII, must arrive as punycode.
func ValidLabel(l string) bool {
	if l == "" || len(l) > 63 {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// NumericLabel reports a label an inet_aton or WHATWG parser would read as a number: all
// decimal digits, or 0x followed by hex digits (also a bare 0x). A host whose last label is
// numeric is an IP address in disguise.
func NumericLabel(l string) bool {
	if rest, ok := strings.CutPrefix(l, "0x"); ok {
		for i := 0; i < len(rest); i++ {
			if c := rest[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return l != ""
}

// PublicIP reports whether ip is outside every special-purpose range of the IANA registries,
// as code.dny.dev/ssrf keeps them (IPv6 must also be inside 2000::/3). An IPv4-mapped IPv6
// address is judged by the IPv4 address it maps.
func PublicIP(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.Is4() {
		for _, p := range ssrf.IPv4DeniedPrefixes {
			if p.Contains(ip) {
				return false
			}
		}
		return true
	}
	if !ssrf.IPv6GlobalUnicast.Contains(ip) {
		return false
	}
	for _, p := range ssrf.IPv6DeniedPrefixes {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// ParseInetAton mirrors glibc inet_aton: 1 to 4 parts, each decimal, octal (leading 0) or hex
// (0x); the last part fills the remaining bytes. It tells what a numeric host would reach.
func ParseInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := parseAtonPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	last := len(vals) - 1
	for _, v := range vals[:last] {
		if v > 0xff {
			return netip.Addr{}, false
		}
	}
	if vals[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	var n uint64
	for _, v := range vals[:last] {
		n = n<<8 | v
	}
	n = n<<(8*(4-last)) | vals[last]
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

func parseAtonPart(p string) (uint64, bool) {
	base := 10
	switch {
	case strings.HasPrefix(p, "0x"):
		base, p = 16, p[2:]
		if p == "" {
			return 0, true // glibc reads a bare "0x" as 0
		}
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	if p == "" || len(p) > 12 {
		return 0, false
	}
	v, err := strconv.ParseUint(p, base, 64)
	return v, err == nil
}
