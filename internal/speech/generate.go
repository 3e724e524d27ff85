package speech

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/apierr"
	"mediagen/internal/billing"
	"mediagen/internal/blob"
	"mediagen/internal/idgen"
	"mediagen/internal/logctx"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/money"
	"mediagen/internal/provider"
	"mediagen/internal/store"
)

// Failure kinds stored with a failed record; they pick the HTTP answer of the failure and of
// every replay of it.
const (
	kindInvalid  = "invalid"  // 400 invalid_request_error: the engine rejected the text
	kindUpstream = "upstream" // 502 api_error: the engine failed
	kindTimeout  = "timeout"  // 504 api_error: no audio within the bounded wait
	kindInternal = "internal" // 500 api_error: the audio could not be stored or measured
)

// Public error codes of speech failures.
const (
	CodeGenerationFailed = "speech_generation_failed"
	CodeTimeout          = "speech_timeout"
	// CodeInProgress answers a retry (409 idempotency_error) that waited its whole wait for
	// the original, which is still running: retry again with the same client_request_id.
	CodeInProgress = "request_in_progress"
)

// Result is what a completed record stores: the stored audio and its measured duration. It
// never changes once the record completed.
type Result struct {
	AudioKey    string `json:"audio_key"`
	ContentType string `json:"content_type"`
	Bytes       int64  `json:"bytes"`
	// DurationMicros is the measured duration of the stored audio (what is billed);
	// OriginalDurationMicros that of the audio as the engine delivered it. The service does
	// not post-process audio, so they are equal today.
	DurationMicros         int64 `json:"duration_us"`
	OriginalDurationMicros int64 `json:"original_duration_us"`
}

// transientRetries is how many times a transient engine error is retried within the wait.
const transientRetries = 3

// attempt generates a pending record that this process owns (rec.AttemptToken), then settles
// it. Synthesis gets the wait; storing and measuring the audio get the grace.
func (s *Service) attempt(ctx context.Context, rec store.Speech, st Stored) (*Response, error) {
	var q Quote
	if err := json.Unmarshal(rec.Pricing, &q); err != nil {
		return nil, fmt.Errorf("speech %s: stored quote: %w", rec.ID, err)
	}
	preq := provider.SpeechRequest{IdempotencyKey: rec.ID, Model: st.UpstreamModel, Text: st.Text, Mode: st.Mode,
		Input: st.Input, Instructions: st.Instructions}
	for _, r := range st.References {
		role := "reference_audio"
		if r.Type == "image_url" {
			role = "reference_image"
		}
		preq.References = append(preq.References, provider.Input{Type: r.Type, Role: role, Source: provider.Source{URL: r.URL}})
	}
	// While the attempt works, its heartbeat renews the record's short lease; the timeout and
	// the grace below still bound the work itself.
	live := s.keepAlive(ctx, rec)
	defer live.stop()
	gctx, cancel := context.WithTimeout(live.ctx, s.wait())
	out, ran, err := s.synthesizeRouted(gctx, st, preq)
	timedOut := gctx.Err() != nil
	cancel()
	// A routed record is kept bound to the account it ran on (or last tried): its usage and
	// cost count there, and its events name the accounts it left.
	if len(st.Upstreams) > 0 {
		st.Upstream = ran.account
		reqJSON, jerr := json.Marshal(st)
		if jerr != nil {
			return nil, fmt.Errorf("speech %s: encode request: %w", rec.ID, jerr)
		}
		rec.Request = reqJSON
		s.ranOn.Store(rec.ID, ran)
		defer s.ranOn.Delete(rec.ID)
	}
	var noEngine errNoEngine
	if errors.As(err, &noEngine) || errors.Is(err, errNoAccount) {
		if live.stop() {
			return s.superseded(ctx, rec)
		}
		return s.fail(ctx, rec, kindUpstream, CodeGenerationFailed, "", "Speech generation is not available for this model right now; nothing was charged.", err)
	}
	if err != nil {
		if live.stop() {
			return s.superseded(ctx, rec)
		}
		return s.engineFailure(ctx, rec, err, timedOut)
	}

	sctx, cancel := context.WithTimeout(live.ctx, s.grace())
	defer cancel()
	res, err := s.keep(sctx, rec.ID, out)
	var cut *billing.Excess
	var cutErr error
	if err == nil {
		// Audio longer than the text can take is cut to its bound while the lease is live.
		res, cut, cutErr = s.bounded(sctx, res, q, st.Upstream)
	}
	// Settlement is fenced by the attempt token anyway; stopping here also saves the finish
	// of an attempt that already knows it lost the record.
	if live.stop() {
		return s.superseded(ctx, rec)
	}
	if err != nil {
		return s.fail(ctx, rec, kindInternal, CodeGenerationFailed, "", "The generated audio could not be stored or measured; nothing was charged. Retry with a new client_request_id.", err)
	}
	if cutErr != nil {
		return s.fail(ctx, rec, kindUpstream, CodeGenerationFailed, "", "The speech engine's audio could not be used; no audio was kept and the pre-charge was refunded.", cutErr)
	}
	// The charge is bounded both ways: the stored audio's measured duration, never above
	// the reservation (docs/billing.md).
	charge, over, err := billing.SpeechFinal(q, res.DurationMicros)
	if err != nil {
		return s.fail(ctx, rec, kindInternal, CodeGenerationFailed, "", "The generated audio could not be priced; nothing was charged.", err)
	}
	var excess []billing.Excess
	if cut != nil {
		excess = append(excess, *cut)
	}
	for _, e := range over {
		e.Upstream = st.Upstream
		excess = append(excess, e)
	}
	body, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	var overage money.Micros
	err = s.Store.Transact(ctx, func(tx store.Tx) error {
		if err := tx.FinishSpeech(ctx, s.routedFinish(rec, store.SpeechFinish{ID: rec.ID, Token: rec.AttemptToken, Status: store.SpeechCompleted,
			Charged: charge, Result: body, FinishedAt: now})); err != nil {
			return err
		}
		var err error
		settled := rec
		settled.Status, settled.Charged, settled.Result, settled.FinishedAt = store.SpeechCompleted, charge, body, now
		if overage, err = billing.SettleUsage(ctx, tx, rec.ID, billing.WithSpeechCost(billing.SpeechUsage(settled), settled, s.Accounts), now); err != nil {
			return err
		}
		for _, e := range excess {
			err := tx.RecordUpstreamExcess(ctx, store.UpstreamExcess{ID: idgen.New("uex"), Upstream: e.Upstream, Route: "speech",
				Ref: rec.ID, KeyID: rec.KeyID, TenantID: rec.TenantID, Kind: e.Kind, Claimed: e.Claimed, Charged: charge,
				Amount: e.Amount, Currency: q.Currency, Detail: e.Detail, CreatedAt: now})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return s.lost(ctx, rec, err)
	}
	log := settleLog(ctx, s.log(), rec)
	if overage > 0 || charge > rec.Reserved {
		s.Overages.Record(log, "speech", q.Currency, rec.KeyID, rec.ID, rec.Reserved, charge)
	}
	s.Excess.Record(log, "speech", q.Currency, rec.ID, rec.KeyID, charge, excess)
	s.Metrics.completed(res.DurationMicros)
	log.Info("speech completed", "duration_us", res.DurationMicros,
		"reserved", rec.Reserved.String(), "charged", charge.String())
	rec.Status, rec.Charged, rec.Result, rec.FinishedAt = store.SpeechCompleted, charge, body, now
	return s.render(rec)
}

// settleLog is log for a settlement's lines: they name the record and whose money moved (key,
// tenant, alias), and the request that made it (logctx).
func settleLog(ctx context.Context, log *slog.Logger, rec store.Speech) *slog.Logger {
	return logctx.Logger(ctx, log).With("speech_id", rec.ID, "key_id", rec.KeyID, "tenant_id", rec.TenantID, "alias", rec.Model)
}

// routedFinish adds to a routed record's finish where it ran (the account, its request bound
// there, the accounts it left): what synthesizeRouted found for this attempt.
func (s *Service) routedFinish(rec store.Speech, f store.SpeechFinish) store.SpeechFinish {
	v, ok := s.ranOn.Load(rec.ID)
	if !ok {
		return f
	}
	ran := v.(routed)
	f.Upstream, f.Request, f.Route = ran.account, rec.Request, ran.route
	return f
}

// synthesize calls the engine, retrying transient errors up to retries times within ctx.
func synthesize(ctx context.Context, e provider.Synthesizer, r provider.SpeechRequest, retries int) (provider.Speech, error) {
	return synthesizeUnless(ctx, e, r, retries, nil)
}

// synthesizeUnless is synthesize whose transient errors for which final is true are not
// retried (a routed request's 429: the next account is tried at once instead).
func synthesizeUnless(ctx context.Context, e provider.Synthesizer, r provider.SpeechRequest, retries int, final func(error) bool) (provider.Speech, error) {
	backoff := 200 * time.Millisecond
	for try := 0; ; try++ {
		out, err := e.Synthesize(ctx, r)
		if err == nil || !errors.Is(err, provider.ErrTransient) || try >= retries || ctx.Err() != nil || (final != nil && final(err)) {
			return out, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return out, err
		}
		backoff *= 2
	}
}

// engineFailure records why the engine produced no audio, refunding the reservation.
func (s *Service) engineFailure(ctx context.Context, rec store.Speech, err error, timedOut bool) (*Response, error) {
	var pe *provider.Error
	switch {
	case timedOut || errors.Is(err, context.DeadlineExceeded):
		return s.fail(ctx, rec, kindTimeout, CodeTimeout, "",
			fmt.Sprintf("Speech generation did not finish within %s; no audio was produced and the pre-charge was refunded.", s.wait()), err)
	case errors.As(err, &pe) && pe.Code == "InvalidParameter":
		return s.fail(ctx, rec, kindInvalid, "invalid_request_error", "input",
			"The text could not be spoken: "+sentence(pe.Message)+" Nothing was charged.", err)
	case errors.As(err, &pe) && !errors.Is(err, provider.ErrTransient):
		code := pe.Code
		if !publicCode(code) {
			code = CodeGenerationFailed
		}
		msg := "Speech generation failed."
		if pe.Message != "" {
			msg = sentence(pe.Message)
		}
		return s.fail(ctx, rec, kindUpstream, code, "", msg+" No audio was produced and the pre-charge was refunded.", err)
	case errors.Is(err, provider.ErrTransient):
		return s.fail(ctx, rec, kindUpstream, CodeGenerationFailed, "",
			"The speech engine is temporarily unavailable; no audio was produced and the pre-charge was refunded. Retry later with a new client_request_id.", err)
	}
	return s.fail(ctx, rec, kindUpstream, CodeGenerationFailed, "", "Speech generation failed; no audio was produced and the pre-charge was refunded.", err)
}

// fail finishes the record as failed and refunds its reservation in full (one settlement of
// zero), in one transaction; it returns the failure's client error.
func (s *Service) fail(ctx context.Context, rec store.Speech, kind, code, param, msg string, cause error) (*Response, error) {
	now := s.now().UTC()
	err := s.Store.Transact(ctx, func(tx store.Tx) error {
		if err := tx.FinishSpeech(ctx, s.routedFinish(rec, store.SpeechFinish{ID: rec.ID, Token: rec.AttemptToken, Status: store.SpeechFailed,
			ErrorKind: kind, ErrorCode: code, ErrorMessage: msg, ErrorParam: param, ErrorDetail: detail(cause), FinishedAt: now})); err != nil {
			return err
		}
		return settleFailed(ctx, tx, rec, now, s.Accounts)
	})
	if err != nil {
		return s.lost(ctx, rec, err)
	}
	s.Metrics.failed(code)
	settleLog(ctx, s.log(), rec).Warn("speech failed; reservation refunded", "code", code, "reserved", rec.Reserved.String(), "cause", cause)
	rec.Status, rec.ErrorKind, rec.ErrorCode, rec.ErrorMessage, rec.ErrorParam, rec.FinishedAt = store.SpeechFailed, kind, code, msg, param, now
	return nil, failure(rec)
}

// detail is a failure's internal reason as kept for operators: bounded, since an error can
// quote a whole upstream answer.
func detail(cause error) string {
	if cause == nil {
		return ""
	}
	const maxDetail = 1000
	d := cause.Error()
	if len(d) > maxDetail {
		d = d[:maxDetail]
	}
	return d
}

// superseded answers for an attempt whose heartbeat found the record taken over or finished:
// it settles nothing and answers the outcome of the attempt that owns the record.
func (s *Service) superseded(ctx context.Context, rec store.Speech) (*Response, error) {
	return s.lost(ctx, rec, store.ErrLeaseLost)
}

// lost handles a finish that did not commit. When another attempt (a take-over or the sweep)
// finished or owns the record, its outcome is the answer; any other error leaves the record
// pending with its reservation, for a retry or the sweep to settle.
func (s *Service) lost(ctx context.Context, rec store.Speech, err error) (*Response, error) {
	if !errors.Is(err, store.ErrLeaseLost) {
		return nil, fmt.Errorf("speech %s: finish: %w", rec.ID, err)
	}
	cur, rerr := s.Store.Speech(ctx, rec.ID)
	if rerr != nil {
		return nil, rerr
	}
	logctx.Logger(ctx, s.log()).Warn("speech attempt was superseded", "speech_id", rec.ID, "status", cur.Status)
	return s.await(ctx, cur)
}

// maxAudioBytes bounds an engine's audio file.
// KeyPrefix starts the key of every stored speech audio.
const KeyPrefix = "speech/"

const maxAudioBytes = 256 << 20

// keep copies the engine's audio into the service's storage and measures the stored file.
func (s *Service) keep(ctx context.Context, id string, out provider.Speech) (Result, error) {
	ct := out.ContentType
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		ct = mt
	}
	key := KeyPrefix + id + "/audio" + audioExt(ct)
	var n int64
	switch {
	case out.Source.Path != "":
		f, err := os.Open(out.Source.Path)
		if err != nil {
			return Result{}, fmt.Errorf("open engine output: %w", err)
		}
		n, err = s.Blobs.Put(ctx, key, f)
		f.Close()
		if err != nil {
			return Result{}, fmt.Errorf("store audio: %w", err)
		}
	case out.Source.Open != nil:
		rc, err := out.Source.Open(ctx)
		if err != nil {
			return Result{}, fmt.Errorf("open engine output: %w", err)
		}
		n, err = s.Blobs.Put(ctx, key, provider.Capped(rc, maxAudioBytes))
		rc.Close()
		if err != nil {
			return Result{}, fmt.Errorf("store audio: %w", err)
		}
	case out.Source.URL != "" && s.Fetch != nil:
		resp, err := s.Fetch.Get(ctx, out.Source.URL, safefetch.RequestOptions{MaxBytes: maxAudioBytes})
		if err != nil {
			return Result{}, fmt.Errorf("fetch engine output: %w", err)
		}
		n, err = s.Blobs.Put(ctx, key, resp.Body)
		resp.Body.Close()
		if err != nil {
			return Result{}, fmt.Errorf("store audio: %w", err)
		}
	default:
		return Result{}, errors.New("engine output has no readable source")
	}
	path, release, err := blob.LocalFile(ctx, s.Blobs, key)
	if err != nil {
		return Result{}, fmt.Errorf("read the stored audio: %w", err)
	}
	defer release()
	info, err := s.Probe.Probe(ctx, path)
	if err != nil {
		return Result{}, fmt.Errorf("measure audio: %w", err)
	}
	us := billing.SecondsToMicros(info.Duration)
	if !info.HasAudio || us <= 0 {
		return Result{}, fmt.Errorf("engine output has no audio (duration %v s)", info.Duration)
	}
	return Result{AudioKey: key, ContentType: ct, Bytes: n, DurationMicros: us, OriginalDurationMicros: us}, nil
}

// bounded holds stored audio within its bound (billing.SpeechQuote.SpeechBound): audio that
// measures longer — an engine that spoke far past what the text can take — is cut to the
// bound, stored again and measured again; the cut is the upstream's excess, priced by what
// the whole audio would have charged. Without a Trimmer the audio is kept whole (and billed
// only up to its bound by billing.SpeechFinal). Audio that cannot be cut is an error: the
// record fails, refunded.
func (s *Service) bounded(ctx context.Context, res Result, q Quote, upstream string) (Result, *billing.Excess, error) {
	bound := q.SpeechBound()
	if bound <= 0 || res.DurationMicros <= bound || s.Trim == nil {
		return res, nil, nil
	}
	path, release, err := blob.LocalFile(ctx, s.Blobs, res.AudioKey)
	if err != nil {
		return res, nil, fmt.Errorf("read the stored audio: %w", err)
	}
	defer release()
	dir, err := os.MkdirTemp("", ffmpeg.ScratchPrefix+"trim-*") // swept at start if a crash leaves it
	if err != nil {
		return res, nil, err
	}
	defer os.RemoveAll(dir)
	cut := filepath.Join(dir, "cut"+filepath.Ext(res.AudioKey))
	if err := s.Trim.Trim(ctx, path, cut, float64(bound)/1e6); err != nil {
		return res, nil, fmt.Errorf("cut the audio to its bound: %w", err)
	}
	f, err := os.Open(cut)
	if err != nil {
		return res, nil, err
	}
	n, err := s.Blobs.Put(ctx, res.AudioKey, f)
	f.Close()
	if err != nil {
		return res, nil, fmt.Errorf("store the cut audio: %w", err)
	}
	info, err := s.Probe.Probe(ctx, cut)
	if err != nil {
		return res, nil, fmt.Errorf("measure the cut audio: %w", err)
	}
	kept := res
	kept.Bytes, kept.DurationMicros = n, billing.SecondsToMicros(info.Duration)
	kept.OriginalDurationMicros = kept.DurationMicros
	whole, err := billing.SpeechCharge(q, res.DurationMicros)
	if err != nil {
		return res, nil, err
	}
	part, err := billing.SpeechCharge(q, kept.DurationMicros)
	if err != nil {
		return res, nil, err
	}
	logctx.Logger(ctx, s.log()).Warn("speech audio longer than its bound; cut to it", "audio_key", res.AudioKey, "upstream", upstream,
		"measured_us", res.DurationMicros, "kept_us", kept.DurationMicros, "bound_us", bound)
	return kept, &billing.Excess{Kind: billing.ExcessDuration, Upstream: upstream, Claimed: whole, Amount: max(whole-part, 0),
		Detail: fmt.Sprintf("audio %.3f s, cut to %.3f s (the text allows %.3f s)", float64(res.DurationMicros)/1e6,
			float64(kept.DurationMicros)/1e6, float64(bound)/1e6)}, nil
}

func audioExt(contentType string) string {
	switch contentType {
	case "audio/mpeg", "audio/mp3":
		return ".mp3"
	case "audio/wav", "audio/x-wav", "audio/wave":
		return ".wav"
	case "audio/mp4", "audio/aac", "audio/x-m4a":
		return ".m4a"
	}
	return ".mp3"
}

// sentence makes an engine message end with a full stop and start with a capital letter.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// publicCode accepts an engine error code that may be shown: letters, digits, '.', '_', '-',
// at most 64 bytes.
func publicCode(c string) bool {
	if c == "" || len(c) > 64 {
		return false
	}
	for i := 0; i < len(c); i++ {
		b := c[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '.' || b == '_' || b == '-') {
			return false
		}
	}
	return true
}

// failure is the client error of a failed record (also on every replay of it).
func failure(rec store.Speech) error {
	k := apierr.KindUpstream
	switch rec.ErrorKind {
	case kindInvalid:
		k = apierr.KindInvalid
	case kindTimeout:
		k = apierr.KindTimeout
	case kindInternal:
		k = apierr.KindInternal
	}
	code, msg := rec.ErrorCode, rec.ErrorMessage
	if code == "" {
		code = CodeGenerationFailed
	}
	if msg == "" {
		msg = "Speech generation failed; no audio was produced and the pre-charge was refunded."
	}
	return &apierr.Error{Kind: k, Code: code, Message: msg, Param: rec.ErrorParam}
}

// settleFailed releases a failed record's whole reservation and counts it in the usage
// rollups, in the transaction of its terminal write.
func settleFailed(ctx context.Context, tx store.Tx, rec store.Speech, now time.Time, accounts billing.Accounts) error {
	settled := rec
	settled.Status, settled.Charged, settled.Result, settled.FinishedAt = store.SpeechFailed, 0, nil, now
	_, err := billing.SettleUsage(ctx, tx, rec.ID, billing.WithSpeechCost(billing.SpeechUsage(settled), settled, accounts), now)
	return err
}
