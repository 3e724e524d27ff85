package safefetch

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"mediagen/internal/hostname"
)

// staticRejects are refused by Check alone: no lookup, no dial.
var staticRejects = []struct {
	name      string
	url       string
	allowHTTP bool
	loopback  bool // client opened to loopback (sandbox mode)
	want      error
}{
	// Literal IPv4, every refused range.
	{"ipv4 loopback", "https://127.0.0.1/v.mp4", false, false, ErrForbiddenAddress},
	{"ipv4 loopback top of range", "https://127.255.255.254/", false, false, ErrForbiddenAddress},
	{"ipv4 private 10/8", "https://10.0.0.1/", false, false, ErrForbiddenAddress},
	{"ipv4 private 172.16/12", "https://172.16.0.1/", false, false, ErrForbiddenAddress},
	{"ipv4 private 172.31 edge", "https://172.31.255.255/", false, false, ErrForbiddenAddress},
	{"ipv4 private 192.168/16", "https://192.168.1.1/", false, false, ErrForbiddenAddress},
	{"ipv4 cgnat", "https://100.64.0.1/", false, false, ErrForbiddenAddress},
	{"ipv4 cgnat edge", "https://100.127.255.254/", false, false, ErrForbiddenAddress},
	{"ipv4 link-local metadata", "https://169.254.169.254/latest/meta-data/", false, false, ErrForbiddenAddress},
	{"ipv4 unspecified", "https://0.0.0.0/", false, false, ErrForbiddenAddress},
	{"ipv4 this-network", "https://0.1.2.3/", false, false, ErrForbiddenAddress},
	{"ipv4 multicast", "https://224.0.0.1/", false, false, ErrForbiddenAddress},
	{"ipv4 multicast ssdp", "https://239.255.255.250/", false, false, ErrForbiddenAddress},
	{"ipv4 broadcast", "https://255.255.255.255/", false, false, ErrForbiddenAddress},
	{"ipv4 reserved 240/4", "https://240.0.0.1/", false, false, ErrForbiddenAddress},
	{"ipv4 documentation test-net-1", "https://192.0.2.10/", false, false, ErrForbiddenAddress},
	{"ipv4 documentation test-net-2", "https://198.51.100.7/", false, false, ErrForbiddenAddress},
	{"ipv4 documentation test-net-3", "https://203.0.113.9/", false, false, ErrForbiddenAddress},
	{"ipv4 benchmarking", "https://198.18.0.1/", false, false, ErrForbiddenAddress},
	{"ipv4 benchmarking edge", "https://198.19.255.255/", false, false, ErrForbiddenAddress},
	{"ipv4 ietf protocol assignments", "https://192.0.0.8/", false, false, ErrForbiddenAddress},
	{"ipv4 private even in loopback mode", "https://10.0.0.1/", false, true, ErrForbiddenAddress},

	// Literal IPv6.
	{"ipv6 loopback", "https://[::1]/", false, false, ErrForbiddenAddress},
	{"ipv6 unspecified", "https://[::]/", false, false, ErrForbiddenAddress},
	{"ipv6 link-local", "https://[fe80::1]/", false, false, ErrForbiddenAddress},
	{"ipv6 unique-local fc00", "https://[fc00::1]/", false, false, ErrForbiddenAddress},
	{"ipv6 unique-local fd", "https://[fd12:3456::1]/", false, false, ErrForbiddenAddress},
	{"ipv6 site-local", "https://[fec0::1]/", false, false, ErrForbiddenAddress},
	{"ipv6 multicast", "https://[ff02::1]/", false, false, ErrForbiddenAddress},
	{"ipv6 documentation", "https://[2001:db8::1]/", false, false, ErrForbiddenAddress},
	{"ipv6 documentation 3fff", "https://[3fff::1]/", false, false, ErrForbiddenAddress},
	{"ipv6 6to4 of private", "https://[2002:c0a8:101::1]/", false, false, ErrForbiddenAddress},
	{"ipv6 teredo", "https://[2001::1]/", false, false, ErrForbiddenAddress},
	{"ipv6 ipv4-compatible loopback", "https://[::127.0.0.1]/", false, false, ErrForbiddenAddress},

	// IPv4-mapped IPv6 and NAT64.
	{"mapped loopback dotted", "https://[::ffff:127.0.0.1]/", false, false, ErrForbiddenAddress},
	{"mapped loopback hex", "https://[::ffff:7f00:1]/", false, false, ErrForbiddenAddress},
	{"mapped private", "https://[::ffff:10.0.0.1]/", false, false, ErrForbiddenAddress},
	{"mapped metadata", "https://[::ffff:169.254.169.254]/", false, false, ErrForbiddenAddress},
	{"nat64 loopback", "https://[64:ff9b::7f00:1]/", false, false, ErrForbiddenAddress},
	{"nat64 private dotted", "https://[64:ff9b::10.0.0.1]/", false, false, ErrForbiddenAddress},
	{"nat64 local-use metadata", "https://[64:ff9b:1::a9fe:a9fe]/", false, false, ErrForbiddenAddress},
	{"nat64 loopback even in loopback mode", "https://[64:ff9b::7f00:1]/", false, true, ErrForbiddenAddress},

	// Numeric spellings that inet_aton reads as IPv4.
	{"decimal loopback", "http://2130706433/", true, false, ErrForbiddenAddress},
	{"decimal loopback https", "https://2130706433/", false, false, ErrForbiddenAddress},
	{"decimal metadata", "https://2852039166/", false, false, ErrForbiddenAddress},
	{"octal loopback", "https://0177.0.0.1/", false, false, ErrForbiddenAddress},
	{"octal whole", "https://017700000001/", false, false, ErrForbiddenAddress},
	{"hex short", "https://0x7f.1/", false, false, ErrForbiddenAddress},
	{"hex whole", "https://0x7f000001/", false, false, ErrForbiddenAddress},
	{"hex upper-case", "https://0X7F.0.0.1/", false, false, ErrForbiddenAddress},
	{"short form 127.1", "https://127.1/", false, false, ErrForbiddenAddress},
	{"short form 127.0.1", "https://127.0.1/", false, false, ErrForbiddenAddress},
	{"mixed radix metadata", "https://0xa9.254.0251.0376/", false, false, ErrForbiddenAddress},
	{"octal public still refused", "https://010.0.0.1/", false, false, ErrBadURL},
	{"decimal public still refused", "https://134744072/", false, false, ErrBadURL},
	{"hex loopback refused in loopback mode", "https://0x7f000001/", false, true, ErrBadURL},
	{"five numeric parts", "https://1.2.3.4.5/", false, false, ErrBadURL},
	{"numeric last label", "https://example.123/", false, false, ErrBadURL},

	// Local names.
	{"localhost", "https://localhost/", false, false, ErrForbiddenAddress},
	{"localhost upper-case", "https://LOCALHOST/", false, false, ErrForbiddenAddress},
	{"sub.localhost", "https://media.localhost/", false, false, ErrForbiddenAddress},
	{"mdns .local", "https://printer.local/", false, false, ErrForbiddenAddress},
	{"cloud .internal", "https://metadata.google.internal/", false, false, ErrForbiddenAddress},
	{"home.arpa", "https://router.home.arpa/", false, false, ErrForbiddenAddress},
	{"single label", "https://metadata/", false, false, ErrBadURL},

	// Trailing dots.
	{"localhost trailing dot", "https://localhost./", false, false, ErrBadURL},
	{"localhost trailing dot in loopback mode", "https://localhost./", false, true, ErrBadURL},
	{"public name trailing dot", "https://example.com./", false, false, ErrBadURL},
	{"ip trailing dot", "https://127.0.0.1./", false, false, ErrBadURL},

	// Userinfo tricks.
	{"userinfo before loopback", "https://good@127.0.0.1/", false, false, ErrBadURL},
	{"userinfo before public", "https://user:pass@example.com/", false, false, ErrBadURL},
	{"host-looking userinfo", "https://example.com@127.0.0.1/", false, false, ErrBadURL},
	{"backslash userinfo", "https://127.0.0.1\\@example.com/", false, false, ErrBadURL},
	{"userinfo in loopback mode", "https://good@127.0.0.1/", false, true, ErrBadURL},

	// Schemes.
	{"http without opt-in", "http://example.com/v.mp4", false, false, ErrForbiddenScheme},
	{"file", "file:///etc/passwd", false, false, ErrForbiddenScheme},
	{"ftp", "ftp://example.com/v.mp4", false, false, ErrForbiddenScheme},
	{"gopher", "gopher://example.com:70/_x", false, false, ErrForbiddenScheme},
	{"data", "data:video/mp4;base64,AAAA", false, false, ErrForbiddenScheme},
	{"asset", "asset://a123", false, false, ErrForbiddenScheme},
	{"javascript", "javascript:alert(1)", false, false, ErrForbiddenScheme},
	{"relative", "/v.mp4", false, false, ErrBadURL},
	{"scheme-relative", "//example.com/v.mp4", false, false, ErrBadURL},
	{"opaque https", "https:example.com", false, false, ErrBadURL},
	{"empty host", "https:///v.mp4", false, false, ErrBadURL},

	// Ports.
	{"port 8080", "https://example.com:8080/", false, false, ErrForbiddenAddress},
	{"port 22", "https://example.com:22/", false, false, ErrForbiddenAddress},
	{"port 0", "https://example.com:0/", false, false, ErrBadURL},
	{"port out of range", "https://example.com:99999/", false, false, ErrBadURL},

	// Host spellings.
	{"unicode digits", "https://①②⑦.0.0.1/", false, false, ErrBadURL},
	{"fullwidth dots", "https://127。0。0。1/", false, false, ErrBadURL},
	{"zoned ipv6", "https://[fe80::1%25eth0]/", false, false, ErrBadURL},
	{"percent-encoded host", "https://%31%32%37.0.0.1/", false, false, ErrBadURL},
	{"empty label", "https://a..example.com/", false, false, ErrBadURL},
}

func TestCheck_RejectsBeforeAnyLookupOrDial(t *testing.T) {
	t.Parallel()
	if len(staticRejects) < 40 {
		t.Fatalf("only %d rejected URLs in the table", len(staticRejects))
	}
	for _, tc := range staticRejects {
		t.Run(tc.name, func(t *testing.T) {
			c, rec, res := testClient(t, Options{AllowLoopback: tc.loopback})
			_, err := c.Check(tc.url, tc.allowHTTP)
			assertKind(t, err, tc.want)

			_, err = c.Get(context.Background(), tc.url, RequestOptions{AllowHTTP: tc.allowHTTP})
			assertKind(t, err, tc.want)
			if calls := rec.calls(); len(calls) != 0 {
				t.Fatalf("dialer was called for a refused URL: %v", calls)
			}
			if len(res.lookups) != 0 {
				t.Fatalf("resolver was asked about a refused URL: %v", res.lookups)
			}
		})
	}
}

// Names pass the static checks; their answers are refused at dial time.
func TestGet_ForbiddenAnswerIsNeverDialled(t *testing.T) {
	t.Parallel()
	answers := []struct{ name, ips string }{
		{"loopback", "127.0.0.1"},
		{"private", "10.0.0.1"},
		{"metadata", "169.254.169.254"},
		{"cgnat", "100.64.0.1"},
		{"unspecified", "0.0.0.0"},
		{"ipv6 loopback", "::1"},
		{"ipv6 unique-local", "fd00::1"},
		{"ipv6 link-local", "fe80::1"},
		{"mapped private", "::ffff:192.168.0.1"},
		{"nat64 metadata", "64:ff9b::a9fe:a9fe"},
		{"ipv6 documentation", "2001:db8::1"},
		{"public mixed with private", "93.184.216.34,10.0.0.1"},
		{"public mixed with loopback v6", "2606:2800:220:1::1,::1"},
	}
	for _, a := range answers {
		t.Run(a.name, func(t *testing.T) {
			c, rec, res := testClient(t, Options{})
			res.set("media.example.net", a.ips)
			if _, err := c.Check("https://media.example.net/v.mp4", false); err != nil {
				t.Fatalf("static check refused a public name: %v", err)
			}
			_, err := c.Get(context.Background(), "https://media.example.net/v.mp4", RequestOptions{})
			assertKind(t, err, ErrForbiddenAddress)
			if calls := rec.calls(); len(calls) != 0 {
				t.Fatalf("dialer was called: %v", calls)
			}
		})
	}
}

// Accepted URLs reach the dialer with exactly the checked public IP (the
// recording dialer then refuses to dial it, so the fetch is unreachable).
func TestCheck_AcceptedURLDialsTheCheckedIP(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, url string
		allowHTTP bool
		wantDial  string
	}{
		{"public name", "https://example.com/v.mp4", false, "93.184.216.34:443"},
		{"public name upper-case with fragment", "https://EXAMPLE.com/v.mp4#t=3", false, "93.184.216.34:443"},
		{"explicit 443", "https://example.com:443/v.mp4", false, "93.184.216.34:443"},
		{"http opted in", "http://example.com/v.mp4", true, "93.184.216.34:80"},
		{"public ipv4 literal", "https://93.184.216.34/v.mp4", false, "93.184.216.34:443"},
		{"public ipv6 literal", "https://[2606:2800:220:1::1]/v.mp4", false, "[2606:2800:220:1::1]:443"},
		{"mapped public is dialled as ipv4", "https://[::ffff:93.184.216.34]/", false, "93.184.216.34:443"},
		{"underscore label", "https://cdn_1.example.com/v.mp4", false, "93.184.216.34:443"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, rec, res := testClient(t, Options{})
			res.set("example.com", "93.184.216.34")
			res.set("cdn_1.example.com", "93.184.216.34")
			if _, err := c.Check(tc.url, tc.allowHTTP); err != nil {
				t.Fatalf("Check: %v", err)
			}
			_, err := c.Get(context.Background(), tc.url, RequestOptions{AllowHTTP: tc.allowHTTP})
			assertKind(t, err, ErrUnreachable)
			if !errors.Is(err, errNotDialled) {
				t.Fatalf("error does not come from the recording dialer: %v", err)
			}
			calls := rec.calls()
			if len(calls) != 1 || calls[0] != tc.wantDial {
				t.Fatalf("dialled %v, want [%s]", calls, tc.wantDial)
			}
		})
	}
}

func TestCheck_LoopbackModeAcceptsLocalTestServers(t *testing.T) {
	t.Parallel()
	c := New(Options{AllowLoopback: true})
	for _, u := range []string{"http://127.0.0.1:38211/x", "https://[::1]:9000/", "https://localhost:8443/", "https://media.localhost/"} {
		if _, err := c.Check(u, true); err != nil {
			t.Errorf("Check(%q) = %v, want accepted", u, err)
		}
	}
}

func TestCheck_AllowCIDRsOpensOnlyThosePrefixes(t *testing.T) {
	t.Parallel()
	c := New(Options{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}})
	if _, err := c.Check("https://10.1.2.3:9000/v.mp4", false); err != nil {
		t.Fatalf("allow-listed prefix refused: %v", err)
	}
	_, err := c.Check("https://10.2.0.1/v.mp4", false)
	assertKind(t, err, ErrForbiddenAddress)
	_, err = c.Check("https://127.0.0.1/v.mp4", false)
	assertKind(t, err, ErrForbiddenAddress)
}

func TestParseInetAton_MatchesGlibcForms(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"2130706433":         "127.0.0.1",
		"0177.0.0.1":         "127.0.0.1",
		"0x7f.1":             "127.0.0.1",
		"127.1":              "127.0.0.1",
		"127.0.1":            "127.0.0.1",
		"0xa9.254.0251.0376": "169.254.169.254",
		"0":                  "0.0.0.0",
		"0x":                 "0.0.0.0",
		"1.2.3.4":            "1.2.3.4",
	}
	for in, want := range cases {
		got, ok := hostname.ParseInetAton(in)
		if !ok || got != netip.MustParseAddr(want) {
			t.Errorf("ParseInetAton(%q) = %v, %v; want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"256.1.1.1", "1.2.3.4.5", "08.1.1.1", "1.16777216", "0x1g", "", "1..2"} {
		if got, ok := hostname.ParseInetAton(in); ok {
			t.Errorf("ParseInetAton(%q) = %v, want not an address", in, got)
		}
	}
}
