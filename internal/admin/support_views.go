package admin

import (
	"time"

	"mediagen/internal/money"
)

// Support views (docs/admin.md, "Support: finding a task"): what an operator sees of one
// task, speech record or asset, and of a search. They show what tenants never see — the
// upstream accounts and job ids, the internal error behind a sanitized one, the ledger.

// TaskDetail is the operator's whole view of one video task.
type TaskDetail struct {
	Object          string       `json:"object"` // "task_detail"
	ID              string       `json:"id"`
	Tenant          string       `json:"tenant"`
	KeyID           string       `json:"key_id"`
	KeyName         string       `json:"key_name,omitempty"`
	Alias           string       `json:"alias"`
	Route           string       `json:"route"`
	Status          string       `json:"status"`
	Progress        int          `json:"progress"`
	Step            string       `json:"step,omitempty"`
	ClientRequestID string       `json:"client_request_id,omitempty"`
	CreatedAt       time.Time    `json:"created_at"`
	UpdatedAt       time.Time    `json:"updated_at"`
	FinishedAt      time.Time    `json:"finished_at,omitzero"`
	Upstream        TaskUpstream `json:"upstream"`
	// Error is what the tenant is shown; InternalError is the reason behind it (the detail of
	// the terminal event, or of the last failed attempt), for operators only.
	Error         *PublicError `json:"error,omitempty"`
	InternalError string       `json:"internal_error,omitempty"`
	Money         RecordMoney  `json:"money"`
	Events        []TaskEvent  `json:"events"`
	Ledger        []LedgerTxn  `json:"ledger"`
	Excess        []Excess     `json:"upstream_excess"`
	Jobs          []Job        `json:"jobs"`
}

// TaskUpstream is where a task ran: each half's account, upstream model and job id.
type TaskUpstream struct {
	Account        string `json:"account,omitempty"`
	Model          string `json:"model,omitempty"`
	Job            string `json:"job,omitempty"`
	EnhanceAccount string `json:"enhance_account,omitempty"`
	EnhanceModel   string `json:"enhance_model,omitempty"`
	EnhanceJob     string `json:"enhance_job,omitempty"`
}

// PublicError is the sanitized error a tenant reads.
type PublicError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
}

// RecordMoney is a record's reservation, settlement and overage, with the ledger transactions
// that moved them.
type RecordMoney struct {
	Currency    string       `json:"currency,omitempty"`
	Reserved    money.Micros `json:"reserved"`
	Charged     money.Micros `json:"charged"`
	Overage     money.Micros `json:"overage"`
	Reservation *TxnRef      `json:"reservation,omitempty"`
	Settlement  *TxnRef      `json:"settlement,omitempty"`
	OverageTxn  *TxnRef      `json:"overage_transaction,omitempty"`
}

// TxnRef names a ledger transaction and the amount it moved for the record.
type TxnRef struct {
	ID        string       `json:"id"`
	Kind      string       `json:"kind"`
	Amount    money.Micros `json:"amount"`
	CreatedAt time.Time    `json:"created_at"`
}

// TaskEvent is one moment of a task's history.
type TaskEvent struct {
	Seq         int       `json:"seq"`
	At          time.Time `json:"at"`
	From        string    `json:"from,omitempty"` // "" for the acceptance
	To          string    `json:"to"`
	Step        string    `json:"step,omitempty"`
	Attempt     int       `json:"attempt,omitempty"`
	Upstream    string    `json:"upstream,omitempty"`
	UpstreamJob string    `json:"upstream_job,omitempty"`
	Detail      string    `json:"detail,omitempty"`
}

// LedgerTxn is a ledger transaction about a record, with its entries.
type LedgerTxn struct {
	ID        string        `json:"id"`
	Kind      string        `json:"kind"`
	Note      string        `json:"note,omitempty"`
	CreatedAt time.Time     `json:"created_at"`
	Entries   []LedgerEntry `json:"entries"`
}

// LedgerEntry is one leg of a transaction.
type LedgerEntry struct {
	Account string       `json:"account"`
	Amount  money.Micros `json:"amount"`
}

// Excess is an upstream excess record (docs/billing.md).
type Excess struct {
	ID        string       `json:"id"`
	Upstream  string       `json:"upstream"`
	Kind      string       `json:"kind"`
	Claimed   money.Micros `json:"claimed"`
	Charged   money.Micros `json:"charged"`
	Amount    money.Micros `json:"amount"`
	Currency  string       `json:"currency"`
	Detail    string       `json:"detail,omitempty"`
	CreatedAt time.Time    `json:"created_at"`
}

// Job is a job row still queued for a record, with its runs' internal error.
type Job struct {
	ID         string    `json:"id"`
	Kind       string    `json:"kind"`
	Attempts   int       `json:"attempts"`
	LastError  string    `json:"last_error,omitempty"`
	RunAt      time.Time `json:"run_at"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	Deadline   time.Time `json:"deadline,omitzero"`
	CreatedAt  time.Time `json:"created_at"`
}

// TaskSummary is a task as a search lists it.
type TaskSummary struct {
	Object     string       `json:"object"` // "task"
	ID         string       `json:"id"`
	Tenant     string       `json:"tenant"`
	KeyID      string       `json:"key_id"`
	Alias      string       `json:"alias"`
	Route      string       `json:"route"`
	Status     string       `json:"status"`
	Progress   int          `json:"progress"`
	Reserved   money.Micros `json:"reserved"`
	Charged    money.Micros `json:"charged"`
	ErrorCode  string       `json:"error_code,omitempty"`
	CreatedAt  time.Time    `json:"created_at"`
	FinishedAt time.Time    `json:"finished_at,omitzero"`
}

// SpeechDetail is the operator's view of one speech record.
type SpeechDetail struct {
	Object          string       `json:"object"` // "speech_detail"
	ID              string       `json:"id"`
	Tenant          string       `json:"tenant"`
	KeyID           string       `json:"key_id"`
	KeyName         string       `json:"key_name,omitempty"`
	Alias           string       `json:"alias"`
	Status          string       `json:"status"`
	ClientRequestID string       `json:"client_request_id,omitempty"`
	Upstream        string       `json:"upstream,omitempty"`
	UpstreamModel   string       `json:"upstream_model,omitempty"`
	Error           *PublicError `json:"error,omitempty"`
	// ErrorKind classifies a failure (invalid, upstream, timeout, internal): the internal
	// side of the sanitized error speech records keep.
	ErrorKind string `json:"error_kind,omitempty"`
	// InternalError is the reason behind a failure (the engine's answer, the timeout, the
	// sweep), for operators only.
	InternalError string `json:"internal_error,omitempty"`
	// Events are the record's acceptance, each takeover of an abandoned attempt, and its end.
	Events       []TaskEvent `json:"events"`
	AttemptUntil time.Time   `json:"attempt_until,omitzero"`
	CreatedAt    time.Time   `json:"created_at"`
	UpdatedAt    time.Time   `json:"updated_at"`
	FinishedAt   time.Time   `json:"finished_at,omitzero"`
	Money        RecordMoney `json:"money"`
	Ledger       []LedgerTxn `json:"ledger"`
	Excess       []Excess    `json:"upstream_excess"`
}

// SpeechSummary is a speech record as a search lists it.
type SpeechSummary struct {
	Object     string       `json:"object"` // "speech"
	ID         string       `json:"id"`
	Tenant     string       `json:"tenant"`
	KeyID      string       `json:"key_id"`
	Alias      string       `json:"alias"`
	Status     string       `json:"status"`
	Reserved   money.Micros `json:"reserved"`
	Charged    money.Micros `json:"charged"`
	ErrorCode  string       `json:"error_code,omitempty"`
	CreatedAt  time.Time    `json:"created_at"`
	FinishedAt time.Time    `json:"finished_at,omitzero"`
}

// AssetDetail is the operator's view of one asset.
type AssetDetail struct {
	Object        string    `json:"object"` // "asset_detail"
	ID            string    `json:"id"`
	Tenant        string    `json:"tenant"`
	KeyID         string    `json:"key_id,omitempty"`
	GroupID       string    `json:"group_id"`
	Library       string    `json:"library"`
	Name          string    `json:"name"`
	Type          string    `json:"type"`
	Status        string    `json:"status"`
	SourceURL     string    `json:"source_url"`
	FailureCode   string    `json:"failure_code,omitempty"`
	FailureReason string    `json:"failure_reason,omitempty"`
	BlobKey       string    `json:"blob_key,omitempty"`
	ContentType   string    `json:"content_type,omitempty"`
	Bytes         int64     `json:"bytes,omitempty"`
	Duration      float64   `json:"duration,omitempty"`
	Width         int       `json:"width,omitempty"`
	Height        int       `json:"height,omitempty"`
	Attempts      int       `json:"attempts"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	Jobs          []Job     `json:"jobs"`
}

// AssetSummary is an asset as a search lists it.
type AssetSummary struct {
	Object    string    `json:"object"` // "asset"
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	GroupID   string    `json:"group_id"`
	Library   string    `json:"library"`
	Name      string    `json:"name"`
	Type      string    `json:"type"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
}
