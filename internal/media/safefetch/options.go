package safefetch

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// Resolver is the subset of *net.Resolver the client needs. Tests inject
// one to show what would be dialled for names that point anywhere.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialFunc dials an address that has already passed the address check; it
// always receives a literal IP and port, never a host name.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Options configure a Client. The zero value is the production policy:
// https only, public addresses on ports 443 and 80, 3 redirects, 32 MiB.
type Options struct {
	// AllowHTTP permits plain http for every request of this client.
	// Prefer RequestOptions.AllowHTTP for the one route that needs it.
	AllowHTTP bool

	// AllowLoopback lets the client reach 127.0.0.0/8 and ::1 and accept the
	// names localhost/*.localhost. For operators' development and for the
	// sandbox; never set it in production.
	AllowLoopback bool
	// AllowCIDRs lists more prefixes an operator trusts (e.g. a dev MinIO on
	// 10.0.0.0/8). They are checked before the deny list.
	AllowCIDRs []netip.Prefix
	// AllowedPorts applies to every destination that is not in the
	// operator's allow-list (loopback when AllowLoopback, AllowCIDRs); those
	// may use any port. Default: 443, 80.
	AllowedPorts []int

	// MaxRedirects caps hops per request; 0 means the default (3), a
	// negative value forbids redirects for every request.
	MaxRedirects int
	// MaxBytes caps every body; 0 means 32 MiB.
	MaxBytes int64

	ConnectTimeout time.Duration // per dial and TLS handshake; default 5s
	HeaderTimeout  time.Duration // request sent → headers received; default 10s
	TotalTimeout   time.Duration // whole request including body; default 60s

	// Resolver defaults to net.DefaultResolver.
	Resolver Resolver
	// DialContext replaces the guarded net.Dialer (tests). It is only ever
	// called with an IP that passed the address check.
	DialContext DialFunc
	// TLSConfig lets tests trust an httptest certificate. Nil means the
	// system roots with TLS 1.2 or later.
	TLSConfig *tls.Config

	// Samples, when set, answers one reserved host from built-in sandbox
	// media without any network I/O (see Samples). Nil in production.
	Samples *Samples
}

// RequestOptions adjust one Get.
type RequestOptions struct {
	// AllowHTTP permits an http:// URL for this request (the standalone
	// enhancement source accepts http). A redirect from https to http is
	// still refused.
	AllowHTTP bool
	// NoRedirects makes any redirect answer fail with ErrRedirect (speech
	// references must be direct).
	NoRedirects bool
	// MaxBytes overrides the client's body cap for this request when > 0.
	MaxBytes int64
	// Hosts, when set, must accept the host of the URL and of every redirect hop (an
	// upstream account's result hosts); the address policy applies as well.
	Hosts func(host string) bool
	// Header is added to the request (e.g. Range). Authorization and Cookie
	// are never forwarded across a redirect.
	Header http.Header
}

const (
	defaultMaxRedirects   = 3
	defaultMaxBytes       = 32 << 20
	defaultConnectTimeout = 5 * time.Second
	defaultHeaderTimeout  = 10 * time.Second
	defaultTotalTimeout   = 60 * time.Second
)

func (o Options) withDefaults() Options {
	if o.MaxRedirects == 0 {
		o.MaxRedirects = defaultMaxRedirects
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = defaultMaxBytes
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = defaultConnectTimeout
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = defaultHeaderTimeout
	}
	if o.TotalTimeout <= 0 {
		o.TotalTimeout = defaultTotalTimeout
	}
	if len(o.AllowedPorts) == 0 {
		o.AllowedPorts = []int{443, 80}
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	return o
}
