package adminapi

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"errors"
)

// Stored answers can hold secrets (a new key's or token's): they are sealed with AES-256-GCM
// under a key only the caller can derive — from its token secret, which is never stored, and
// its Idempotency-Key — so a copy of the database does not leak them.

func answerKey(tokenSecret, idemKey string) []byte {
	h := sha256.New()
	h.Write([]byte("mediagen admin answer\x00"))
	h.Write([]byte(tokenSecret))
	h.Write([]byte{0})
	h.Write([]byte(idemKey))
	return h.Sum(nil)
}

func seal(key, plain []byte) ([]byte, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return gcm.Seal(nonce, nonce, plain, nil), nil
}

func unseal(key, sealed []byte) ([]byte, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	if len(sealed) < gcm.NonceSize() {
		return nil, errors.New("sealed answer too short")
	}
	return gcm.Open(nil, sealed[:gcm.NonceSize()], sealed[gcm.NonceSize():], nil)
}
