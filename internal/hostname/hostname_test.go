package hostname

import (
	"net/netip"
	"testing"
)

func TestHostRulesAgreeWithTheirNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{"localhost is local", IsLocal("localhost"), true},
		{"a .localhost name is local", IsLocal("api.localhost"), true},
		{"a .home.arpa name is local", IsLocal("nas.home.arpa"), true},
		{"a public name is not local", IsLocal("cdn.example.com"), false},
		{"a name merely ending in local is not local", IsLocal("notlocal"), false},
		{"a CDN label with an underscore is valid", ValidLabel("img_1-a"), true},
		{"an upper-case label is not valid", ValidLabel("Img"), false},
		{"an empty label is not valid", ValidLabel(""), false},
		{"a 64-byte label is not valid", ValidLabel("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), false},
		{"a non-ASCII label is not valid", ValidLabel("café"), false},
		{"digits are numeric", NumericLabel("2130706433"), true},
		{"hex is numeric", NumericLabel("0x7f"), true},
		{"a bare 0x is numeric", NumericLabel("0x"), true},
		{"a name is not numeric", NumericLabel("com"), false},
		{"a public IPv4 is public", PublicIP(netip.MustParseAddr("93.184.216.34")), true},
		{"loopback is not public", PublicIP(netip.MustParseAddr("127.0.0.1")), false},
		{"a mapped private IPv4 is not public", PublicIP(netip.MustParseAddr("::ffff:10.0.0.1")), false},
		{"a global IPv6 is public", PublicIP(netip.MustParseAddr("2606:4700::1111")), true},
		{"link-local IPv6 is not public", PublicIP(netip.MustParseAddr("fe80::1")), false},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v", tt.name, tt.got)
		}
	}
}

func TestParseInetAtonReadsWhatResolversRead(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"2130706433": "127.0.0.1", "0x7f.1": "127.0.0.1", "0177.0.0.1": "127.0.0.1", "127.1": "127.0.0.1"} {
		if got, ok := ParseInetAton(in); !ok || got.String() != want {
			t.Errorf("ParseInetAton(%q) = %v, %v; want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"1.2.3.4.5", "256.1.1.1", "example"} {
		if got, ok := ParseInetAton(in); ok {
			t.Errorf("ParseInetAton(%q) = %v; want not an address", in, got)
		}
	}
}
