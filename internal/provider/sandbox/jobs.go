package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"mediagen/internal/provider"
	"mediagen/internal/tenantctx"
)

// jobState is what this process knows about one job.
type jobState struct {
	spec         *jobSpec
	active       bool // a render goroutine of this process is waiting for a slot or running
	started      bool // a render began (here or in an earlier process)
	lastProgress int
	failed       *outcome // terminal render failure, from status.json
}

// jobError is a render failure with a public, sanitized message.
type jobError struct {
	code    string
	message string
	cause   error
}

func (e *jobError) Error() string {
	if e.cause == nil {
		return e.code + ": " + e.message
	}
	return e.code + ": " + e.message + ": " + e.cause.Error()
}

func (e *jobError) Unwrap() error { return e.cause }

func failJob(message string, cause error) error {
	return &jobError{code: CodeGenerationFailed, message: message, cause: cause}
}

// submit accepts a job once per idempotency key. build parses and validates the request
// and returns its spec; it runs only when the job does not exist yet.
func (e *Engine) submit(ctx context.Context, kind, key string, build func(id string) (*jobSpec, error)) (string, error) {
	if e.isClosed() {
		return "", errClosed
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if key == "" {
		return "", permanent(CodeInvalidParameter, "an idempotency key is required")
	}
	id := jobID(kind, key)
	unlock := e.lockKey(id)
	defer unlock()

	specPath := e.jobFile(id, specFile)
	if _, err := os.Stat(specPath); err == nil {
		return id, nil // replay: same job, no second render
	}
	spec, err := build(id)
	if err != nil {
		return "", err
	}
	if err := e.transientAttempt(id, spec.Markers.Transient); err != nil {
		return "", err
	}
	spec.Kind, spec.ID = kind, id
	spec.CreatedAt = e.cfg.Now()
	spec.Pace = max(e.pace, spec.Markers.Slow)
	data, err := json.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("sandbox: encode spec: %w", err)
	}
	if err := os.MkdirAll(e.jobDir(id), 0o700); err != nil {
		return "", fmt.Errorf("sandbox: %w: %w", provider.ErrTransient, err)
	}
	created, err := createFileExclusive(specPath, data)
	if err != nil {
		return "", fmt.Errorf("sandbox: write spec: %w: %w", provider.ErrTransient, err)
	}
	if !created {
		return id, nil // another process sharing Dir accepted it first
	}
	os.Remove(filepath.Join(e.attemptsDir, id)) // replays now stop at the spec
	e.log.Info("job accepted", "job", id, "kind", kind, "pace", spec.Pace, "outcome", spec.Outcome != nil)

	e.mu.Lock()
	defer e.mu.Unlock()
	j := &jobState{spec: spec}
	e.jobs[id] = j
	if spec.Outcome == nil {
		e.startLocked(id, j)
	}
	return id, nil
}

// poll reports a job of the given kind. It never changes a job's outcome; it only
// restarts a render that no process is running (after a crash or Close).
func (e *Engine) poll(kind, id string) (provider.Job, error) {
	if !validID.MatchString(id) {
		return provider.Job{}, provider.ErrUnknownJob
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return provider.Job{}, errClosed
	}
	j, err := e.loadLocked(id)
	if err != nil {
		return provider.Job{}, err
	}
	spec := j.spec
	if spec.Kind != kind {
		return provider.Job{}, provider.ErrUnknownJob
	}
	elapsed := e.cfg.Now().Sub(spec.CreatedAt)
	paceDone := elapsed >= spec.Pace

	if spec.Outcome != nil { // forced by a marker: no render, the outcome comes after the pace
		if paceDone {
			delete(e.jobs, id)
			return terminal(spec.Outcome), nil
		}
		return e.progressLocked(j, elapsed >= spec.Pace/10, elapsed), nil
	}

	var res result
	if err := readJSON(e.jobFile(id, resultFile), &res); err == nil && fileExists(e.jobFile(id, res.File)) {
		if !paceDone {
			return e.progressLocked(j, true, elapsed), nil
		}
		delete(e.jobs, id)
		return provider.Job{
			Status:   provider.StatusSucceeded,
			Progress: 100,
			Output: &provider.Output{
				Source:           provider.Source{Path: e.jobFile(id, res.File)},
				ContentType:      res.ContentType,
				CompletionTokens: res.CompletionTokens,
			},
		}, nil
	}

	if j.failed == nil {
		var o outcome
		if err := readJSON(e.jobFile(id, statusFile), &o); err == nil {
			j.failed = &o
		}
	}
	if j.failed != nil {
		if !paceDone {
			return e.progressLocked(j, true, elapsed), nil
		}
		delete(e.jobs, id)
		return terminal(j.failed), nil
	}

	if !j.active { // crash recovery: nobody renders this job
		e.log.Info("resuming job", "job", id, "kind", kind)
		e.startLocked(id, j)
	}
	return e.progressLocked(j, j.started, elapsed), nil
}

// loadLocked returns the job's state, reading its spec from disk the first time.
func (e *Engine) loadLocked(id string) (*jobState, error) {
	if j := e.jobs[id]; j != nil {
		return j, nil
	}
	var spec jobSpec
	if err := readJSON(e.jobFile(id, specFile), &spec); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, provider.ErrUnknownJob
		}
		return nil, fmt.Errorf("sandbox: %w: %w", provider.ErrTransient, err)
	}
	j := &jobState{spec: &spec}
	_, err := os.Stat(e.jobFile(id, startedMark))
	j.started = err == nil
	e.jobs[id] = j
	return j, nil
}

func terminal(o *outcome) provider.Job {
	return provider.Job{Status: o.Status, Progress: 100, ErrorCode: o.Code, ErrorMessage: o.Message}
}

// progressLocked reports a job that is not finished: queued with progress 0 until its
// render started, then running with progress rising linearly over the pace, 1..99.
// Progress never decreases within a process; across processes it follows the clock.
func (e *Engine) progressLocked(j *jobState, started bool, elapsed time.Duration) provider.Job {
	if !started && j.lastProgress == 0 {
		return provider.Job{Status: provider.StatusQueued, Progress: 0}
	}
	p := 99
	if pace := j.spec.Pace; pace > 0 && elapsed < pace {
		p = min(99, max(1, int(100*elapsed/pace)))
	}
	p = max(p, j.lastProgress)
	j.lastProgress = p
	return provider.Job{Status: provider.StatusRunning, Progress: p}
}

// startLocked runs the job's render in the background, bounded by MaxConcurrent.
func (e *Engine) startLocked(id string, j *jobState) {
	if e.closed || j.active {
		return
	}
	j.active = true
	e.wg.Add(1)
	go e.run(id, j)
}

func (e *Engine) run(id string, j *jobState) {
	defer e.wg.Done()
	defer func() {
		e.mu.Lock()
		j.active = false
		e.mu.Unlock()
	}()
	tenant, key := j.spec.owner()
	// The render's children wait in the process-wide media budget as this tenant's work.
	ctx := tenantctx.With(e.ctx, tenant, key)
	release, waitErr := e.slots.Acquire(ctx, tenant, key)
	if waitErr != nil {
		return
	}
	defer release()

	unlock, ok := e.takeOver(id)
	if !ok {
		return
	}
	defer unlock()

	e.mu.Lock()
	started := j.started
	j.started = true
	e.mu.Unlock()
	if !started {
		if err := writeFileAtomic(e.jobFile(id, startedMark), []byte("1\n")); err != nil {
			e.log.Warn("cannot record start", "job", id, "err", err)
		}
	}
	if e.beforeRender != nil {
		e.beforeRender(ctx, id)
	}
	if ctx.Err() != nil {
		return
	}

	var (
		res result
		err error
	)
	switch j.spec.Kind {
	case kindGeneration:
		res, err = e.renderGeneration(ctx, j.spec)
	case kindEnhancement:
		res, err = e.renderEnhancement(ctx, j.spec)
	default:
		err = failJob("The task could not be processed.", fmt.Errorf("unknown job kind %q", j.spec.Kind))
	}
	if err == nil {
		err = writeJSONAtomic(e.jobFile(id, resultFile), res)
	}
	if err != nil && ctx.Err() != nil {
		// Close interrupted the render: no output, no status; the next Poll (in this
		// process or the next) starts it again.
		e.log.Info("render interrupted", "job", id)
		return
	}
	if err != nil {
		o := &outcome{Status: provider.StatusFailed, Code: CodeGenerationFailed, Message: "The task could not be processed."}
		var je *jobError
		if errors.As(err, &je) {
			o.Code, o.Message = je.code, je.message
		}
		e.log.Warn("render failed", "job", id, "kind", j.spec.Kind, "code", o.Code, "err", err)
		if werr := writeJSONAtomic(e.jobFile(id, statusFile), o); werr != nil {
			// Without a status file the next Poll retries the render, which is the
			// best we can do.
			e.log.Error("cannot record failure", "job", id, "err", werr)
			return
		}
		e.mu.Lock()
		j.failed = o
		e.mu.Unlock()
	} else {
		e.log.Info("render done", "job", id, "kind", j.spec.Kind, "file", res.File,
			"width", res.Width, "height", res.Height, "fps", res.FPS, "duration", res.Duration)
	}
	os.RemoveAll(filepath.Join(e.jobDir(id), inputsDir))
}

// takeOver makes this process the job's only renderer and clears what an earlier render that
// died (SIGKILL, power loss) left in the job directory, so that its partial files do not
// pile up beside the new render's. It reports false when another live process renders the
// job (two processes sharing Dir): that render is left alone, files and all, and the next
// poll asks again. A lock that cannot be taken for another reason does not stop the render,
// but then nothing is removed, since nothing proves the earlier render dead.
func (e *Engine) takeOver(id string) (unlock func(), ok bool) {
	lock, err := lockFile(e.jobFile(id, renderLockFile))
	switch {
	case errors.Is(err, errLocked):
		e.log.Debug("job rendered by another process", "job", id)
		return nil, false
	case err != nil:
		e.log.Warn("cannot lock job; leftovers of earlier renders stay", "job", id, "err", err)
		return func() {}, true
	}
	if n, err := e.removeLeftovers(id); err != nil {
		e.log.Warn("cannot remove leftovers of an earlier render", "job", id, "removed", n, "err", err)
	} else if n > 0 {
		e.log.Info("removed leftovers of an earlier render", "job", id, "removed", n)
	}
	return func() { lock.Close() }, true
}
