package safefetch

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"mediagen/internal/hostname"
)

// maxURLLen bounds what we parse; real media URLs, even presigned ones, are
// far shorter.
const maxURLLen = 8 << 10

// Check applies the static rules to rawURL without any I/O and returns the
// normalised URL (lower-case host, no fragment). Get runs the same checks on
// every hop; the address of a host name is checked later, at dial time.
func (c *Client) Check(rawURL string, allowHTTP bool) (*url.URL, error) {
	if len(rawURL) > maxURLLen {
		return nil, fmt.Errorf("%w: URL longer than %d bytes", ErrBadURL, maxURLLen)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error repeats the whole URL; keep only the kind.
		return nil, fmt.Errorf("%w: does not parse", ErrBadURL)
	}
	if err := c.checkURL(u, allowHTTP || c.opts.AllowHTTP); err != nil {
		return nil, err
	}
	out := *u
	out.Host = strings.ToLower(u.Host)
	out.Fragment, out.RawFragment = "", ""
	return &out, nil
}

func (c *Client) checkURL(u *url.URL, allowHTTP bool) error {
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowHTTP:
	case u.Scheme == "":
		return fmt.Errorf("%w: not an absolute URL", ErrBadURL)
	default:
		return fmt.Errorf("%w: %q", ErrForbiddenScheme, u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return fmt.Errorf("%w: no host", ErrBadURL)
	}
	// Credentials in a URL are a classic parser-confusion trick
	// (https://good@evil/) and would be sent to whoever answers.
	if u.User != nil {
		return fmt.Errorf("%w: credentials in URL", ErrBadURL)
	}
	port, err := urlPort(u)
	if err != nil {
		return err
	}
	host := strings.ToLower(u.Hostname())
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return fmt.Errorf("%w: zoned IPv6 literal", ErrBadURL)
		}
		return c.policy.checkAddrPort(netip.AddrPortFrom(ip, uint16(port)))
	}
	if err := c.checkHostName(host); err != nil {
		return err
	}
	// The IP is not known yet; a non-standard port is only worth a DNS
	// lookup when the operator opened the client to local destinations.
	if !slices.Contains(c.policy.ports, port) && !c.policy.devNames {
		return fmt.Errorf("%w: port %d not allowed", ErrForbiddenAddress, port)
	}
	return nil
}

func urlPort(u *url.URL) (int, error) {
	p := u.Port()
	if p == "" {
		if u.Scheme == "http" {
			return 80, nil
		}
		return 443, nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("%w: bad port", ErrBadURL)
	}
	return n, nil
}

// checkHostName refuses names that a resolver would treat as an address or
// as the local host, before any lookup happens.
func (c *Client) checkHostName(host string) error {
	if host == "" || len(host) > 253 {
		return fmt.Errorf("%w: bad host length", ErrBadURL)
	}
	// "localhost." and friends are absolute names that skip the checks some
	// resolvers apply to the relative form; nothing legitimate needs them.
	if strings.HasSuffix(host, ".") {
		return fmt.Errorf("%w: trailing dot in host", ErrBadURL)
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if !hostname.ValidLabel(l) {
			return fmt.Errorf("%w: invalid host name", ErrBadURL)
		}
	}
	// A numeric last label is never a DNS name, but inet_aton-style parsers
	// read 2130706433, 0177.1 or 0x7f.1 as IPv4. Judge what it would reach,
	// and refuse the spelling anyway.
	if last := labels[len(labels)-1]; hostname.NumericLabel(last) {
		if ip, ok := hostname.ParseInetAton(host); ok {
			if err := c.policy.checkIP(ip); err != nil {
				return fmt.Errorf("numeric host: %w", err)
			}
			return fmt.Errorf("%w: non-canonical IPv4 spelling", ErrBadURL)
		}
		return fmt.Errorf("%w: numeric host name", ErrBadURL)
	}
	if hostname.IsLocal(host) {
		if c.policy.allowLoopback && (host == "localhost" || strings.HasSuffix(host, ".localhost")) {
			return nil
		}
		return fmt.Errorf("%w: local host name", ErrForbiddenAddress)
	}
	// Single-label names go through resolv.conf search domains, i.e. to the
	// operator's internal DNS.
	if len(labels) == 1 && !c.policy.devNames {
		return fmt.Errorf("%w: single-label host name", ErrBadURL)
	}
	return nil
}
