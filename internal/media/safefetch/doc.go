// Package safefetch is the only HTTP client allowed to fetch a URL that a
// tenant supplied. It exists to stop server-side request forgery: a tenant
// must not be able to make the service read its own loopback, the cloud
// metadata endpoint, or anything on a private network.
//
// Rules, in the order they apply:
//
//   - Static checks (Check, no I/O), on the first URL and on every redirect
//     hop: scheme https (http only with Options.AllowHTTP or
//     RequestOptions.AllowHTTP); no userinfo; port 443/80 or
//     Options.AllowedPorts; host not an IP literal in a refused range; host
//     not a numeric spelling that inet_aton would read as IPv4 (2130706433,
//     0177.1, 0x7f.1, 127.1); not localhost/*.localhost/.local/.internal/
//     .home.arpa; no trailing dot; no single-label names; ASCII only.
//   - Address check at dial time: the client resolves the name itself
//     (Options.Resolver), checks every answer and dials the checked IP, so a
//     rebound DNS answer is never used. The default dialer repeats the check
//     in net.Dialer.Control on the socket address. The deny list is the IANA
//     special-purpose registry (code.dny.dev/ssrf): loopback, private,
//     link-local, CGNAT, multicast, unspecified, documentation, benchmarking,
//     reserved, and all IPv6 outside 2000::/3 (unique-local, NAT64, mapped).
//     IPv4-mapped addresses are judged by the IPv4 they reach. Transport.Proxy
//     is nil.
//   - Redirects: at most Options.MaxRedirects (3), each hop rechecked, never
//     https → http, Authorization/Cookie/Referer dropped;
//     RequestOptions.NoRedirects refuses any redirect.
//   - Bounds: connect, header and total timeouts; a byte cap on every body.
//
// Operators may open the client for development with Options.AllowLoopback
// or Options.AllowCIDRs; allow-listed destinations may then use any port.
//
// Every error wraps one of the Err* kinds; PublicMessage turns any of them
// into a sentence that is safe to show to the tenant.
//
//	c := safefetch.New(safefetch.Options{})
//	resp, err := c.Get(ctx, url, safefetch.RequestOptions{NoRedirects: true})
//	if err != nil { return clientError(safefetch.PublicMessage(err)) }
//	defer resp.Body.Close()
package safefetch
