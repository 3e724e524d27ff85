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
	"mediagen/internal/jobs"
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

// generate runs a pending record's generation under its job's lease and returns the outcome
// that ends it: completed and settled on the measured audio, or failed and refunded. The
// engine commits the outcome with the job's end, fenced by the job's lease, so a run that
// lost its lease (its process stalled and another took the job over) moves no money.
// Synthesis must end by deadline; storing and measuring the audio get the grace. An error is
// a run cut short (shutdown, a lost lease) or a fault worth another run.
func (s *Service) generate(ctx context.Context, rec store.Speech, st Stored, deadline time.Time) (jobs.Outcome, error) {
	var q Quote
	if err := json.Unmarshal(rec.Pricing, &q); err != nil {
		return s.failed(ctx, rec, nil, kindInternal, CodeGenerationFailed, "", "The request could not be read back; nothing was charged.",
			fmt.Errorf("speech %s: stored quote: %w", rec.ID, err)), nil
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
	// The wait is measured on the monotonic clock from the records' clock's deadline.
	gctx, cancel := context.WithTimeout(ctx, deadline.Sub(s.now()))
	out, ran, err := s.synthesizeRouted(gctx, st, preq)
	timedOut := gctx.Err() != nil
	cancel()
	if ctx.Err() != nil {
		// Cut short by shutdown or a lost lease, not by the wait: the engine hands the job
		// back or leaves it to the lease's new holder.
		return jobs.Outcome{}, fmt.Errorf("speech %s: generation cut short: %w", rec.ID, context.Cause(ctx))
	}
	// A routed record is kept bound to the account it ran on (or last tried): its usage and
	// cost count there, and its events name the accounts it left.
	var where *routed
	if len(st.Upstreams) > 0 {
		st.Upstream = ran.account
		reqJSON, jerr := json.Marshal(st)
		if jerr != nil {
			return jobs.Outcome{}, fmt.Errorf("speech %s: encode request: %w", rec.ID, jerr)
		}
		rec.Request = reqJSON
		where = &ran
	}
	var noEngine errNoEngine
	if errors.As(err, &noEngine) || errors.Is(err, errNoAccount) {
		return s.failed(ctx, rec, where, kindUpstream, CodeGenerationFailed, "", "Speech generation is not available for this model right now; nothing was charged.", err), nil
	}
	if err != nil {
		var lost []billing.Excess
		if errors.Is(err, provider.ErrOutcomeUnknown) {
			lost = append(lost, lostSynthesis(rec, st.Upstream))
		}
		return s.engineFailure(ctx, rec, where, err, timedOut, q.Currency, lost...), nil
	}

	sctx, cancel := context.WithTimeout(ctx, s.grace())
	defer cancel()
	res, err := s.keep(sctx, rec.ID, out)
	var cut *billing.Excess
	var cutErr error
	if err == nil {
		// Audio longer than the text can take is cut to its bound while the lease is live.
		res, cut, cutErr = s.bounded(sctx, res, q, st.Upstream)
	}
	if ctx.Err() != nil {
		return jobs.Outcome{}, fmt.Errorf("speech %s: storing cut short: %w", rec.ID, context.Cause(ctx))
	}
	if err != nil {
		return s.failed(ctx, rec, where, kindInternal, CodeGenerationFailed, "", "The generated audio could not be stored or measured; nothing was charged. Retry with a new client_request_id.", err), nil
	}
	if cutErr != nil {
		return s.failed(ctx, rec, where, kindUpstream, CodeGenerationFailed, "", "The speech engine's audio could not be used; no audio was kept and the pre-charge was refunded.", cutErr), nil
	}
	// The charge is bounded both ways: the stored audio's measured duration, never above
	// the reservation (docs/billing.md).
	charge, over, err := billing.SpeechFinal(q, res.DurationMicros)
	if err != nil {
		return s.failed(ctx, rec, where, kindInternal, CodeGenerationFailed, "", "The generated audio could not be priced; nothing was charged.", err), nil
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
		return jobs.Outcome{}, err
	}
	now := s.now().UTC()
	var overage money.Micros
	settled := false
	var announced string
	apply := func(ctx context.Context, tx store.Tx) error {
		err := tx.FinishSpeech(ctx, routedFinish(where, rec, store.SpeechFinish{ID: rec.ID, Token: rec.AttemptToken, Status: store.SpeechCompleted,
			Charged: charge, Result: body, FinishedAt: now}))
		if errors.Is(err, store.ErrLeaseLost) {
			return nil // already finished: the job ends, nothing moves
		} else if err != nil {
			return err
		}
		// After the fenced finish: announced once, with its commit.
		if announced, err = s.announce(ctx, tx, rec, store.SpeechCompleted, now); err != nil {
			return err
		}
		done := rec
		done.Status, done.Charged, done.Result, done.FinishedAt = store.SpeechCompleted, charge, body, now
		if overage, err = billing.SettleUsage(ctx, tx, rec.ID, billing.WithSpeechCost(billing.SpeechUsage(done), done, s.Accounts), now); err != nil {
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
		settled = true
		return nil
	}
	after := func() {
		if settled {
			s.wake(announced)
			log := settleLog(ctx, s.log(), rec)
			if overage > 0 || charge > rec.Reserved {
				s.Overages.Record(log, "speech", q.Currency, rec.KeyID, rec.ID, rec.Reserved, charge)
			}
			s.Excess.Record(log, "speech", q.Currency, rec.ID, rec.KeyID, charge, excess)
			s.Metrics.completed(res.DurationMicros)
			log.Info("speech completed", "duration_us", res.DurationMicros,
				"reserved", rec.Reserved.String(), "charged", charge.String())
		}
		s.finished(rec.ID)
	}
	return jobs.Outcome{Done: true, Apply: apply, After: after}, nil
}

// lostSynthesis is the operator's possible loss of a speech whose engine answer was lost
// after the call left, on an account with no idempotency key (elevenlabs): the upstream may
// have billed a synthesis the service never delivered and did not make again. It is recorded
// as upstream excess lost_create with the failure's settlement, in the same transaction
// (amount: the speech's reservation, the most it was priced at), as the video lost create is
// (internal/video/lost_create.go); the tenant is refunded in full.
func lostSynthesis(rec store.Speech, upstream string) billing.Excess {
	return billing.Excess{Kind: billing.ExcessLostCreate, Upstream: upstream, Claimed: rec.Reserved, Amount: rec.Reserved,
		Detail: "the synthesis answer was lost after the call left; the upstream may have billed it; not sent again"}
}

// settleLog is log for a settlement's lines: they name the record and whose money moved (key,
// tenant, alias), and the request that made it (logctx).
func settleLog(ctx context.Context, log *slog.Logger, rec store.Speech) *slog.Logger {
	return logctx.Logger(ctx, log).With("speech_id", rec.ID, "key_id", rec.KeyID, "tenant_id", rec.TenantID, "alias", rec.Model)
}

// routedFinish adds to a routed record's finish where it ran (the account, its request bound
// there, the accounts it left): what synthesizeRouted found for this run.
func routedFinish(ran *routed, rec store.Speech, f store.SpeechFinish) store.SpeechFinish {
	if ran == nil {
		return f
	}
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

// engineFailure is the outcome of an engine that produced no audio: the record fails, refunded.
func (s *Service) engineFailure(ctx context.Context, rec store.Speech, ran *routed, err error, timedOut bool, currency string, excess ...billing.Excess) jobs.Outcome {
	failed := func(ctx context.Context, rec store.Speech, ran *routed, kind, code, param, msg string, cause error) jobs.Outcome {
		return s.failedWith(ctx, rec, ran, kind, code, param, msg, cause, currency, excess)
	}
	var pe *provider.Error
	switch {
	case timedOut || errors.Is(err, context.DeadlineExceeded):
		return failed(ctx, rec, ran, kindTimeout, CodeTimeout, "",
			fmt.Sprintf("Speech generation did not finish within %s; no audio was produced and the pre-charge was refunded.", s.wait()), err)
	case errors.As(err, &pe) && pe.Code == "InvalidParameter":
		return failed(ctx, rec, ran, kindInvalid, "invalid_request_error", "input",
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
		return failed(ctx, rec, ran, kindUpstream, code, "", msg+" No audio was produced and the pre-charge was refunded.", err)
	case errors.Is(err, provider.ErrTransient):
		return failed(ctx, rec, ran, kindUpstream, CodeGenerationFailed, "",
			"The speech engine is temporarily unavailable; no audio was produced and the pre-charge was refunded. Retry later with a new client_request_id.", err)
	}
	return failed(ctx, rec, ran, kindUpstream, CodeGenerationFailed, "", "Speech generation failed; no audio was produced and the pre-charge was refunded.", err)
}

// failed is the outcome that finishes the record as failed and refunds its reservation in
// full (one settlement of zero), with the job's end.
func (s *Service) failed(ctx context.Context, rec store.Speech, ran *routed, kind, code, param, msg string, cause error) jobs.Outcome {
	return s.failedWith(ctx, rec, ran, kind, code, param, msg, cause, "", nil)
}

// failedWith is failed that also records the upstream's excess (a lost synthesis) in the
// settlement's transaction, in currency.
func (s *Service) failedWith(ctx context.Context, rec store.Speech, ran *routed, kind, code, param, msg string, cause error, currency string, excess []billing.Excess) jobs.Outcome {
	now := s.now().UTC()
	settled := false
	var announced string
	apply := func(ctx context.Context, tx store.Tx) error {
		err := tx.FinishSpeech(ctx, routedFinish(ran, rec, store.SpeechFinish{ID: rec.ID, Token: rec.AttemptToken, Status: store.SpeechFailed,
			ErrorKind: kind, ErrorCode: code, ErrorMessage: msg, ErrorParam: param, ErrorDetail: detail(cause), FinishedAt: now}))
		if errors.Is(err, store.ErrLeaseLost) {
			return nil // already finished: the job ends, nothing moves
		} else if err != nil {
			return err
		}
		settled = true
		if announced, err = s.announce(ctx, tx, rec, store.SpeechFailed, now); err != nil {
			return err
		}
		if err := settleFailed(ctx, tx, rec, now, s.Accounts); err != nil {
			return err
		}
		for _, e := range excess {
			err := tx.RecordUpstreamExcess(ctx, store.UpstreamExcess{ID: idgen.New("uex"), Upstream: e.Upstream, Route: "speech",
				Ref: rec.ID, KeyID: rec.KeyID, TenantID: rec.TenantID, Kind: e.Kind, Claimed: e.Claimed, Amount: e.Amount,
				Currency: currency, Detail: e.Detail, CreatedAt: now})
			if err != nil {
				return err
			}
		}
		return nil
	}
	after := func() {
		if settled {
			s.wake(announced)
			if len(excess) > 0 {
				s.Excess.Record(settleLog(ctx, s.log(), rec), "speech", currency, rec.ID, rec.KeyID, 0, excess)
			}
			s.Metrics.failed(code)
			settleLog(ctx, s.log(), rec).Warn("speech failed; reservation refunded", "code", code, "reserved", rec.Reserved.String(), "cause", cause)
		}
		s.finished(rec.ID)
	}
	return jobs.Outcome{Done: true, Apply: apply, After: after}
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
