package safefetch

import (
	"context"
	"fmt"
	"io"
)

// cappedBody enforces the byte cap while the caller reads.
type cappedBody struct {
	rc   io.ReadCloser
	left int64 // bytes still allowed
	max  int64
	err  error
}

func newCappedBody(rc io.ReadCloser, max int64) *cappedBody {
	return &cappedBody{rc: rc, left: max, max: max}
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.left <= 0 {
		// The cap is reached: one more byte means the body is too large,
		// EOF means it was exactly the cap.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			b.err = fmt.Errorf("%w: more than %d bytes", ErrTooLarge, b.max)
			return 0, b.err
		}
		if err == nil {
			return 0, nil
		}
		return 0, b.fail(err)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if err != nil {
		return n, b.fail(err)
	}
	return n, nil
}

func (b *cappedBody) fail(err error) error {
	if err == io.EOF {
		return io.EOF
	}
	b.err = classify(err)
	return b.err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// cancelOnClose ends the per-request context (total timeout) once the
// caller is done with the body, not when Get returns.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
