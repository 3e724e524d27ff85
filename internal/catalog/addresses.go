package catalog

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"mediagen/internal/hostname"
)

// A tenant's addresses are the contract's "tenant-specific address": base URLs on hosts of
// the tenant's own (https://acme.media.example.com) that the operator routes to this service
// besides --public-url. Links, console pages and examples shown to the tenant use one of
// them; a request that arrives on one of them is accepted only with that tenant's keys
// (docs/catalog.md, "Addresses"; docs/deploy.md, "Tenant-specific addresses").

// MaxAddresses bounds a tenant's addresses. Each is a DNS name, a TLS certificate and an
// ingress rule the operator keeps, so more than a few is a mistake; the bound also keeps the
// console's Content-Security-Policy, which names them, short.
const MaxAddresses = 16

// maxAddressLen bounds one address: a DNS name is at most 253 bytes, plus scheme and port.
const maxAddressLen = 300

// address is one checked address: its canonical base URL and the host key requests match.
type address struct {
	base string // scheme://host[:port], lower case, no default port, no trailing slash
	key  string // host[:port] as hostKey makes it from a request's Host header
	host string // the bare host name, the unit a tenant owns
}

// Addresses are the tenant's addresses as canonical base URLs (scheme://host[:port]), in the
// catalog's order; none when the tenant is reached on the service's own address only.
func (t *Tenant) Addresses() []string {
	out := make([]string, len(t.addresses))
	for i, a := range t.addresses {
		out[i] = a.base
	}
	return out
}

// AddressFor is the base URL to show the tenant in the answer to a request whose Host header
// is host: that address when it is one of the tenant's, else the tenant's first; "" when the
// tenant has none (the service's own public URL applies).
func (t *Tenant) AddressFor(host string) string {
	if len(t.addresses) == 0 {
		return ""
	}
	k := hostKey(host)
	for _, a := range t.addresses {
		if a.key == k {
			return a.base
		}
	}
	return t.addresses[0].base
}

// TenantByHost is the tenant one of whose addresses a request's Host header names, if any.
// Requests on any other host (the service's own address) belong to no tenant in particular.
func (c *Catalog) TenantByHost(host string) (*Tenant, bool) {
	if len(c.byHost) == 0 { // the common case costs one length check per request
		return nil, false
	}
	t, ok := c.byHost[hostKey(host)]
	return t, ok
}

// OwnerOfHost is the tenant that owns the host name of u (an address or the service's public
// URL), whatever the port: the check that the service's own address is nobody's.
func (c *Catalog) OwnerOfHost(u string) (*Tenant, bool) {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return nil, false
	}
	t, ok := c.byName[strings.TrimSuffix(strings.ToLower(p.Hostname()), ".")]
	return t, ok
}

// hostKey normalises a Host header (or an address's host) for matching: lower case, no
// trailing dot, and no port when it is 80 or 443, the ports a proxy in front of the service
// listens on and often leaves out.
func hostKey(host string) string {
	h, port := host, ""
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") {
		h, port = host[:i], host[i+1:]
	}
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if port == "" || port == "80" || port == "443" {
		return h
	}
	return h + ":" + port
}

// checkAddresses checks the tenants' addresses and indexes them: each is well-formed, and a
// host name belongs to one tenant only, so a request's Host header names at most one owner.
func (c *Catalog) checkAddresses() []error {
	var errs []error
	c.byHost, c.byName = map[string]*Tenant{}, map[string]*Tenant{}
	for _, t := range c.Tenants {
		if t == nil || c.byID[t.ID] != t {
			continue // reported by check
		}
		if len(t.AddressesSetting) > MaxAddresses {
			errs = append(errs, fmt.Errorf("tenant %q: %d addresses, at most %d", t.ID, len(t.AddressesSetting), MaxAddresses))
			continue
		}
		t.addresses = nil
		for i, raw := range t.AddressesSetting {
			a, err := parseAddress(raw)
			if err != nil {
				errs = append(errs, fmt.Errorf("tenant %q: addresses[%d] %q: %w", t.ID, i, raw, err))
				continue
			}
			if owner, taken := c.byName[a.host]; taken && owner != t {
				errs = append(errs, fmt.Errorf("tenant %q: addresses[%d] %q: the host %s is already an address of tenant %q; a host belongs to one tenant", t.ID, i, raw, a.host, owner.ID))
				continue
			}
			if _, dup := c.byHost[a.key]; dup {
				errs = append(errs, fmt.Errorf("tenant %q: addresses[%d] %q is listed twice", t.ID, i, raw))
				continue
			}
			c.byName[a.host], c.byHost[a.key] = t, t
			t.addresses = append(t.addresses, a)
		}
	}
	return errs
}

// parseAddress checks one address: an absolute https URL of a host name, or http for a local
// name (localhost, *.localhost, *.internal…) in development, with nothing after the host: the
// service serves the same paths at the root of every address.
func parseAddress(raw string) (address, error) {
	if len(raw) > maxAddressLen {
		return address{}, fmt.Errorf("longer than %d bytes", maxAddressLen)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.Host == "" {
		return address{}, fmt.Errorf("must be an absolute URL such as https://acme.media.example.com")
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return address{}, fmt.Errorf("must be scheme and host only (a port is allowed), with no path, query, fragment or user: the service answers at the root of every address")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if net.ParseIP(host) != nil || !validHostName(host) {
		return address{}, fmt.Errorf("the host must be a DNS name (letters, digits, '-' and '_' in dot-separated labels; punycode for other letters), not an IP address: it is what the Host header, the TLS certificate and the ingress rule name")
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme == "https":
	case scheme == "http" && hostname.IsLocal(host):
		// Development: acme.localhost resolves to loopback on every modern system.
	case scheme == "http":
		return address{}, fmt.Errorf("must be https (http only for local names such as acme.localhost)")
	default:
		return address{}, fmt.Errorf("must be an https URL")
	}
	port := u.Port()
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return address{}, fmt.Errorf("port %q must be 1 to 65535", port)
		}
	}
	base := scheme + "://" + host
	if port != "" && !(scheme == "https" && port == "443") && !(scheme == "http" && port == "80") {
		base += ":" + port
	}
	return address{base: base, key: hostKey(host + ":" + port), host: host}, nil
}

func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if !hostname.ValidLabel(l) {
			return false
		}
	}
	return !hostname.NumericLabel(labels[len(labels)-1])
}
