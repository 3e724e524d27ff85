package sqldb

import (
	"context"
	"fmt"
	"time"

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
		if err := t.addInFlight(ctx, "speech", s.KeyID, s.TenantID); err != nil {
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

// TakeOverSpeech moves a pending record to a new attempt, if oldToken still owns it.
func (t *Tx) TakeOverSpeech(ctx context.Context, id, oldToken, newToken string, until time.Time) error {
	res, err := t.exec(ctx, `UPDATE speeches SET attempt_token = ?, attempt_until = ?, updated_at = ?
		WHERE id = ? AND attempt_token = ? AND status = 'pending'`,
		newToken, micros(until), micros(t.db.now()), id, oldToken)
	if err != nil {
		return fmt.Errorf("take over speech %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("take over speech %s: %w", id, store.ErrLeaseLost)
	}
	return nil
}

// RenewSpeech moves the attempt deadline of a pending record, if token still owns it.
func (t *Tx) RenewSpeech(ctx context.Context, id, token string, until time.Time) error {
	res, err := t.exec(ctx, `UPDATE speeches SET attempt_until = ?, updated_at = ?
		WHERE id = ? AND attempt_token = ? AND status = 'pending'`,
		micros(until), micros(t.db.now()), id, token)
	if err != nil {
		return fmt.Errorf("renew speech %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("renew speech %s: %w", id, store.ErrLeaseLost)
	}
	return nil
}

// FinishSpeech is the compare-and-swap pending → completed/failed, fenced by the attempt token.
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
	return t.dropInFlight(ctx, "speech", "speeches", f.ID)
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

// AbandonedSpeeches lists pending records whose attempt deadline passed before the given time.
func (db *DB) AbandonedSpeeches(ctx context.Context, before time.Time, limit int) ([]store.Speech, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := db.readRows(ctx, `SELECT `+speechColumns+` FROM speeches
		WHERE status = 'pending' AND attempt_until < ? ORDER BY attempt_until LIMIT ?`, micros(before), limit)
	if err != nil {
		return nil, fmt.Errorf("abandoned speeches: %w", err)
	}
	defer rows.Close()
	var out []store.Speech
	for rows.Next() {
		s, err := scanSpeech(rows)
		if err != nil {
			return nil, fmt.Errorf("abandoned speeches: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
