package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/go-json-experiment/json"

	"mediagen/internal/apierr"
)

// handlerFunc is what every route implements: write a success answer, or return an error for
// writeError to turn into an envelope.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle registers a handlerFunc on the mux.
func (s *Server) handle(pattern string, h handlerFunc) {
	s.mux.Handle(pattern, route{http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})})
}

// route marks a handler of the routing table, so dispatch can tell it from the mux's own
// answers (not found, method not allowed, redirects), which come back with a pattern too.
type route struct{ http.Handler }

type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    string `json:"code"`
	Param   string `json:"param,omitempty"`
}

// writeError writes the envelope. Internal causes are logged with the request id and never
// sent; the client gets the kind's sanitized message.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	info := infoFrom(r.Context())
	if info != nil {
		if berr := info.body.Err(); berr != nil {
			// The body stopped arriving: whatever the handler made of the read error (a store
			// may not wrap it), the answer is the body's 408.
			err = berr
		}
	}
	e := apierr.As(err)
	if e.Kind == apierr.KindRequestTimeout {
		// What is left of the body is still on its way: the connection cannot be reused.
		w.Header().Set("Connection", "close")
	}
	if e.Kind == apierr.KindInternal || e.Kind == apierr.KindUnavailable {
		s.log.ErrorContext(r.Context(), "request failed", "request_id", requestIDFrom(r.Context()),
			"path", r.URL.Path, "err", err)
	}
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		e = apiErrTooLarge(s.maxBody)
	}
	if info != nil {
		info.errCode = e.CodeOrDefault()
	}
	s.noteRefusal(w, err)
	if e.RetryAfter > 0 && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if e.Kind == apierr.KindRateLimit && w.Header().Get("Retry-After") == "" {
		// Every 429 says when to come back, even one that names no wait: a well-behaved
		// client waits for it instead of guessing.
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.Status(), errorBody{Error: errorObject{
		Message: e.Message, Type: e.Type(), Code: e.CodeOrDefault(), Param: e.Param,
	}})
}

// writeJSON writes v with the given status. Marshal errors cannot happen for the server's own
// response types; if one did, the client gets a fixed 500 envelope rather than half a document.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"The server could not complete the request. Retry later; if it persists, contact the operator with the request id.","type":"api_error","code":"internal_error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func apiErrNotFound() *apierr.Error {
	return apierr.New(apierr.KindNotFound, "No route matches this path. Check the method and path against the API reference.")
}

func apiErrUncleanPath() *apierr.Error {
	return apierr.New(apierr.KindNotFound, "No route matches this path: it is not in canonical form (an empty segment \"//\", a \".\" or \"..\" segment, or a missing trailing slash). Send the path exactly as the API reference spells it.")
}

// apiErrMethod names the method only when it is a standard one: any token is a valid method
// on the wire, and an invented one (of any length) is not echoed back.
func apiErrMethod(method string) *apierr.Error {
	name := "This method"
	if methodLabel(method) != "other" {
		name = "Method " + method
	}
	return apierr.New(apierr.KindMethodNotAllowed, name+" is not allowed on this path; see the Allow header.")
}

func apiErrTooLarge(limit int64) *apierr.Error {
	return apierr.New(apierr.KindTooLarge, "The request body is larger than the limit of "+humanBytes(limit)+".")
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return itoa(n>>10) + " KiB"
	}
	return itoa(n) + " bytes"
}
