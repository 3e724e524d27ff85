package blob

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the size in bytes of keys made by LoadOrCreateKey.
const KeySize = 32

// maxKeyFile bounds how much of a key file is read.
const maxKeyFile = 4096

// ParseKey decodes a signing key given as hex (tried first) or base64 (standard or URL
// alphabet, padded or not). Surrounding whitespace is ignored. The key must be at least
// MinSigningKeyLen bytes.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("blob: empty signing key")
	}
	key, err := hex.DecodeString(s)
	if err != nil {
		key = nil
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if k, err := enc.DecodeString(s); err == nil {
				key = k
				break
			}
		}
		if key == nil {
			return nil, errors.New("blob: signing key is neither hex nor base64")
		}
	}
	if len(key) < MinSigningKeyLen {
		return nil, fmt.Errorf("blob: signing key is %d bytes; it must be at least %d (%d hex characters)",
			len(key), MinSigningKeyLen, 2*MinSigningKeyLen)
	}
	return key, nil
}

// LoadOrCreateKey reads the signing key stored at path (hex, as ParseKey accepts), or, when
// there is no file, creates one holding a new random KeySize-byte key in hex with 0600
// permissions. Creation is atomic and first-writer-wins (the complete file is hard-linked into
// place, which fails if it exists), so several processes sharing a data directory agree on one
// key. An existing file that cannot be parsed is an error; it is never replaced.
//
// Replicas on different machines do not share the file: give them all the same key through
// configuration (ParseKey) instead, or links minted by one replica are rejected by the others.
func LoadOrCreateKey(path string) ([]byte, error) {
	key, err := readKeyFile(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("blob: signing key: %w", err)
	}
	key = make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("blob: signing key: %w", err)
	}
	f, err := os.CreateTemp(dir, ".tmp-key-*")
	if err != nil {
		return nil, fmt.Errorf("blob: signing key: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.WriteString(hex.EncodeToString(key) + "\n")
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("blob: signing key: %w", err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// Another process created it first; use theirs.
			return readKeyFile(path)
		}
		return nil, fmt.Errorf("blob: signing key: creating %s (or configure the key explicitly): %w", path, err)
	}
	if err := syncDirs([]string{dir}); err != nil {
		return nil, fmt.Errorf("blob: signing key: %w", err)
	}
	return key, nil
}

func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("blob: signing key: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("blob: signing key %s: %w", path, err)
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("blob: signing key %s: file too large", path)
	}
	key, err := ParseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return key, nil
}
