package contract

import "fmt"

// ErrKind classifies a rejection. It maps one-to-one to an HTTP status and envelope type.
type ErrKind int

const (
	// KindInvalid is a request that breaks the contract: HTTP 400 invalid_request_error.
	KindInvalid ErrKind = iota + 1
	// KindPermission is a valid request for something the tenant's packages do not include:
	// HTTP 403 permission_error.
	KindPermission
)

// Status is the HTTP status code of the kind. Kept as a plain int so the package stays free
// of net/http.
func (k ErrKind) Status() int {
	if k == KindPermission {
		return 403
	}
	return 400
}

// Type is the error envelope's type value.
func (k ErrKind) Type() string {
	if k == KindPermission {
		return "permission_error"
	}
	return "invalid_request_error"
}

// Error is a client-safe rejection: Param is the offending field's path ("" for the body as a
// whole) and Message is an English sentence that may be shown to the client as is.
type Error struct {
	Kind    ErrKind
	Param   string
	Message string
}

func (e *Error) Error() string {
	if e.Param == "" {
		return e.Message
	}
	return e.Param + ": " + e.Message
}

func invalidf(param, format string, args ...any) *Error {
	return &Error{Kind: KindInvalid, Param: param, Message: fmt.Sprintf(format, args...)}
}

// permissionHint ends every 403 message: the client cannot fix these by changing the body, only
// the operator can enable the package.
const permissionHint = " Confirm the availability of this alias and option with your operator."

func deniedf(param, format string, args ...any) *Error {
	return &Error{Kind: KindPermission, Param: param, Message: fmt.Sprintf(format, args...) + permissionHint}
}
