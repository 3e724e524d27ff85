package console

import (
	"context"
	"errors"
	"html/template"
	"net/http"

	"mediagen/internal/admin"
	"mediagen/internal/apierr"
	"mediagen/internal/video"
)

// OperatorConfig is what the operator console needs: the admin API's own service.
type OperatorConfig struct {
	Common
	Admin *admin.Service
	// Upstreams, when set, reads this process's figures of the upstream accounts (calls,
	// errors, waits, broken state) for the overview; cmd/mediagen reads its metrics.
	Upstreams func(ctx context.Context) ([]UpstreamHealth, error)
	// Links mints the signed links a completed task's result is played from on its page
	// (nil: the page shows no result).
	Links video.Linker
}

// Operator is the operator console, served on the admin listener under /console/.
type Operator struct {
	*core
	cfg   OperatorConfig
	forms *onceSet // one-time form ids of the key writes (op_keys_write.go)
}

// NewOperator builds the operator console and its routing table.
func NewOperator(c OperatorConfig) (*Operator, error) {
	if c.Admin == nil {
		return nil, errors.New("console: the operator console needs the admin service")
	}
	k, err := newCore(c.Common, KindOperator, template.FuncMap{})
	if err != nil {
		return nil, err
	}
	o := &Operator{core: k, cfg: c, forms: newOnceSet()}
	k.check = o.checkToken
	k.authenticate = o.authenticate
	o.routes()
	return o, nil
}

func (o *Operator) checkToken(ctx context.Context, secret string) ([]byte, error) {
	if !admin.TokenWellFormed(secret) {
		return nil, &apierr.Error{Kind: apierr.KindAuthentication, Code: "invalid_admin_token", Message: "The admin token is not valid."}
	}
	hash := admin.HashToken(secret)
	var s Session
	if err := o.authenticate(ctx, hash, &s); err != nil {
		return nil, err
	}
	return hash, nil
}

// authenticate is the admin API's token check; the session acts with the token's role, and
// its writes are audited as coming through the console.
func (o *Operator) authenticate(ctx context.Context, hash []byte, s *Session) error {
	tok, err := o.cfg.Admin.AuthenticateHash(ctx, hash)
	if err != nil {
		return err
	}
	role, _ := admin.ParseRole(tok.Role)
	s.Token = tok
	s.Actor = admin.Actor{TokenID: tok.ID, Name: tok.Name, Role: role, Via: admin.ViaConsole}
	return nil
}

// actor is the session's actor for one request: its id and address go into the audit log.
func (o *Operator) actor(r *http.Request, s *Session) admin.Actor {
	a := s.Actor
	a.RequestID = requestID(r.Context())
	a.RemoteAddr = o.Proxies.ClientOfRequest(r).String()
	return a
}

// routes is the operator console's routing table; each page's handler is in its own file.
func (o *Operator) routes() {
	o.Page("GET /console/{$}", o.overview)
	o.Page("GET /console/tenants", o.tenants)
	o.Page("GET /console/tenants/reload", o.reloadConfirm)
	o.Page("POST /console/tenants/reload", o.reload)
	o.Page("GET /console/audit", o.audit)
	o.Page("GET /console/keys", o.keysList)
	o.Page("GET /console/keys/new", o.keyWriteForm)
	o.Page("POST /console/keys/new", o.keyWrite)
	o.Page("POST /console/keys/new/confirm", o.keyWrite)
	o.Page("GET /console/keys/{id}", o.keyPage)
	o.Page("GET /console/keys/{id}/{action}", o.keyWriteForm)
	o.Page("POST /console/keys/{id}/{action}", o.keyWrite)
	o.Page("POST /console/keys/{id}/{action}/confirm", o.keyWrite)
	o.Page("GET /console/tasks", o.tasksSearch)
	o.Page("GET /console/tasks/{id}", o.taskPage)
	o.Page("GET /console/speech/{id}", o.speechPage)
	o.Page("GET /console/webhooks", o.opWebhooks)
	o.Page("GET /console/webhooks/{id}", o.opWebhookLog)
	o.Page("POST /console/webhooks/{id}/status", o.opWebhookStatus)
	o.Page("POST /console/webhooks/{id}/deliveries/{delivery}/redeliver", o.opRedeliver)
}
