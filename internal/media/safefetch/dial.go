package safefetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
)

// dialContext is the Transport's only way out. It resolves the name itself,
// checks every answer, and dials the checked IP, so what was checked is what
// is connected to: a second, rebound DNS answer is never consulted.
func (c *Client) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: bad dial address", ErrBadURL)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("%w: bad port", ErrBadURL)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
	defer cancel()

	ips, err := c.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	// Refuse the whole name if any answer is forbidden: a name that mixes
	// public and private answers is an attack or a misconfiguration.
	targets := make([]netip.AddrPort, 0, len(ips))
	for _, ip := range ips {
		ap := netip.AddrPortFrom(ip.Unmap(), uint16(port))
		if err := c.policy.checkAddrPort(ap); err != nil {
			return nil, err
		}
		targets = append(targets, ap)
	}
	var firstErr error
	for _, ap := range targets {
		nw := "tcp4"
		if ap.Addr().Is6() {
			nw = "tcp6"
		}
		conn, err := c.dial(ctx, nw, ap.String())
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, classify(firstErr)
}

func (c *Client) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	ips, err := c.opts.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsTimeout {
			return nil, fmt.Errorf("%w: name lookup", ErrTimeout)
		}
		return nil, classify(fmt.Errorf("name lookup: %w", err))
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("%w: name has no address", ErrUnreachable)
	}
	return ips, nil
}

// control runs inside net.Dialer on the socket address actually being
// connected. dialContext has already checked it; this second check keeps
// the guarantee even if a future change lets a name reach the dialer.
func (c *Client) control(network, address string, _ syscall.RawConn) error {
	if network != "tcp4" && network != "tcp6" {
		return fmt.Errorf("%w: network %s", ErrForbiddenAddress, network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unparsable socket address", ErrForbiddenAddress)
	}
	return c.policy.checkAddrPort(ap)
}
