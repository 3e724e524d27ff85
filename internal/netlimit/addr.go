package netlimit

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ipv6ClientBits is how much of an IPv6 address names one client: a /64 is the smallest
// network a provider hands a subscriber (RFC 6177), and one host can take any of its 2^64
// addresses, so counting single IPv6 addresses would bound nothing.
const ipv6ClientBits = 64

// Client is a client address as the limits count it: an IPv4 address, or the /64 around an
// IPv6 address. The zero Client is "unknown" (a connection that is not TCP/IP).
type Client struct{ p netip.Prefix }

// ClientOf maps an address to its Client. IPv4-mapped IPv6 addresses count as IPv4.
func ClientOf(a netip.Addr) Client {
	a = a.Unmap()
	if !a.IsValid() {
		return Client{}
	}
	if a.Is4() {
		return Client{netip.PrefixFrom(a, 32)}
	}
	p, _ := a.WithZone("").Prefix(ipv6ClientBits)
	return Client{p}
}

// String is the address (IPv4) or prefix (IPv6), for logs; never a metric label.
func (c Client) String() string {
	if !c.p.IsValid() {
		return "unknown"
	}
	if c.p.Addr().Is4() {
		return c.p.Addr().String()
	}
	return c.p.String()
}

// Proxies are the reverse proxies whose X-Forwarded-For this service believes
// (--trusted-proxies). Without any, the client is the connection's peer.
type Proxies []netip.Prefix

// ParseProxies reads a comma-separated list of addresses and CIDRs.
func ParseProxies(s string) (Proxies, error) {
	var ps Proxies
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if p, err := netip.ParsePrefix(part); err == nil {
			ps = append(ps, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR such as 10.0.0.0/8", part)
		}
		ps = append(ps, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return ps, nil
}

// Trusted reports whether a is one of the proxies.
func (ps Proxies) Trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// maxForwardedHops bounds how many X-Forwarded-For entries are looked at, right to left: a
// chain of proxies this service trusts is a few hops long, and a client can send any number
// of made-up entries on the left.
const maxForwardedHops = 8

// ClientOfRequest is the client a request comes from. The connection's peer, unless the peer
// is a trusted proxy: then the rightmost X-Forwarded-For entry that is not itself a trusted
// proxy (entries to its left were written by the client and prove nothing). A trusted peer
// that sends no usable entry is the client itself.
func (ps Proxies) ClientOfRequest(r *http.Request) Client {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return Client{}
	}
	addr := peer.Addr().Unmap()
	if len(ps) == 0 || !ps.Trusted(addr) {
		return ClientOf(addr)
	}
	hops := 0
	values := r.Header.Values("X-Forwarded-For")
	for i := len(values) - 1; i >= 0; i-- {
		entries := strings.Split(values[i], ",")
		for j := len(entries) - 1; j >= 0; j-- {
			if hops++; hops > maxForwardedHops {
				return ClientOf(addr)
			}
			a, err := netip.ParseAddr(strings.TrimSpace(entries[j]))
			if err != nil {
				return ClientOf(addr) // a malformed hop: believe nothing to its left
			}
			if !ps.Trusted(a) {
				return ClientOf(a)
			}
			addr = a.Unmap()
		}
	}
	return ClientOf(addr)
}

// ForwardedProto is the scheme ("http" or "https") the client used as the nearest trusted
// proxy states it in X-Forwarded-Proto, or "" when the peer is not a trusted proxy or states
// no scheme this service knows. The rightmost entry is the one the proxy that connected to
// this service wrote, as with X-Forwarded-For; a client can write any value to its left.
func (ps Proxies) ForwardedProto(r *http.Request) string {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || len(ps) == 0 || !ps.Trusted(peer.Addr()) {
		return ""
	}
	values := r.Header.Values("X-Forwarded-Proto")
	if len(values) == 0 {
		return ""
	}
	last := values[len(values)-1]
	if i := strings.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	switch p := strings.ToLower(strings.TrimSpace(last)); p {
	case "http", "https":
		return p
	}
	return ""
}
