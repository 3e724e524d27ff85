package sqldb

import (
	"context"
	"fmt"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

const speechColumns = `id, key_id, tenant_id, model, status, client_request_id, payload_hash, request, pricing,
	reserved, charged, result, error_kind, error_code, error_message, error_param, attempt_token, attempt_until,
	created_at, updated_at, finished_at, error_detail`

func scanSpeech(row scanner) (store.Speech, error) {
	var s store.Speech
	var request, pricing, result string
	var reserved, charged, until, created, updated, finished int64
	err := row.Scan(&s.ID, &s.KeyID, &s.TenantID, &s.Model, &s.Status, &s.ClientRequestID, &s.PayloadHash,
		&request, &pricing, &reserved, &charged, &result, &s.ErrorKind, &s.ErrorCode, &s.ErrorMessage,
		&s.ErrorParam, &s.AttemptToken, &until, &created, &updated, &finished, &s.ErrorDetail)
	if err != nil {
		return store.Speech{}, noRows(err)
	}
	s.Request, s.Pricing = []byte(request), []byte(pricing)
	if result != "" {
		s.Result = []byte(result)
	}
	s.Reserved, s.Charged = money.Micros(reserved), money.Micros(charged)
	s.AttemptUntil = fromMicros(until)
	s.CreatedAt, s.UpdatedAt, s.FinishedAt = fromMicros(created), fromMicros(updated), fromMicros(finished)
	return s, nil
}

// CreateSpeech inserts a speech record, after its in-flight counters (as CreateTask does).
func (t *Tx) CreateSpeech(ctx context.Context, s store.Speech) error {
	if s.Status == store.SpeechPending {
		if err := t.addInFlight(ctx, store.InFlightSpeeches, s.KeyID, s.TenantID); err != nil {
			return err
		}
	}
	_, err := t.exec(ctx, `INSERT INTO speeches (`+speechColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		s.ID, s.KeyID, s.TenantID, s.Model, s.Status, s.ClientRequestID, s.PayloadHash, string(s.Request),
		string(s.Pricing), int64(s.Reserved), int64(s.Charged), string(s.Result), s.ErrorKind, s.ErrorCode,
		s.ErrorMessage, s.ErrorParam, s.AttemptToken, micros(s.AttemptUntil), micros(s.CreatedAt),
		micros(s.UpdatedAt), micros(s.FinishedAt), s.ErrorDetail)
	if err != nil {
		if t.db.d.IsUniqueViolation(err) {
			return fmt.Errorf("create speech %s: %w", s.ID, store.ErrConflict)
		}
		return fmt.Errorf("create speech %s: %w", s.ID, err)
	}
	return nil
}

// FinishSpeech is the compare-and-swap pending → completed/failed, naming the record's token.
func (t *Tx) FinishSpeech(ctx context.Context, f store.SpeechFinish) error {
	if f.Status != store.SpeechCompleted && f.Status != store.SpeechFailed {
		return fmt.Errorf("finish speech %s: status %q is not terminal", f.ID, f.Status)
	}
	res, err := t.exec(ctx, `UPDATE speeches SET status = ?, charged = ?, result = ?, error_kind = ?, error_code = ?,
		error_message = ?, error_param = ?, error_detail = ?, finished_at = ?, updated_at = ?
		WHERE id = ? AND attempt_token = ? AND status = 'pending'`,
		f.Status, int64(f.Charged), string(f.Result), f.ErrorKind, f.ErrorCode, f.ErrorMessage, f.ErrorParam, f.ErrorDetail,
		micros(f.FinishedAt), micros(t.db.now()), f.ID, f.Token)
	if err != nil {
		return fmt.Errorf("finish speech %s: %w", f.ID, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("finish speech %s: %w", f.ID, store.ErrLeaseLost)
	}
	if f.Request != nil {
		if _, err := t.exec(ctx, `UPDATE speeches SET request = ? WHERE id = ?`, string(f.Request), f.ID); err != nil {
			return fmt.Errorf("finish speech %s: %w", f.ID, err)
		}
	}
	for _, r := range f.Route {
		if err := t.speechEvent(ctx, f.ID, store.SpeechPending, speechStepRoute, r.Upstream, 1, r.Detail); err != nil {
			return fmt.Errorf("finish speech %s: %w", f.ID, err)
		}
	}
	if err := t.speechEvent(ctx, f.ID, f.Status, "", f.Upstream, 1, f.ErrorDetail); err != nil {
		return fmt.Errorf("finish speech %s: %w", f.ID, err)
	}
	return t.dropInFlight(ctx, store.InFlightSpeeches, f.ID)
}

// speechStepTakeover marks the events of a speech record handed to a new attempt by a retry,
// as versions before the speech.generate job wrote them; their count still numbers the
// attempts of those records.
const speechStepTakeover = "takeover"

// speechStepRoute marks the events of the accounts a routed speech record tried or passed
// over before the one it finished on.
const speechStepRoute = "route"

// speechEvent appends a speech record's next event (in task_events, whose ids never collide
// with a speech record's) after a fenced change. The attempt is the takeovers before it plus
// base: 1 for the end of a record no one took over, 2 for the first takeover.
func (t *Tx) speechEvent(ctx context.Context, id, to, step, upstream string, base int, detail string) error {
	_, err := t.exec(ctx, `INSERT INTO task_events (task_id, seq, at, from_status, to_status, step, attempt, upstream,
			upstream_job, detail)
		SELECT id, (SELECT COALESCE(MAX(e.seq), 0) + 1 FROM task_events e WHERE e.task_id = ?), CAST(? AS BIGINT), CAST(? AS TEXT),
			CAST(? AS TEXT), CAST(? AS TEXT),
			(SELECT COUNT(*) FROM task_events e WHERE e.task_id = ? AND e.step = ?) + CAST(? AS INTEGER), CAST(? AS TEXT), '', CAST(? AS TEXT)
		FROM speeches WHERE id = ?`,
		id, micros(t.db.now()), store.SpeechPending, to, step, id, speechStepTakeover, base, upstream, detail, id)
	if err != nil {
		return fmt.Errorf("event: %w", err)
	}
	return nil
}

// Speech reads one record by id.
func (db *DB) Speech(ctx context.Context, id string) (store.Speech, error) {
	s, err := scanSpeech(db.readRow(ctx, `SELECT `+speechColumns+` FROM speeches WHERE id = ?`, id))
	if err != nil {
		return s, fmt.Errorf("speech %s: %w", id, err)
	}
	return s, nil
}

// SpeechByRequestID finds the key's record with the given client_request_id.
func (db *DB) SpeechByRequestID(ctx context.Context, keyID, clientRequestID string) (store.Speech, error) {
	s, err := scanSpeech(db.readRow(ctx, `SELECT `+speechColumns+` FROM speeches
		WHERE key_id = ? AND client_request_id = ? AND client_request_id <> ''`, keyID, clientRequestID))
	if err != nil {
		return s, fmt.Errorf("speech by request id: %w", err)
	}
	return s, nil
}
