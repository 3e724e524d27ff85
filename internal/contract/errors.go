package contract

import (
	"fmt"

	"mediagen/internal/apierr"
)

// Every rejection of this package is an *apierr.Error, the service's one error vocabulary:
// apierr.KindInvalid (400 invalid_request_error) for a request that breaks the contract, and
// apierr.KindPermission (403 permission_error) for a valid request for something the tenant's
// packages do not include. Param is the offending field's path ("" for the body as a whole)
// and Message an English sentence that may be shown to the client as is, so a use case returns
// the error unchanged.

func invalidf(param, format string, args ...any) *apierr.Error {
	return apierr.Invalid(param, fmt.Sprintf(format, args...))
}

// permissionHint ends every 403 message: the client cannot fix these by changing the body, only
// the operator can enable the package.
const permissionHint = " Confirm the availability of this alias and option with your operator."

func deniedf(param, format string, args ...any) *apierr.Error {
	return &apierr.Error{Kind: apierr.KindPermission, Param: param, Message: fmt.Sprintf(format, args...) + permissionHint}
}
