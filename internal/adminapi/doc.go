// Package adminapi is the admin HTTP API under /admin/v1/, served only on its own listener
// (--admin-listen; docs/admin.md, docs/admin-openapi.yaml). It authenticates admin tokens,
// checks roles, makes every write idempotent, writes the public API's error envelope, and
// calls internal/admin's Service, the one implementation of every operator action.
//
// # Adding a route
//
// One line in a function that takes the *Server (see routes.go for the core ones):
//
//	s.Read("GET /admin/v1/things/{id}", admin.RoleViewer, h.getThing)             // answers 200 with the view
//	s.ReadRaw("GET /admin/v1/things.csv", admin.RoleViewer, h.thingsCSV)         // writes its own answer (CSV)
//	s.Write("POST /admin/v1/things", admin.RoleOperator, http.StatusCreated, h.createThing)
//
// The role is checked before anything else is read: too low a role is 403 with nothing
// written. A Read handler is func(*Request) (any, error): the value is marshalled as the 200
// answer. A Write handler has the same shape but runs only after the framework has required an
// Idempotency-Key header, read the (bounded) body into Request.Body and found no stored
// answer for the key; it must make its change through an admin.Service write method called
// with r.Context(), so that the change, its audit entry and the answer stored for replays
// commit in one transaction — exactly one such call per request: a second would find the
// answer of the first already recorded. Its result is the answer body, sent with the route's
// status; a write route that answers without a service write is a 500 (nothing would have been
// audited or recorded).
// Decode the body with r.Decode (strict: unknown members, wrong types and nulls are 400 with
// param), and the query with r.Query (unknown parameters are 400 with param). Return
// *apierr.Error for the client's mistakes; any other error is a 500 whose text is logged,
// never sent.
//
// Document every route in docs/admin-openapi.yaml and check your tests' traffic against it
// (apidoc.Middleware and a Recorder around Handler, then doc.CheckExchange for each exchange,
// as TestTrafficMatchesAdminOpenAPI does for the core routes), and add its section to
// docs/admin.md with a curl example (cmd/mediagen's TestDocsAdminCurlExamplesRun runs them).
//
// # Idempotency
//
// A write without Idempotency-Key (or with one longer than 255 bytes or not printable ASCII)
// is 400 with param "Idempotency-Key". The first successful answer is stored per token and key
// for IdempotencyTTL (24 h), sealed with a key derived from the token's secret and the
// Idempotency-Key, so the database alone cannot read secrets in stored answers. A replay with
// the same method, path and body gets that answer byte for byte, with Idempotent-Replayed:
// true; the same key with another request is 409 idempotency_conflict. Concurrent duplicates
// race on the store's unique key: one commits, the others roll back and replay it. Expired
// answers are swept a bounded batch at a time by later writes.
package adminapi
