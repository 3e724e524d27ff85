//go:build !unix

package sandbox

import (
	"errors"
	"os"
)

var errLocked = errors.New("held by another process")

// lockFile only opens path here: without flock, a job polled by two processes sharing Dir
// may be rendered twice (docs/sandbox.md), and each render cleans the directory at its start.
func lockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}
