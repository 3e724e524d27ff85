package console

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/blob"
	"mediagen/internal/idgen"
	"mediagen/internal/limits"
	"mediagen/internal/netlimit"
	"mediagen/internal/store"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Defaults of both consoles.
const (
	// DefaultSessionTTL is how long a session lasts after sign-in: a working day.
	DefaultSessionTTL = 12 * time.Hour
	// SignInPerSecond and SignInBurst bound sign-in attempts per client address: ten tries at
	// once, then one every ten seconds — plenty for a person, useless for guessing.
	SignInPerSecond = 0.1
	SignInBurst     = 10
	// PageSize is the rows of one page of a list.
	PageSize = 50
	// MaxFormBytes bounds a console form post.
	MaxFormBytes = 64 << 10
)

// Kind tells the two consoles apart: their cookie, their sign-in credential, their pages.
type Kind string

// The consoles.
const (
	KindTenant   Kind = "tenant"
	KindOperator Kind = "admin"
)

// Common is what both consoles need.
type Common struct {
	Sessions store.ConsoleStore
	// PublicURL is the address browsers reach this console's listener at, when the service
	// knows one (the tenant console: --public-url; the operator console has none). A request
	// addressed to an https URL's host is taken to have come over https even from a proxy
	// missing from Proxies, as it did before the scheme was decided per request. Whether a
	// request came over https decides the cookie's Secure flag and the Origin it must carry
	// (scheme.go).
	PublicURL string
	// SessionTTL overrides DefaultSessionTTL.
	SessionTTL time.Duration
	Now        func() time.Time
	Logger     *slog.Logger
	// SignInRates bounds sign-in attempts per client address (nil: SignInPerSecond, SignInBurst).
	SignInRates *limits.ClientRates
	// Proxies name the client address from X-Forwarded-For (nil: the peer), and the scheme
	// the browser used from X-Forwarded-Proto.
	Proxies netlimit.Proxies
	// MediaOrigins are origins besides this one that results are served from (an S3 public
	// URL), allowed by the Content-Security-Policy for <video>, <audio> and <img>.
	MediaOrigins []string
}

// core is the machinery both consoles share: sessions, CSRF, templates, headers, errors.
type core struct {
	Common
	kind  Kind
	mux   *http.ServeMux
	pages map[string]*template.Template
	csp   string
	// check verifies a typed key or token at sign-in and returns the hash the session keeps;
	// authenticate re-checks that hash on every request and fills in the session's principal.
	check        func(ctx context.Context, secret string) ([]byte, error)
	authenticate func(ctx context.Context, credentialHash []byte, s *Session) error
	static       http.Handler
	staticHash   map[string]string // file name → short content hash, for cache-busting URLs
	httpsHost    string            // PublicURL's host:port when it is https, else ""
	// linkBase, when set, is the base URL of the links a session's pages show (the tenant
	// console: the tenant's own address, addresses.go in internal/catalog); "" is the
	// service's. httpsAddress reports a Host header that names an https address of it.
	linkBase     func(r *http.Request, s *Session) string
	httpsAddress func(host string) bool
}

type requestHostKey struct{}

// requestHost is the Host header of the request whose context ctx is, set by ServeHTTP: the
// tenant console accepts on a tenant's address only that tenant's keys.
func requestHost(ctx context.Context) string {
	h, _ := ctx.Value(requestHostKey{}).(string)
	return h
}

func newCore(c Common, kind Kind, funcs template.FuncMap) (*core, error) {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.SessionTTL <= 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.SignInRates == nil {
		c.SignInRates = limits.NewClientRates(c.Now, SignInPerSecond, SignInBurst, "console sign-in attempts")
	}
	k := &core{Common: c, kind: kind, mux: http.NewServeMux()}
	if u, err := url.Parse(c.PublicURL); err == nil && u.Scheme == "https" && u.Host != "" {
		k.httpsHost = hostPort(u.Host, "https")
	}
	statics, err := hashStatics()
	if err != nil {
		return nil, fmt.Errorf("console static files: %w", err)
	}
	k.staticHash = statics
	pages, err := parsePages(kind, funcs, statics)
	if err != nil {
		return nil, err
	}
	k.pages = pages
	k.csp = k.cspWith("")
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("console static files: %w", err)
	}
	k.static = http.StripPrefix("/console/static/", http.FileServerFS(sub))
	k.mux.Handle("GET /console/static/", http.HandlerFunc(k.serveStatic))
	k.mux.HandleFunc("GET /console", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
	})
	k.mux.HandleFunc("GET /console/signin", k.signInPage)
	k.mux.HandleFunc("POST /console/signin", k.signIn)
	k.mux.HandleFunc("POST /console/signout", k.signOut)
	return k, nil
}

// cspWith is the console's Content-Security-Policy with one more origin results play from
// (none: ""): a tenant's own address when its pages are served on another.
func (k *core) cspWith(origin string) string {
	origins := append([]string{"'self'"}, k.MediaOrigins...)
	if origin != "" {
		origins = append(origins, origin)
	}
	media := strings.Join(origins, " ")
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src " + media + " data:; media-src " + media +
		"; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
}

// ServeHTTP answers every console path with the security headers set first; anything the
// routing table lacks is the console's own 404 page, behind a session like every page.
func (k *core) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", k.csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	// The public API's middleware has set the request id already; the admin listener's has not.
	id := h.Get("X-Request-Id")
	if id == "" {
		id = idgen.New("req")
		h.Set("X-Request-Id", id)
	}
	ctx := context.WithValue(r.Context(), requestIDKey{}, id)
	r = r.WithContext(context.WithValue(ctx, requestHostKey{}, r.Host))
	if _, pattern := k.mux.Handler(r); pattern == "" {
		k.handle(func(w http.ResponseWriter, r *http.Request, s *Session) error {
			return apierr.New(apierr.KindNotFound, "There is no console page at this address.")
		})(w, r)
		return
	}
	k.mux.ServeHTTP(w, r)
}

func (k *core) serveStatic(w http.ResponseWriter, r *http.Request) {
	// Static files are named with their content hash in every page (staticURL), so they can
	// be cached for a long time.
	if r.URL.Query().Get("v") != "" {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	}
	k.static.ServeHTTP(w, r)
}

type requestIDKey struct{}

// requestID is the request's id (for the audit log), set by ServeHTTP.
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// PageFunc is a console page's handler; it renders its page or returns an error, which is
// shown as the console's error page (a validation error on a form is the form's own business).
type PageFunc func(w http.ResponseWriter, r *http.Request, s *Session) error

// Page registers a page reached only with a session. A POST's CSRF token and origin are
// checked before h runs.
func (k *core) Page(pattern string, h PageFunc) {
	k.mux.HandleFunc(pattern, k.handle(h))
}

func (k *core) handle(h PageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		s, err := k.session(r)
		if err != nil {
			if errors.Is(err, errNoSession) {
				if r.Method == http.MethodGet || r.Method == http.MethodHead {
					http.Redirect(w, r, "/console/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
					return
				}
				k.renderError(w, r, nil, apierr.New(apierr.KindAuthentication, "Your session has ended. Sign in again."))
				return
			}
			k.renderError(w, r, nil, err)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
			if err := r.ParseForm(); err != nil {
				k.renderError(w, r, s, formErr(err))
				return
			}
			if !k.sameOrigin(r) || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.CSRF)) != 1 {
				k.renderError(w, r, s, &apierr.Error{Kind: apierr.KindPermission, Code: "csrf_failed",
					Message: "This form was not sent from this console page (its security token is missing or stale). Reload the page and try again."})
				return
			}
		}
		if k.linkBase != nil {
			if base := k.linkBase(r, s); base != "" {
				r = r.WithContext(blob.WithLinkBase(r.Context(), base))
				if base != k.scheme(r)+"://"+strings.ToLower(r.Host) {
					// The pages play results from the tenant's address while served on
					// another (the service's own): the policy lets that origin in too.
					w.Header().Set("Content-Security-Policy", k.cspWith(base))
				}
			}
		}
		if err := h(w, r, s); err != nil {
			k.renderError(w, r, s, err)
		}
	}
}

// renderError shows err as a page with its status. Internal causes are logged, never shown.
func (k *core) renderError(w http.ResponseWriter, r *http.Request, s *Session, err error) {
	if berr := netlimit.BodyErr(r.Context()); berr != nil {
		err = berr // the form stopped arriving (the admin listener paces bodies)
	}
	e := apierr.As(err)
	if e.Kind == apierr.KindRequestTimeout {
		// What is left of the body is still on its way: the connection cannot be reused.
		w.Header().Set("Connection", "close")
	}
	if e.Kind == apierr.KindInternal || e.Kind == apierr.KindUnavailable {
		k.Logger.ErrorContext(r.Context(), "console page failed", "path", r.URL.Path, "err", err)
	}
	title := http.StatusText(e.Status())
	k.render(w, r, s, e.Status(), "error", title, errorPage{Status: e.Status(), Message: e.Message, Code: e.CodeOrDefault()})
}

// formErr is the answer to a form that could not be read: the paced body's 408 when it
// stopped arriving (netlimit.ErrBodyTimeout), else a 400.
func formErr(err error) error {
	if errors.Is(err, netlimit.ErrBodyTimeout) {
		return err
	}
	return apierr.Invalid("", "The form could not be read.")
}

type errorPage struct {
	Status  int
	Message string
	Code    string
}

// Route is the pattern of the console page r asks for ("GET /console/tasks/{id}"), "" for
// none: the name of the request's trace span (tracing on), never its raw path.
func (k *core) Route(r *http.Request) string {
	_, pattern := k.mux.Handler(r)
	return pattern
}
