package safefetch

import (
	"net/netip"
	"strings"
	"testing"

	"mediagen/internal/hostname"
)

// FuzzCheckURL: Check never panics, and whatever it accepts satisfies the
// rules on its own terms (an independent re-check of the accepted URL).
func FuzzCheckURL(f *testing.F) {
	for _, tc := range staticRejects {
		f.Add(tc.url, tc.allowHTTP)
	}
	for _, s := range []string{
		"https://example.com/v.mp4", "http://example.com/", "https://[2606:2800:220:1::1]/",
		"https://93.184.216.34:443/x?y#z", "https://a.b.c.d.example.org/p%20q", "https://xn--bcher-kva.example/",
		"https://0x.0x.0x.0x/", "https://1e1.example/", "https://[::ffff:0:0]/", "https://999999999999/",
	} {
		f.Add(s, true)
	}
	c := New(Options{})
	f.Fuzz(func(t *testing.T, raw string, allowHTTP bool) {
		u, err := c.Check(raw, allowHTTP)
		if err != nil {
			return
		}
		if u.Scheme != "https" && !(allowHTTP && u.Scheme == "http") {
			t.Fatalf("accepted scheme %q", u.Scheme)
		}
		if u.User != nil {
			t.Fatal("accepted userinfo")
		}
		host := u.Hostname()
		if host == "" || strings.HasSuffix(host, ".") || host != strings.ToLower(host) {
			t.Fatalf("accepted host %q", host)
		}
		if ip, err := netip.ParseAddr(host); err == nil {
			if c.policy.checkIP(ip) != nil {
				t.Fatalf("accepted forbidden literal %s", ip)
			}
			return
		}
		if _, ok := hostname.ParseInetAton(host); ok {
			t.Fatalf("accepted inet_aton spelling %q", host)
		}
		if host == "localhost" || strings.HasSuffix(host, ".localhost") || !strings.Contains(host, ".") {
			t.Fatalf("accepted local or single-label host %q", host)
		}
		for _, r := range host {
			if r > 0x7f {
				t.Fatalf("accepted non-ASCII host %q", host)
			}
		}
	})
}
