// Package admin is the operator plane's one implementation of every operator write and read:
// admin tokens and their roles, API keys, credits, virtual asset groups and the audit log.
// The admin HTTP API (internal/adminapi) and the `mediagen admin …` commands both call
// Service, so both are validated and audited alike (docs/admin.md).
//
// Every write takes an Actor (who, with what role, through which door) and runs in one store
// transaction that also appends the audit entry describing it (action, target, the target
// before and after as JSON) and, for the HTTP API, the idempotent answer (WithAnswer): the
// change, its audit entry and its recorded answer commit together or not at all. Nothing in
// the product updates or deletes an audit entry.
//
// Adding a write: give Service a method that checks the actor's role (Need), validates its
// input into *apierr.Error values naming the field at fault (param = the JSON member name),
// and runs its change through Write with the change's description:
//
//	func (s *Service) DoThing(ctx context.Context, a Actor, in ThingInput) (ThingView, error) {
//		if err := Need(a, RoleOperator); err != nil {
//			return ThingView{}, err
//		}
//		… validate in …
//		return Write(ctx, s, a, func(tx store.Tx) (ThingView, Change, error) {
//			… change the store through tx …
//			return view, Change{Action: "thing.do", TargetType: "thing", TargetID: id, Before: old, After: view}, nil
//		})
//	}
//
// The result of a write is the admin API's answer body (the views in views.go are the wire
// types), so the answer recorded for idempotent replay is exactly what the first caller got.
package admin
