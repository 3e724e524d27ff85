package blob

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestLoadOrCreateKey_CreatesOnceAndReuses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "secrets", "link-signing.key")
	k1, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(k1) != KeySize {
		t.Fatalf("key is %d bytes, want %d", len(k1), KeySize)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("key file permissions = %o, want 600", perm)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(raw)); got != hex.EncodeToString(k1) {
		t.Errorf("file holds %q, want the hex key", got)
	}
	k2, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(k1, k2) {
		t.Error("second call returned a different key")
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the key file", len(ents))
	}
}

func TestLoadOrCreateKey_ConcurrentCreatorsAgree(t *testing.T) {
	t.Parallel()
	for round := range 5 {
		path := filepath.Join(t.TempDir(), "k")
		const n = 8
		keys := make([][]byte, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				keys[i], errs[i] = LoadOrCreateKey(path)
			})
		}
		close(start)
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("round %d caller %d: %v", round, i, errs[i])
			}
			if !bytes.Equal(keys[i], keys[0]) {
				t.Fatalf("round %d: callers got different keys", round)
			}
		}
	}
}

func TestLoadOrCreateKey_BadFileIsAnErrorAndKept(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, content string }{
		{"garbage fails", "not a key at all!"},
		{"short key fails", hex.EncodeToString(make([]byte, 16))},
		{"empty file fails", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "k")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadOrCreateKey(path); err == nil {
				t.Fatal("LoadOrCreateKey succeeded")
			}
			if b, _ := os.ReadFile(path); string(b) != tc.content {
				t.Error("the existing file was replaced")
			}
		})
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{0xfb, 0xef, 0x01}, 11)[:32]
	long := bytes.Repeat([]byte{7}, 64)
	tests := []struct {
		name    string
		in      string
		want    []byte
		wantErr bool
	}{
		{name: "hex is accepted", in: hex.EncodeToString(key), want: key},
		{name: "upper-case hex with whitespace is accepted", in: "  " + strings.ToUpper(hex.EncodeToString(key)) + "\n", want: key},
		{name: "standard base64 is accepted", in: base64.StdEncoding.EncodeToString(key), want: key},
		{name: "raw URL base64 is accepted", in: base64.RawURLEncoding.EncodeToString(key), want: key},
		{name: "longer key is accepted", in: hex.EncodeToString(long), want: long},
		{name: "short hex is rejected", in: hex.EncodeToString(key[:31]), wantErr: true},
		{name: "short base64 is rejected", in: base64.StdEncoding.EncodeToString(key[:16]), wantErr: true},
		{name: "empty is rejected", in: "   ", wantErr: true},
		{name: "non-encoding text is rejected", in: "correct horse battery staple!!", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseKey(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && !bytes.Equal(got, tc.want) {
				t.Errorf("key = %x, want %x", got, tc.want)
			}
		})
	}
}
