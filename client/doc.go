// Package client is the Go client of the mediagen API: video tasks (native generation,
// standalone enhancement and production), speech, the balance and the asset library.
//
// It uses only the standard library, so a tenant application needs this one import path.
//
// # Client rules built in
//
// The contract asks clients to keep their request ids, to resume rather than resubmit, and to
// poll slowly. The client does this for you:
//
//   - Every create (video and speech) carries metadata.client_request_id. When the request has
//     none, one is generated and written into the request before the first attempt, and the
//     same id is sent on every retry, so a create retried after a dropped connection returns
//     the task already accepted instead of making (and paying for) a second one.
//   - Requests are retried only where that is safe: a connection error, 429 with Retry-After,
//     speech's 409 request_in_progress, and 5xx. Requests that have no idempotency key (asset
//     creation, verification results) are retried only when the server cannot have acted on
//     them: a failed dial or a 429. Retries back off exponentially with jitter and stop after
//     [Options.MaxRetries].
//   - [Client.Wait] polls a task every [Options.PollInterval] (30 s by default, the contract's
//     minimum; lower it only against the sandbox). It needs nothing but the task id, so a
//     process that restarts resumes waiting for the task it created instead of creating
//     another.
//   - Errors from the API are [*Error] values with the HTTP status, type, code, param, message
//     and the X-Request-Id to quote to the operator. A task that ends failed or expired is a
//     [*TaskError].
//   - [Client.DownloadFile] streams a result link to a file in constant memory, reports
//     progress, and resumes with HTTP ranges — within one call after a dropped connection, and
//     across calls (and processes) from the partial file it leaves behind. The resumed part is
//     checked with If-Range (the ETag or Last-Modified of the first part) and Content-Range, so
//     a file that changed on the server is downloaded again from the start instead of being
//     spliced.
//
// # One request type per video route
//
// The three video routes share POST /v1/videos but not their fields, so there are three request
// types: [NativeRequest], [EnhancementRequest] and [ProductionRequest], each with its own
// metadata struct. A field that a route rejects (metadata.video_url on production, bit_depth on
// native, seed on enhancement) cannot be written at all. Rules that depend on the alias — which
// tier of production or enhancement, which native family — are the tenant's catalog and are
// checked by the service, which answers 400 with the offending field in [Error.Param].
// All three answer the same resource, [Video]; its result link is [Video.ResultURL], which
// reads metadata.url (native and production) or metadata.video_url (enhancement).
//
// Optional numbers and booleans are pointers so that "omitted" and "zero" differ (the contract
// gives them different meanings, e.g. generate_audio); [Int], [Bool] and [Float] make them.
package client
