package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Store is object storage with expiring links.
type Store interface {
	// Put streams r into key atomically: a reader never sees a half-written object and a
	// failed or interrupted Put leaves no object (an existing object under key is kept).
	// It returns the number of bytes written and never holds the whole content in memory.
	Put(ctx context.Context, key string, r io.Reader) (int64, error)
	// PutFile moves the local file at path into key, atomically: a rename when it is on the
	// same filesystem, else a streamed copy. On success path no longer exists.
	PutFile(ctx context.Context, key, path string) (int64, error)
	// Open opens an object for reading. Unknown keys give ErrNotFound.
	Open(ctx context.Context, key string) (Object, error)
	// Stat describes an object. Unknown keys give ErrNotFound.
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes an object. Deleting an unknown key is not an error.
	Delete(ctx context.Context, key string) error
	// DeletePrefix removes every object whose key starts with prefix (a directory of keys).
	DeletePrefix(ctx context.Context, prefix string) error
	// LocalPath is a filesystem path of the object when the store is local (for tools such
	// as ffprobe); ok is false otherwise, or when key is invalid.
	LocalPath(key string) (path string, ok bool)
	// SignedURL mints a temporary link to key that expires after ttl.
	SignedURL(key string, ttl time.Duration) (url string, expires time.Time)
}

// Object is an open object. Objects of FS also implement io.ReaderAt.
type Object interface {
	io.ReadSeekCloser
	Info() Info
}

// Info describes an object.
type Info struct {
	Key         string
	Size        int64
	ModTime     time.Time // when it was stored; retention counts from here
	ContentType string
}

var (
	// ErrNotFound is returned for keys that hold no object.
	ErrNotFound = errors.New("blob: object not found")
	// ErrBadKey is returned for keys that fail ValidateKey.
	ErrBadKey = errors.New("blob: invalid key")
)

const (
	dirPerm  = 0o755
	filePerm = 0o640
	// copyChunk is how much is copied between context checks.
	copyChunk = 1 << 20
	// mkdirRetries bounds retries when a sweeper removes a directory that a write is about to
	// use.
	mkdirRetries = 5
)

// MinSigningKeyLen is the shortest accepted signing key, in bytes.
const MinSigningKeyLen = 32

// FS is a Store on the local filesystem. Every object is one file under the root. FS is safe
// for concurrent use, including by several processes sharing the root.
type FS struct {
	root       string
	signingKey []byte
	publicBase string

	// Seams for tests.
	now      func() time.Time
	openFile func(name string) (*os.File, error)
	rename   func(oldpath, newpath string) error
}

var _ Store = (*FS)(nil)

// NewFS opens (creating it if needed) a store rooted at root. signingKey signs links and must
// be at least MinSigningKeyLen bytes. publicBase is the externally visible base URL of the API
// (for example "https://media.example.com"); links are {publicBase}/v1/files/{key}?... and are
// relative ("/v1/files/...") when publicBase is empty.
func NewFS(root string, signingKey []byte, publicBase string) (*FS, error) {
	if root == "" {
		return nil, errors.New("blob: empty root directory")
	}
	if len(signingKey) < MinSigningKeyLen {
		return nil, fmt.Errorf("blob: signing key must be at least %d bytes", MinSigningKeyLen)
	}
	publicBase = strings.TrimRight(publicBase, "/")
	if publicBase != "" {
		u, err := url.Parse(publicBase)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return nil, fmt.Errorf("blob: public base %q must be an absolute http(s) URL without query", publicBase)
		}
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("blob: root: %w", err)
	}
	if err := os.MkdirAll(abs, dirPerm); err != nil {
		return nil, fmt.Errorf("blob: root: %w", err)
	}
	return &FS{
		root:       abs,
		signingKey: append([]byte(nil), signingKey...),
		publicBase: publicBase,
		now:        time.Now,
		openFile:   os.Open,
		rename:     os.Rename,
	}, nil
}

// Root is the absolute root directory.
func (s *FS) Root() string { return s.root }

// path is the file of a valid key.
func (s *FS) path(key string) string { return filepath.Join(s.root, filepath.FromSlash(key)) }

func (s *FS) info(key string, fi fs.FileInfo) Info {
	return Info{Key: key, Size: fi.Size(), ModTime: fi.ModTime(), ContentType: ContentType(key)}
}

// Put implements Store.
func (s *FS) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	if err := ValidateKey(key); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	final := s.path(key)
	dir := filepath.Dir(final)
	f, dirty, err := s.createTemp(dir)
	if err != nil {
		return 0, fmt.Errorf("blob: put %s: %w", key, err)
	}
	tmp := f.Name()
	n, err := copyCtx(ctx, f, r)
	if err == nil {
		err = f.Chmod(filePerm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return 0, fmt.Errorf("blob: put %s: %w", key, err)
	}
	if err := syncDirs(append(dirty, dir)); err != nil {
		return n, fmt.Errorf("blob: put %s: %w", key, err)
	}
	return n, nil
}

// PutFile implements Store. The stored object's modification time is the time of the call,
// so retention counts from when it was stored, not from when the file was made.
func (s *FS) PutFile(ctx context.Context, key, path string) (int64, error) {
	if err := ValidateKey(key); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return 0, fmt.Errorf("blob: put file %s: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("blob: put file %s: %s is not a regular file", key, path)
	}
	// The writer of path may not have synced it; make the content durable before it becomes
	// visible under key, and start retention now.
	if err := syncFile(path); err != nil {
		return 0, fmt.Errorf("blob: put file %s: %w", key, err)
	}
	now := s.now()
	if err := os.Chtimes(path, now, now); err != nil {
		return 0, fmt.Errorf("blob: put file %s: %w", key, err)
	}
	if err := os.Chmod(path, filePerm); err != nil {
		return 0, fmt.Errorf("blob: put file %s: %w", key, err)
	}
	final := s.path(key)
	dir := filepath.Dir(final)
	var dirty []string
	for attempt := 0; ; attempt++ {
		d, err := s.mkdirs(dir)
		if err != nil {
			return 0, fmt.Errorf("blob: put file %s: %w", key, err)
		}
		dirty = append(dirty, d...)
		err = s.rename(path, final)
		if err == nil {
			break
		}
		if errors.Is(err, syscall.EXDEV) {
			return s.copyFile(ctx, key, path)
		}
		// A sweeper may have removed the (empty) directory between mkdirs and rename.
		if !errors.Is(err, fs.ErrNotExist) || attempt >= mkdirRetries {
			return 0, fmt.Errorf("blob: put file %s: %w", key, err)
		}
		if _, serr := os.Lstat(path); serr != nil {
			return 0, fmt.Errorf("blob: put file %s: %w", key, err)
		}
	}
	if err := syncDirs(append(dirty, dir)); err != nil {
		return fi.Size(), fmt.Errorf("blob: put file %s: %w", key, err)
	}
	return fi.Size(), nil
}

// copyFile is PutFile across filesystems: a streamed Put, then removal of the source.
func (s *FS) copyFile(ctx context.Context, key, path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("blob: put file %s: %w", key, err)
	}
	n, err := s.Put(ctx, key, f)
	_ = f.Close()
	if err != nil {
		return 0, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return n, fmt.Errorf("blob: put file %s: stored, but removing the source: %w", key, err)
	}
	return n, nil
}

// Open implements Store.
func (s *FS) Open(ctx context.Context, key string) (Object, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := s.openFile(s.path(key))
	if err != nil {
		return nil, mapErr(key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, mapErr(key, err)
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return &fileObject{f: f, info: s.info(key, fi)}, nil
}

// Stat implements Store.
func (s *FS) Stat(ctx context.Context, key string) (Info, error) {
	if err := ValidateKey(key); err != nil {
		return Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	fi, err := os.Stat(s.path(key))
	if err != nil {
		return Info{}, mapErr(key, err)
	}
	if !fi.Mode().IsRegular() {
		return Info{}, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return s.info(key, fi), nil
}

// Delete implements Store. Directories left empty are removed by the Sweeper.
func (s *FS) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p := s.path(key)
	fi, err := os.Lstat(p)
	if err != nil {
		if notFound(err) {
			return nil
		}
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	if fi.IsDir() {
		return nil // a key prefix, not an object
	}
	if err := os.Remove(p); err != nil && !notFound(err) {
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	return nil
}

// DeletePrefix deletes every object whose key starts with prefix + "/" (a directory of
// keys), for callers that own such a directory outright.
func (s *FS) DeletePrefix(ctx context.Context, prefix string) error {
	if err := ValidateKey(prefix); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.RemoveAll(s.path(prefix)); err != nil {
		return fmt.Errorf("blob: delete %s/: %w", prefix, err)
	}
	return nil
}

// LocalPath implements Store.
func (s *FS) LocalPath(key string) (string, bool) {
	if ValidateKey(key) != nil {
		return "", false
	}
	return s.path(key), true
}

// fileObject is an open FS object.
type fileObject struct {
	f    *os.File
	info Info
}

func (o *fileObject) Read(p []byte) (int, error)                { return o.f.Read(p) }
func (o *fileObject) ReadAt(p []byte, off int64) (int, error)   { return o.f.ReadAt(p, off) }
func (o *fileObject) Seek(off int64, whence int) (int64, error) { return o.f.Seek(off, whence) }
func (o *fileObject) Close() error                              { return o.f.Close() }
func (o *fileObject) Info() Info                                { return o.info }

// createTemp makes the directory and a temporary file in it. It returns the directories whose
// entries changed (parents of created directories) for syncing.
func (s *FS) createTemp(dir string) (*os.File, []string, error) {
	var dirty []string
	for attempt := 0; ; attempt++ {
		d, err := s.mkdirs(dir)
		if err != nil {
			return nil, nil, err
		}
		dirty = append(dirty, d...)
		f, err := os.CreateTemp(dir, tempPrefix+"*")
		if err == nil {
			return f, dirty, nil
		}
		// A sweeper may have removed the (empty) directory between mkdirs and create.
		if !errors.Is(err, fs.ErrNotExist) || attempt >= mkdirRetries {
			return nil, nil, err
		}
	}
}

// mkdirs is os.MkdirAll that reports the parents of the directories it created, whose
// entries must be synced for the new directories to survive a crash.
func (s *FS) mkdirs(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; {
		fi, err := os.Stat(d)
		if err == nil {
			if !fi.IsDir() {
				return nil, &fs.PathError{Op: "mkdir", Path: d, Err: syscall.ENOTDIR}
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, d)
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	var dirty []string
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], dirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		dirty = append(dirty, filepath.Dir(missing[i]))
	}
	return dirty, nil
}

// copyCtx streams src into dst in chunks, checking ctx between chunks. io.CopyN keeps the
// kernel fast paths (copy_file_range, splice) of *os.File.ReadFrom and allocates at most one
// small buffer per chunk.
func copyCtx(ctx context.Context, dst *os.File, src io.Reader) (int64, error) {
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, err := io.CopyN(dst, src, copyChunk)
		total += n
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDirs fsyncs each distinct directory so that renames and creations in it are durable.
// Filesystems that cannot sync directories (EINVAL) are tolerated.
func syncDirs(dirs []string) error {
	seen := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		if err := syncFile(d); err != nil && !errors.Is(err, syscall.EINVAL) {
			return err
		}
	}
	return nil
}

func notFound(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func mapErr(key string, err error) error {
	if notFound(err) {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return fmt.Errorf("blob: %s: %w", key, err)
}
