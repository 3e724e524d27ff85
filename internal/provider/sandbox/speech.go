package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/provider"
)

// Synthesize speaks r.Text with espeak-ng into an MP3 (mono, 24 kHz, 64 kbit/s), within
// ctx. The same IdempotencyKey returns the same file without a second synthesis.
// References pick the voice, observably (speech_refs.go): the reference audio's measured
// pitch sets espeak-ng's pitch, an image's shape a voice variant; the sandbox clones no voice. Markers in the text: [sandbox:fail] and [sandbox:fail=CODE] return a
// permanent *provider.Error (default code speech_generation_failed); [sandbox:slow=D]
// waits D first, honouring ctx; [sandbox:transient=N] fails the first N calls with
// provider.ErrTransient. When ctx ends, the error wraps ctx.Err().
func (e *Engine) Synthesize(ctx context.Context, r provider.SpeechRequest) (provider.Speech, error) {
	if e.isClosed() {
		return provider.Speech{}, errClosed
	}
	if r.IdempotencyKey == "" {
		return provider.Speech{}, permanent(CodeInvalidParameter, "an idempotency key is required")
	}
	id := jobID(kindSpeech, r.IdempotencyKey)
	out := filepath.Join(e.speechDir, id+".mp3")
	done := provider.Speech{Source: provider.Source{Path: out}, ContentType: "audio/mpeg"}

	unlock, err := e.lockKeyCtx(ctx, id)
	if err != nil {
		return provider.Speech{}, err
	}
	defer unlock()
	if fileExists(out) {
		return done, nil // replay
	}

	var m markers
	text := r.Text
	if !e.cfg.NoMarkers {
		m, text, err = parseTextMarkers(r.Text)
	}
	if err != nil {
		return provider.Speech{}, permanent(CodeInvalidParameter, "%v", err)
	}
	if err := e.transientAttempt(id, m.Transient); err != nil {
		return provider.Speech{}, err
	}
	if m.Slow > 0 {
		t := time.NewTimer(m.Slow)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return provider.Speech{}, fmt.Errorf("sandbox speech: %w", ctx.Err())
		}
	}
	if m.Fail {
		code := m.FailCode
		if code == "" {
			code = CodeSpeechFailed
		}
		return provider.Speech{}, permanent(code, "%s", failMessage(code, ""))
	}
	// References pick the voice (speech_refs.go): measured before a speech slot is taken.
	opt, err := e.referenceVoice(ctx, r)
	if err != nil {
		return provider.Speech{}, err
	}

	select {
	case e.speech <- struct{}{}:
	case <-ctx.Done():
		return provider.Speech{}, fmt.Errorf("sandbox speech: %w", ctx.Err())
	}
	defer func() { <-e.speech }()
	e.syntheses.Add(1)
	if err := e.cfg.Tools.Speak(ctx, text, out, opt); err != nil {
		switch {
		case ctx.Err() != nil:
			return provider.Speech{}, fmt.Errorf("sandbox speech: %w", ctx.Err())
		case errors.Is(err, ffmpeg.ErrEmptyText):
			return provider.Speech{}, permanent(CodeInvalidParameter, "there is no text to speak")
		case errors.Is(err, ffmpeg.ErrInvalidSpec):
			return provider.Speech{}, permanent(CodeInvalidParameter, "the text cannot be spoken")
		}
		e.log.Warn("speech failed", "err", err)
		return provider.Speech{}, permanent(CodeSpeechFailed, "%s", failMessage(CodeSpeechFailed, ""))
	}
	os.Remove(filepath.Join(e.attemptsDir, id))
	return done, nil
}

// lockKeyCtx is lockKey that gives up when ctx ends, so a caller waiting behind a slow
// synthesis of the same key still honours its deadline.
func (e *Engine) lockKeyCtx(ctx context.Context, id string) (func(), error) {
	got := make(chan func(), 1)
	go func() { got <- e.lockKey(id) }()
	select {
	case unlock := <-got:
		return unlock, nil
	case <-ctx.Done():
		// Release the lock as soon as the helper gets it.
		go func() { (<-got)() }()
		return nil, fmt.Errorf("sandbox speech: %w", ctx.Err())
	}
}
