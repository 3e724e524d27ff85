package adminapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/admin"
	"mediagen/internal/apierr"
	"mediagen/internal/idgen"
	"mediagen/internal/netlimit"
	"mediagen/internal/store"
)

// Bounds of the admin API.
const (
	// DefaultIdempotencyTTL is how long a write's answer is kept for replays.
	DefaultIdempotencyTTL = 24 * time.Hour
	// MaxIdempotencyKey bounds the Idempotency-Key header.
	MaxIdempotencyKey = 255
	// MaxBody bounds a write's body: admin bodies are a few short members.
	MaxBody = 64 << 10
)

// Config is what New needs.
type Config struct {
	Service *admin.Service
	Logger  *slog.Logger
	// Registerer, when set, receives mediagen_admin_requests_total.
	Registerer prometheus.Registerer
	// IdempotencyTTL overrides DefaultIdempotencyTTL (tests).
	IdempotencyTTL time.Duration
}

// Server is the admin API's handler.
type Server struct {
	svc      *admin.Service
	log      *slog.Logger
	ttl      time.Duration
	mux      *http.ServeMux      // METHOD path → route
	paths    *http.ServeMux      // path alone, to tell 405 from 404
	allow    map[string][]string // path pattern → its methods, for 405's Allow
	routes   []string
	requests *prometheus.CounterVec
}

// New returns the server with the core routes registered (routes.go); other parts of the
// operator plane add theirs with Read, ReadRaw and Write before serving.
func New(cfg Config) *Server {
	s := &Server{svc: cfg.Service, log: cfg.Logger, ttl: cfg.IdempotencyTTL, mux: http.NewServeMux(), paths: http.NewServeMux(),
		allow: map[string][]string{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.ttl <= 0 {
		s.ttl = DefaultIdempotencyTTL
	}
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mediagen_admin_requests_total",
		Help: "Admin API requests by route (the registered pattern, or \"unmatched\") and status code.",
	}, []string{"route", "status"})
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(s.requests)
	}
	s.coreRoutes()
	s.supportRoutes()
	s.keyLifecycleRoutes()
	s.webhookRoutes()
	return s
}

// Service is the admin service the handlers call.
func (s *Server) Service() *admin.Service { return s.svc }

// Request is an authenticated admin request.
type Request struct {
	*http.Request
	// Actor is who is asking, for the service's calls.
	Actor admin.Actor
	// Body is a write's body, read in full (at most MaxBody); nil for reads.
	Body []byte
}

// Decode reads the body strictly against fields (decode.go).
func (r *Request) Decode(fields ...Field) (*Body, error) { return decodeBody(r.Body, fields) }

// Query reads the query string strictly: only the names given may appear.
func (r *Request) Query(allowed ...string) (*Query, error) {
	return parseQuery(r.URL.RawQuery, allowed)
}

// HandlerFunc is a route's handler: its result is the answer body.
type HandlerFunc func(r *Request) (any, error)

// RawFunc is a read route that writes its own answer (a CSV export, say).
type RawFunc func(w http.ResponseWriter, r *Request) error

// Read registers a GET route for role (and every role above it); h's result is answered 200.
func (s *Server) Read(pattern string, role admin.Role, h HandlerFunc) {
	s.ReadRaw(pattern, role, func(w http.ResponseWriter, r *Request) error {
		v, err := h(r)
		if err != nil {
			return err
		}
		body, err := marshal(v)
		if err != nil {
			return err
		}
		writeBody(w, http.StatusOK, body)
		return nil
	})
}

// ReadRaw registers a GET route whose handler writes its own answer.
func (s *Server) ReadRaw(pattern string, role admin.Role, h RawFunc) {
	method, _ := s.register(pattern)
	if method != http.MethodGet {
		panic("adminapi: a read route must be GET: " + pattern)
	}
	s.mux.Handle(pattern, s.route(pattern, role, func(w http.ResponseWriter, r *Request) error { return h(w, r) }))
}

// Write registers a POST, PATCH or DELETE route for role: idempotent, and answered with
// status and h's result (see the package comment).
func (s *Server) Write(pattern string, role admin.Role, status int, h HandlerFunc) {
	if method, _ := s.register(pattern); method == http.MethodGet {
		panic("adminapi: a write route must not be GET: " + pattern)
	}
	s.mux.Handle(pattern, s.route(pattern, role, func(w http.ResponseWriter, r *Request) error {
		return s.idempotent(w, r, status, h)
	}))
}

// register records the path for 405 answers and returns the pattern's method.
func (s *Server) register(pattern string) (string, string) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok || !strings.HasPrefix(path, "/admin/v1/") {
		panic("adminapi: a pattern is \"METHOD /admin/v1/…\": " + pattern)
	}
	s.routes = append(s.routes, pattern)
	if _, ok := s.allow[path]; !ok {
		s.paths.Handle(path, http.NotFoundHandler())
	}
	s.allow[path] = append(s.allow[path], method)
	if method == http.MethodGet {
		s.allow[path] = append(s.allow[path], http.MethodHead) // the mux answers HEAD with GET's route
	}
	return method, path
}

// Routes lists the registered patterns ("POST /admin/v1/keys"), in registration order.
func (s *Server) Routes() []string { return append([]string(nil), s.routes...) }

// Route is the pattern of the admin route r asks for ("GET /admin/v1/keys/{id}"), "" for
// none: the name of the request's trace span (tracing on), never its raw path.
func (s *Server) Route(r *http.Request) string {
	_, pattern := s.mux.Handler(r)
	return pattern
}

// Handler serves the admin API; anything outside its routes is the envelope's 404 (or 405).
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The request's id is always the service's own: it names the request in the audit
		// log and the logs, and a caller could send any id (another request's included). A
		// sane X-Request-Id the caller sent is kept apart (callerRequestIDKey) and recorded
		// as such; the answer's X-Request-Id is the service's, the one to quote.
		id := idgen.New("req")
		w.Header().Set("X-Request-Id", id)
		ctx := context.WithValue(r.Context(), requestIDKey{}, id)
		if caller := r.Header.Get("X-Request-Id"); validRequestID(caller) {
			ctx = context.WithValue(ctx, callerRequestIDKey{}, caller)
		}
		r = r.WithContext(ctx)
		sw := &statusWriter{ResponseWriter: w}
		_, pattern := s.mux.Handler(r)
		if pattern == "" {
			pattern = "unmatched"
			_, pathPattern := s.paths.Handler(r)
			switch {
			case pathPattern != "" && strings.HasPrefix(r.URL.Path, "/admin/v1/"):
				sw.Header().Set("Allow", strings.Join(s.allow[pathPattern], ", "))
				s.writeError(sw, r, apierr.New(apierr.KindMethodNotAllowed, "This path does not take this method. Check the admin API reference (docs/admin-openapi.yaml)."))
			default:
				s.writeError(sw, r, apierr.New(apierr.KindNotFound, "No admin route matches this path. Check the method and path against the admin API reference (docs/admin-openapi.yaml)."))
			}
		} else {
			s.mux.ServeHTTP(sw, r) // sets the path values
		}
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		s.requests.WithLabelValues(pattern, strconv.Itoa(sw.status)).Inc()
	})
}

type requestIDKey struct{}

// callerRequestIDKey carries the X-Request-Id the caller sent, when it was sane.
type callerRequestIDKey struct{}

// tokenSecretKey carries the presented secret to the idempotency layer (answers are sealed
// with it); it never leaves the request.
type tokenSecretKey struct{}

// route authenticates, checks the role, and runs h.
func (s *Server) route(pattern string, role admin.Role, h RawFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secret, err := bearer(r)
		if err == nil {
			var tok store.AdminToken
			tok, err = s.svc.Authenticate(r.Context(), secret)
			if err == nil {
				have, _ := admin.ParseRole(tok.Role)
				if !have.Allows(role) {
					err = admin.Forbidden(have, role)
				} else {
					reqID, _ := r.Context().Value(requestIDKey{}).(string)
					callerID, _ := r.Context().Value(callerRequestIDKey{}).(string)
					req := &Request{Request: r.WithContext(context.WithValue(r.Context(), tokenSecretKey{}, secret)),
						Actor: admin.Actor{TokenID: tok.ID, Name: tok.Name, Role: have, Via: admin.ViaAPI, RequestID: reqID,
							CallerRequestID: callerID, RemoteAddr: r.RemoteAddr}}
					err = h(w, req)
				}
			}
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	})
}

func bearer(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", &apierr.Error{Kind: apierr.KindAuthentication, Code: "missing_admin_token",
			Message: "Missing Authorization header. Send Authorization: Bearer <admin token>."}
	}
	scheme, token, _ := strings.Cut(strings.TrimSpace(h), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", &apierr.Error{Kind: apierr.KindAuthentication, Code: "invalid_auth_scheme",
			Message: "The Authorization header must use the Bearer scheme: Authorization: Bearer <admin token>."}
	}
	return strings.TrimSpace(token), nil
}

// errReplay tells idempotent that a concurrent duplicate stored its answer first.
var errReplay = errors.New("a concurrent duplicate answered first")

// idempotent runs a write once per Idempotency-Key (package comment).
func (s *Server) idempotent(w http.ResponseWriter, r *Request, status int, h HandlerFunc) error {
	key := r.Header.Get("Idempotency-Key")
	if err := checkIdempotencyKey(key); err != nil {
		return err
	}
	if _, err := parseQuery(r.URL.RawQuery, nil); err != nil {
		return err // a write takes its input from the path and the body only
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Request.Body, MaxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return &apierr.Error{Kind: apierr.KindTooLarge, Message: fmt.Sprintf("The request body is larger than %d bytes.", MaxBody)}
		}
		if errors.Is(err, netlimit.ErrBodyTimeout) {
			return err // the paced body's 408 (the listener paces bodies: netlimit.PaceBodies)
		}
		return apierr.Invalid("", "The request body could not be read.")
	}
	r.Body = body
	secret, _ := r.Context().Value(tokenSecretKey{}).(string)
	sealKey := answerKey(secret, key)
	hash := requestHash(r.Method, r.URL.RequestURI(), body)
	if done, err := s.replay(w, r, key, hash, sealKey); done || err != nil {
		return err
	}
	var answer []byte
	ctx := admin.WithAnswer(r.Context(), func(ctx context.Context, tx store.Tx, result any) error {
		b, err := marshal(result)
		if err != nil {
			return err
		}
		sealed, err := seal(sealKey, b)
		if err != nil {
			return fmt.Errorf("seal answer: %w", err)
		}
		now := s.svc.Now()
		err = tx.PutIdempotentAnswer(ctx, store.IdempotentAnswer{TokenID: r.Actor.TokenID, Key: key, RequestHash: hash,
			Status: status, Body: sealed, CreatedAt: now, ExpiresAt: now.Add(s.ttl)}, now)
		if errors.Is(err, store.ErrConflict) {
			return errReplay
		}
		answer = b
		return err
	})
	r.Request = r.Request.WithContext(ctx)
	_, err = h(r) // the result is the answer the hook recorded
	if errors.Is(err, errReplay) {
		if done, err := s.replay(w, r, key, hash, sealKey); done || err != nil {
			return err
		}
		return fmt.Errorf("idempotent answer %s vanished after a conflict", key)
	}
	if err != nil {
		return err
	}
	if answer == nil {
		// The handler wrote nothing through the service: a route bug, since its change was
		// then neither audited nor recorded. Refuse to answer as if it had been.
		return fmt.Errorf("write route %s answered without an audited write", r.Pattern)
	}
	writeBody(w, status, answer)
	return nil
}

// replay answers from a stored answer when there is one.
func (s *Server) replay(w http.ResponseWriter, r *Request, key string, hash, sealKey []byte) (bool, error) {
	prev, err := s.svc.Store().IdempotentAnswer(r.Context(), r.Actor.TokenID, key, s.svc.Now())
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !bytes.Equal(prev.RequestHash, hash) {
		return false, &apierr.Error{Kind: apierr.KindIdempotency, Code: "idempotency_conflict", Param: "Idempotency-Key",
			Message: "This Idempotency-Key was already used with a different request (method, path or body). Use a new key for a new request."}
	}
	body, err := unseal(sealKey, prev.Body)
	if err != nil {
		return false, fmt.Errorf("unseal answer %s: %w", key, err)
	}
	w.Header().Set("Idempotent-Replayed", "true")
	writeBody(w, prev.Status, body)
	return true, nil
}

func checkIdempotencyKey(key string) error {
	if key == "" {
		return apierr.Invalid("Idempotency-Key", "Every admin write needs an Idempotency-Key header: a unique string (a UUID, say) that makes a retry safe.")
	}
	if len(key) > MaxIdempotencyKey {
		return apierr.Invalid("Idempotency-Key", fmt.Sprintf("The Idempotency-Key header is longer than %d bytes.", MaxIdempotencyKey))
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return apierr.Invalid("Idempotency-Key", "The Idempotency-Key header must be printable ASCII.")
		}
	}
	return nil
}

func requestHash(method, uri string, body []byte) []byte {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(uri))
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum(nil)
}

// errorBody is the public API's envelope.
type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    string `json:"code"`
	Param   string `json:"param,omitempty"`
}

// writeError writes the envelope; an internal cause is logged with the request id, never sent.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if berr := netlimit.BodyErr(r.Context()); berr != nil {
		err = berr // the body stopped arriving, whatever the handler made of the read error
	}
	e := apierr.As(err)
	if e.Kind == apierr.KindRequestTimeout {
		// What is left of the body is still on its way: the connection cannot be reused.
		w.Header().Set("Connection", "close")
	}
	if e.Kind == apierr.KindInternal || e.Kind == apierr.KindUnavailable {
		reqID, _ := r.Context().Value(requestIDKey{}).(string)
		callerID, _ := r.Context().Value(callerRequestIDKey{}).(string)
		s.log.ErrorContext(r.Context(), "admin request failed", "request_id", reqID, "caller_request_id", callerID,
			"method", r.Method, "path", r.URL.Path, "err", err)
	}
	b, merr := json.Marshal(errorBody{Error: errorObject{Message: e.Message, Type: e.Type(), Code: e.CodeOrDefault(), Param: e.Param}})
	if merr != nil {
		b = []byte(`{"error":{"message":"The server could not complete the request.","type":"api_error","code":"internal_error"}}`)
	}
	writeBody(w, e.Status(), b)
}

func marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		return nil, fmt.Errorf("marshal answer: %w", err)
	}
	return b, nil
}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
