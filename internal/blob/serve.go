package blob

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"mediagen/internal/apierr"
)

// FilesPath is the path prefix of links; ServeFile is the handler of
// "GET /v1/files/{key...}".
const FilesPath = "/v1/files/"

// SignedURL implements Store. The expiry is rounded up to a whole second; a ttl under one
// second is treated as one second. A link to an invalid key is well-formed but answers 404.
func (s *FS) SignedURL(key string, ttl time.Duration) (string, time.Time) {
	return s.SignedURLAt(s.publicBase, key, ttl)
}

// SignedURLAt is SignedURL with base in place of the store's public base: the same link on
// another of the service's addresses (a tenant's own, WithLinkBase). The signature covers the
// key and the expiry only, so a link works on every address that reaches the service.
func (s *FS) SignedURLAt(base, key string, ttl time.Duration) (string, time.Time) {
	ttl = max(ttl, time.Second)
	exp := s.now().Add(ttl)
	unix := exp.Unix()
	if exp.Nanosecond() > 0 {
		unix++
	}
	e := strconv.FormatInt(unix, 10)
	sig := hex.EncodeToString(s.sign(key, e))
	return base + FilesPath + escapeKey(key) + "?expires=" + e + "&sig=" + sig, time.Unix(unix, 0)
}

type linkBaseKey struct{}

// WithLinkBase returns ctx under which SignedURLIn mints links with base (scheme://host[:port],
// no trailing slash) in place of the store's public base: the tenant's own address that a
// request is answered on (internal/catalog, addresses.go). An empty base changes nothing.
func WithLinkBase(ctx context.Context, base string) context.Context {
	if base == "" {
		return ctx
	}
	return context.WithValue(ctx, linkBaseKey{}, base)
}

// LinkBase is what WithLinkBase attached to ctx, or "".
func LinkBase(ctx context.Context) string {
	b, _ := ctx.Value(linkBaseKey{}).(string)
	return b
}

// baseLinker is a store whose links name this service's address, which can name another
// (FS); an object store's presigned links name the bucket's endpoint instead.
type baseLinker interface {
	SignedURLAt(base, key string, ttl time.Duration) (string, time.Time)
}

// SignedURLIn is s.SignedURL under ctx's link base (WithLinkBase), for links shown to a
// tenant. Links an upstream fetches keep the service's own address: mint them with SignedURL.
func SignedURLIn(ctx context.Context, s Store, key string, ttl time.Duration) (string, time.Time) {
	return SignedURLAt(s, LinkBase(ctx), key, ttl)
}

// SignedURLAt is s.SignedURL with base in place of the store's public base when s mints links
// on this service's address (FS); base "" is the store's own.
func SignedURLAt(s Store, base, key string, ttl time.Duration) (string, time.Time) {
	if base != "" {
		if b, ok := s.(baseLinker); ok {
			return b.SignedURLAt(base, key, ttl)
		}
	}
	return s.SignedURL(key, ttl)
}

// escapeKey escapes each segment; valid keys come out unchanged.
func escapeKey(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// sign is HMAC-SHA256 over key "\n" expires. Keys cannot contain a newline, so the message
// is unambiguous.
func (s *FS) sign(key, expires string) []byte {
	m := hmac.New(sha256.New, s.signingKey)
	m.Write([]byte(key))
	m.Write([]byte{'\n'})
	m.Write([]byte(expires))
	return m.Sum(nil)
}

// Linker adapts a Store to the services' link minting (Link(key) string), with one TTL.
type Linker struct {
	Store Store
	TTL   time.Duration
}

// Link mints a fresh temporary link to key.
func (l Linker) Link(key string) string {
	u, _ := l.Store.SignedURL(key, l.TTL)
	return u
}

func errInvalidSignature() *apierr.Error {
	return &apierr.Error{Kind: apierr.KindPermission, Code: "invalid_signature",
		Message: "This file link is not valid: its signature is missing or does not match. Use the exact URL returned by the API."}
}

func errLinkExpired() *apierr.Error {
	return &apierr.Error{Kind: apierr.KindPermission, Code: "link_expired",
		Message: "This file link has expired. File links are temporary: read the task (or result) again to get a fresh link."}
}

func errFileNotFound() *apierr.Error {
	return &apierr.Error{Kind: apierr.KindNotFound, Code: "file_not_found",
		Message: "The file does not exist. Results are kept for a limited time and may have been deleted."}
}

// verify checks the link's signature and expiry, returning the expiry. It never touches the
// disk.
func (s *FS) verify(key, rawQuery string) (time.Time, *apierr.Error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return time.Time{}, errInvalidSignature()
	}
	es, sigs := q["expires"], q["sig"]
	if len(es) != 1 || len(sigs) != 1 {
		return time.Time{}, errInvalidSignature()
	}
	exp, err := strconv.ParseInt(es[0], 10, 64)
	if err != nil || exp <= 0 {
		return time.Time{}, errInvalidSignature()
	}
	sig, err := hex.DecodeString(sigs[0])
	if err != nil || len(sig) != sha256.Size {
		return time.Time{}, errInvalidSignature()
	}
	if !hmac.Equal(sig, s.sign(key, es[0])) {
		return time.Time{}, errInvalidSignature()
	}
	expires := time.Unix(exp, 0)
	if !s.now().Before(expires) {
		return time.Time{}, errLinkExpired()
	}
	return expires, nil
}

// ServeFile is the handler of GET (and HEAD) /v1/files/{key...}. It verifies the signature and
// the expiry before touching the disk, then streams the object with http.ServeContent (range
// requests, conditional requests and HEAD). Errors are *apierr.Error values for the transport
// to write: 403 invalid_signature, 403 link_expired, 404 file_not_found, 416
// range_not_satisfiable (with Content-Range: bytes */SIZE), 412 precondition_failed; on error
// no status or body has been written. A malformed Range header is ignored (see
// normalizeRange).
//
// The key is the request's "key" path value, or else the path after FilesPath.
func (s *FS) ServeFile(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		return apierr.New(apierr.KindMethodNotAllowed, "Only GET and HEAD are allowed on file links; see the Allow header.")
	}
	key := r.PathValue("key")
	if key == "" {
		key, _ = strings.CutPrefix(r.URL.Path, FilesPath)
	}
	expires, aerr := s.verify(key, r.URL.RawQuery)
	if aerr != nil {
		return aerr
	}
	if ValidateKey(key) != nil {
		return errFileNotFound()
	}
	obj, err := s.Open(r.Context(), key)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return errFileNotFound()
		}
		return &apierr.Error{Kind: apierr.KindInternal,
			Message: "The server could not read the file. Retry later; if it persists, contact the operator.", Err: err}
	}
	defer obj.Close()
	info := obj.Info()
	maxAge := max(expires.Unix()-s.now().Unix(), 0)
	h := w.Header()
	h.Set("Content-Type", info.ContentType)
	h.Set("Cache-Control", "private, max-age="+strconv.FormatInt(maxAge, 10))
	h.Set("Content-Disposition", `inline; filename="`+path.Base(key)+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	// Objects are replaced only by rename, never changed in place, so size and modification
	// time identify the content (If-Range, If-None-Match).
	h.Set("ETag", `"`+strconv.FormatInt(info.Size, 16)+"-"+strconv.FormatInt(info.ModTime.UnixNano(), 16)+`"`)
	if rg := r.Header.Get("Range"); rg != "" {
		r = r.Clone(r.Context())
		if n := normalizeRange(rg, info.Size); n != "" {
			r.Header.Set("Range", n)
		} else {
			r.Header.Del("Range")
		}
	}
	c := &errorCatcher{ResponseWriter: w}
	http.ServeContent(c, r, path.Base(key), info.ModTime, obj)
	if c.status == 0 {
		return nil
	}
	// A refusal: nothing was written yet. Drop what describes the file, keep the validators'
	// answer headers a client needs (Content-Range on 416).
	for _, k := range []string{"Content-Type", "Content-Length", "Content-Disposition", "Cache-Control", "Content-Encoding"} {
		h.Del(k)
	}
	switch c.status {
	case http.StatusRequestedRangeNotSatisfiable:
		h.Set("Content-Range", "bytes */"+strconv.FormatInt(info.Size, 10))
		return &apierr.Error{Kind: apierr.KindRangeNotSatisfiable,
			Message: "The requested range selects no byte of the file (" + strconv.FormatInt(info.Size, 10) +
				" bytes); see Content-Range. Ask for a range inside the file, or omit Range to get the whole file."}
	case http.StatusPreconditionFailed:
		return apierr.New(apierr.KindPreconditionFailed,
			"A precondition of the request (If-Match or If-Unmodified-Since) does not hold for the current file.")
	}
	return &apierr.Error{Kind: apierr.KindInternal,
		Message: "The server could not read the file. Retry later; if it persists, contact the operator.",
		Err:     fmt.Errorf("serve %s: http.ServeContent answered %d", key, c.status)}
}
