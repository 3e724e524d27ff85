package catalog

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// twoTenants is minimal with a second tenant, beta; ACME and BETA are replaced by the tenants'
// addresses lines.
const twoTenants = `tenants:
  - id: acme
    name: Acme
    currency: EUR
ACME    aliases:
      - alias: acme-fast
        product: native
        family: fast-2.0
        upstream: sandbox
        model: up-fast
    rates:
      native:
        acme-fast: 1.5
  - id: beta
    name: Beta
    currency: EUR
BETA    aliases:
      - alias: beta-fast
        product: native
        family: fast-2.0
        upstream: sandbox
        model: up-fast
    rates:
      native:
        beta-fast: 1.5
`

func withAddresses(acme, beta string) string {
	line := func(list string) string {
		if list == "" {
			return ""
		}
		return "    addresses: [" + list + "]\n"
	}
	return strings.NewReplacer("ACME", line(acme), "BETA", line(beta)).Replace(twoTenants)
}

func TestAddressesLoadCanonical(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(withAddresses(
		"https://Acme.Media.Example.com/, 'https://acme.example.net:443', 'http://acme.localhost:8080'", "")))
	if err != nil {
		t.Fatal(err)
	}
	acme, _ := c.Tenant("acme")
	want := []string{"https://acme.media.example.com", "https://acme.example.net", "http://acme.localhost:8080"}
	if got := acme.Addresses(); !slices.Equal(got, want) {
		t.Fatalf("addresses %q, want %q", got, want)
	}
	beta, _ := c.Tenant("beta")
	if len(beta.Addresses()) != 0 || beta.AddressFor("acme.media.example.com") != "" {
		t.Fatalf("a tenant without addresses has %q", beta.Addresses())
	}
}

func TestAddressesRefuseWhatIsNoBaseAddress(t *testing.T) {
	t.Parallel()
	many := make([]string, MaxAddresses+1)
	for i := range many {
		many[i] = fmt.Sprintf("'https://a%d.example.com'", i)
	}
	tests := []struct{ name, acme, beta, want string }{
		{"plain http on a public name", "'http://acme.example.com'", "", "must be https (http only for local names"},
		{"another scheme", "'ftp://acme.example.com'", "", "must be an https URL"},
		{"a path", "'https://acme.example.com/api'", "", "no path, query, fragment or user"},
		{"a query", "'https://acme.example.com?x=1'", "", "no path, query, fragment or user"},
		{"a fragment", "'https://acme.example.com#top'", "", "no path, query, fragment or user"},
		{"a user", "'https://u:p@acme.example.com'", "", "no path, query, fragment or user"},
		{"not absolute", "'acme.example.com'", "", "must be an absolute URL"},
		{"an IP address", "'https://203.0.113.7'", "", "not an IP address"},
		{"a loopback IP address", "'http://127.0.0.1:8080'", "", "not an IP address"},
		{"a bad host name", "'https://acme!.example.com'", "", "must be a DNS name"},
		{"a bad port", "'https://acme.example.com:70000'", "", `port "70000" must be 1 to 65535`},
		{"listed twice by one tenant", "'https://acme.example.com', 'https://ACME.example.com:443/'", "", `addresses[1] "https://ACME.example.com:443/" is listed twice`},
		{"a host of two tenants", "'https://shared.example.com'", "'https://shared.example.com'",
			`tenant "beta": addresses[0] "https://shared.example.com": the host shared.example.com is already an address of tenant "acme"; a host belongs to one tenant`},
		{"a host of two tenants on other ports", "'http://shared.localhost:8080'", "'http://shared.localhost:9090'", "a host belongs to one tenant"},
		{"too many", strings.Join(many, ", "), "", fmt.Sprintf("%d addresses, at most %d", MaxAddresses+1, MaxAddresses)},
		{"not a list", "", "", "wrong type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := withAddresses(tt.acme, tt.beta)
			if tt.name == "not a list" {
				src = strings.Replace(twoTenants, "ACME", "    addresses: https://acme.example.com\n", 1)
				src = strings.Replace(src, "BETA", "", 1)
			}
			_, err := Parse("c.yaml", []byte(src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// The tenant a Host header names, and the address shown to a tenant: the one the request came
// in on when it is the tenant's, else its first.
func TestAddressesMatchHostHeaders(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(withAddresses(
		"'https://acme.media.example.com', 'https://media.acme.example', 'http://acme.localhost:8080'",
		"'https://beta.media.example.com'")))
	if err != nil {
		t.Fatal(err)
	}
	acme, _ := c.Tenant("acme")
	tests := []struct {
		host, owner, acmeBase string
	}{
		{"acme.media.example.com", "acme", "https://acme.media.example.com"},
		{"ACME.media.example.com:443", "acme", "https://acme.media.example.com"},
		{"acme.media.example.com.", "acme", "https://acme.media.example.com"},
		{"media.acme.example", "acme", "https://media.acme.example"},
		{"acme.localhost:8080", "acme", "http://acme.localhost:8080"},
		{"acme.localhost:9090", "", "https://acme.media.example.com"},
		{"beta.media.example.com", "beta", "https://acme.media.example.com"},
		{"media.example.com", "", "https://acme.media.example.com"},
		{"127.0.0.1:8080", "", "https://acme.media.example.com"},
		{"[::1]:8080", "", "https://acme.media.example.com"},
		{"", "", "https://acme.media.example.com"},
	}
	for _, tt := range tests {
		owner := ""
		if t, ok := c.TenantByHost(tt.host); ok {
			owner = t.ID
		}
		if owner != tt.owner {
			t.Errorf("Host %q: owner %q, want %q", tt.host, owner, tt.owner)
		}
		if got := acme.AddressFor(tt.host); got != tt.acmeBase {
			t.Errorf("Host %q: acme's address %q, want %q", tt.host, got, tt.acmeBase)
		}
	}
	for u, want := range map[string]string{"https://beta.media.example.com:8443": "beta", "http://acme.localhost": "acme", "https://media.example.com": ""} {
		owner := ""
		if t, ok := c.OwnerOfHost(u); ok {
			owner = t.ID
		}
		if owner != want {
			t.Errorf("OwnerOfHost(%q) = %q, want %q", u, owner, want)
		}
	}
}
