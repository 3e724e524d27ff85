package blob

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
)

// LocalFile gives a local file of an object, for tools that read files (ffprobe, ffmpeg): the
// object's own file on a filesystem store, or a temporary download from an object store,
// which release removes. release is never nil.
func LocalFile(ctx context.Context, s Store, key string) (file string, release func(), err error) {
	if p, ok := s.LocalPath(key); ok {
		return p, func() {}, nil
	}
	o, err := s.Open(ctx, key)
	if err != nil {
		return "", func() {}, err
	}
	defer o.Close()
	// The name starts with ffmpeg.ScratchPrefix: a copy a killed process left is removed at
	// the next start (ffmpeg.Tools.RemoveStaleTemp).
	f, err := os.CreateTemp("", "mediagen-scratch-blob-*"+path.Ext(key))
	if err != nil {
		return "", func() {}, err
	}
	release = func() { os.Remove(f.Name()) }
	_, err = io.Copy(f, o)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		release()
		return "", func() {}, fmt.Errorf("blob: local copy of %s: %w", key, err)
	}
	return f.Name(), release, nil
}
