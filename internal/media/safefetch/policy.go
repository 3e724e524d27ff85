package safefetch

import (
	"fmt"
	"net/netip"
	"slices"

	"code.dny.dev/ssrf"
)

// policy decides which IP and port may be dialled. The deny list is the
// IANA special-purpose registry as kept by code.dny.dev/ssrf (IPv6 outside
// 2000::/3 is denied outright); the operator's allow-list is consulted first.
type policy struct {
	allow []netip.Prefix
	ports []int
	guard *ssrf.Guardian
	// devNames: loopback names and single-label names are acceptable
	// because the operator opened the client to local networks.
	devNames      bool
	allowLoopback bool
}

var (
	loopbackV4 = netip.MustParsePrefix("127.0.0.0/8")
	loopbackV6 = netip.MustParsePrefix("::1/128")
	// Both NAT64 prefixes embed an IPv4 address in the low 32 bits; a
	// gateway would forward 64:ff9b::7f00:1 to 127.0.0.1.
	nat64Prefixes = []netip.Prefix{
		netip.MustParsePrefix("64:ff9b::/96"),
		netip.MustParsePrefix("64:ff9b:1::/48"),
	}
)

func newPolicy(o Options) *policy {
	p := &policy{ports: o.AllowedPorts, allowLoopback: o.AllowLoopback}
	if o.AllowLoopback {
		p.allow = append(p.allow, loopbackV4, loopbackV6)
	}
	for _, c := range o.AllowCIDRs {
		p.allow = append(p.allow, c.Masked())
	}
	p.devNames = len(p.allow) > 0
	// Ports and networks are checked here, not by the guardian, because
	// allow-listed destinations may use any port.
	p.guard = ssrf.New(ssrf.WithAnyPort(), ssrf.WithAnyNetwork())
	return p
}

func (p *policy) allowListed(ip netip.Addr) bool {
	for _, pre := range p.allow {
		if pre.Contains(ip) {
			return true
		}
	}
	return false
}

// checkIP returns nil when ip may be dialled. An IPv4-mapped address is
// judged by the IPv4 address it reaches; a NAT64 address must be both
// allow-listed (NAT64 is outside global unicast) and embed a permitted IPv4.
func (p *policy) checkIP(ip netip.Addr) error {
	if !ip.IsValid() || ip.Zone() != "" {
		return fmt.Errorf("%w: invalid or zoned address", ErrForbiddenAddress)
	}
	ip = ip.Unmap()
	for _, pre := range nat64Prefixes {
		if pre.Contains(ip) {
			b := ip.As16()
			if err := p.checkIP(netip.AddrFrom4([4]byte(b[12:16]))); err != nil {
				return fmt.Errorf("NAT64 form: %w", err)
			}
		}
	}
	if p.allowListed(ip) {
		return nil
	}
	if err := p.guard.SafeAddr(ip); err != nil {
		return fmt.Errorf("%w: %w", ErrForbiddenAddress, err)
	}
	return nil
}

// checkAddrPort adds the port rule: ports outside AllowedPorts are only for
// allow-listed destinations.
func (p *policy) checkAddrPort(ap netip.AddrPort) error {
	if err := p.checkIP(ap.Addr()); err != nil {
		return err
	}
	if !slices.Contains(p.ports, int(ap.Port())) && !p.allowListed(ap.Addr().Unmap()) {
		return fmt.Errorf("%w: port %d not allowed", ErrForbiddenAddress, ap.Port())
	}
	return nil
}
