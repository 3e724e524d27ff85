package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// secretPrefix marks a Standard Webhooks secret: the rest is the key's bytes in base64, which
// is how the OpenAI SDKs' webhooks.unwrap decodes it.
const secretPrefix = "whsec_"

// newSecret is 32 random bytes, as issued once to the tenant.
func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return secretPrefix + base64.StdEncoding.EncodeToString(b)
}

// secretHint shows enough of a secret to tell two apart, never enough to use it.
func secretHint(secret string) string {
	if len(secret) < len(secretPrefix)+4 {
		return secretPrefix + "…"
	}
	return secretPrefix + "…" + secret[len(secret)-4:]
}

// sign is the Standard Webhooks signature of one attempt: "v1,<base64 HMAC-SHA256 of
// id.timestamp.body>" under each secret, space-separated; a receiver accepts any that matches.
func sign(secrets []string, id string, ts time.Time, body []byte) string {
	msg := id + "." + strconv.FormatInt(ts.Unix(), 10) + "." + string(body)
	var sigs []string
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, secretPrefix))
		if err != nil {
			continue // never issued by us; nothing to sign with
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(msg))
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	return strings.Join(sigs, " ")
}
