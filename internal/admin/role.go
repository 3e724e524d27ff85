package admin

import (
	"fmt"

	"mediagen/internal/apierr"
)

// Role is what an admin token may do. Each role includes the ones below it.
type Role string

const (
	// RoleViewer reads everything: keys, balances, audit, tenants, usage, tasks.
	RoleViewer Role = "viewer"
	// RoleOperator also manages keys, credits and debits, asset groups and task lookups.
	RoleOperator Role = "operator"
	// RoleOwner also manages admin tokens and reloads the catalog. The first owner token is
	// made with the CLI, which acts as an owner (docs/admin.md, "Bootstrapping").
	RoleOwner Role = "owner"
)

var rank = map[Role]int{RoleViewer: 1, RoleOperator: 2, RoleOwner: 3}

// ParseRole reads a role name.
func ParseRole(s string) (Role, bool) {
	r := Role(s)
	_, ok := rank[r]
	return r, ok
}

// Allows reports whether r includes need.
func (r Role) Allows(need Role) bool { return rank[r] > 0 && rank[r] >= rank[need] }

// Forbidden is the refusal of a role too low for what was asked.
func Forbidden(have, need Role) *apierr.Error {
	return &apierr.Error{Kind: apierr.KindPermission, Code: "insufficient_role",
		Message: fmt.Sprintf("This needs an admin token with the %s role; this token's role is %s.", need, have)}
}

// Need refuses an actor whose role does not include the one asked for.
func Need(a Actor, r Role) error {
	if !a.Role.Allows(r) {
		return Forbidden(a.Role, r)
	}
	return nil
}

// Actor is who performs an operator action, as recorded in the audit log.
type Actor struct {
	TokenID string // the admin token's id; "cli" for a command
	Name    string // the token's name; the OS user for a command
	Role    Role
	Via     string // ViaAPI, ViaCLI or ViaConsole
	// RequestID is the service's own id of the request; CallerRequestID the X-Request-Id the
	// caller sent, if any: a client chooses it, so it is recorded apart, never as the id.
	RequestID       string
	CallerRequestID string
	RemoteAddr      string
}

// The doors an action comes through.
const (
	ViaAPI     = "api"
	ViaCLI     = "cli"
	ViaConsole = "console"
)

// CLIActor is the actor of a `mediagen admin` command. The CLI works on the database
// directly, so whoever runs it can already do anything: it acts as an owner, and the audit log
// names the OS user ($USER) who ran it.
func CLIActor(user string) Actor {
	if user == "" {
		user = "unknown"
	}
	return Actor{TokenID: "cli", Name: user, Role: RoleOwner, Via: ViaCLI}
}
