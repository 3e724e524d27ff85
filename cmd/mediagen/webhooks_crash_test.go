package main

import (
	"database/sql"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"mediagen/internal/catalog"
	"mediagen/internal/store/postgres/pgtest"
	"mediagen/internal/testkit"
)

// countingReceiver is a tenant's endpoint that holds its first request until the sender goes
// away (the killed replica: the attempt is never answered, so never delivered) and answers
// every later one 204, counting those as delivered.
type countingReceiver struct {
	srv       *httptest.Server
	held      chan string // the webhook-id of the held first request
	mu        sync.Mutex
	n         int
	delivered []string // webhook-id of each request answered 2xx
	certFile  string   // its certificate, for the children's SSL_CERT_FILE
}

func newCountingReceiver(t *testing.T) *countingReceiver {
	t.Helper()
	rc := &countingReceiver{held: make(chan string, 1)}
	rc.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		rc.mu.Lock()
		rc.n++
		first := rc.n == 1
		rc.mu.Unlock()
		if first {
			rc.held <- r.Header.Get("webhook-id")
			<-r.Context().Done()
			return
		}
		rc.mu.Lock()
		rc.delivered = append(rc.delivered, r.Header.Get("webhook-id"))
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.srv.Close)
	rc.certFile = filepath.Join(t.TempDir(), "receiver.pem")
	if err := os.WriteFile(rc.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rc.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return rc
}

func (rc *countingReceiver) answered() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.delivered...)
}

// hookPost sends an API call with the key and returns its status and body.
func hookPost(t *testing.T, url, key, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// crashLease is the children's --job-lease: a killed replica's delivery is taken over within it.
const crashLease = "2s"

// A replica SIGKILLed after an outcome committed, while its delivery of the event was on the
// wire (never answered), loses nothing: another replica (PostgreSQL) or the restarted one
// (SQLite) takes the delivery over once its lease ends, sends it with the same webhook-id,
// and exactly one delivery is counted as delivered, by the receiver and in the store.
func TestWebhookDeliveredAfterTheReplicaIsKilled(t *testing.T) {
	t.Parallel()
	requireTools(t)
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			demo := strings.Replace(string(catalog.DemoYAML()), "  - id: demo\n", "  - id: demo\n    webhooks: {enabled: true, max_endpoints: 3}\n", 1)
			catPath := filepath.Join(dir, "catalog.yaml")
			if err := os.WriteFile(catPath, []byte(demo), 0o644); err != nil {
				t.Fatal(err)
			}
			var dbArgs []string
			if driver == "postgres" {
				dbArgs = []string{"--db", pgtest.URL(t)}
			}
			rc := newCountingReceiver(t)
			key := reKey.FindString(admin(t, dir, append([]string{"key", "create", "--tenant", "demo", "--name", "child", "--credit", "100"}, dbArgs...)...))
			if key == "" {
				t.Fatal("no key")
			}
			replica := func() (*child, string) {
				addr := testkit.FreeAddr(t)
				args := append([]string{"serve", "--listen", addr, "--data-dir", dir, "--catalog", catPath, "--fetch-allow", "loopback",
					"--job-lease", crashLease, "--log-level", "warn"}, dbArgs...)
				c := startChild(t, []string{"MEDIAGEN_TEST_MAIN=1", "SSL_CERT_FILE=" + rc.certFile}, args...)
				waitReady(t, "http://"+addr)
				return c, "http://" + addr
			}
			a, base := replica()
			if code, body := hookPost(t, base+"/v1/webhook_endpoints", key,
				`{"name":"crash","url":"`+rc.srv.URL+`/hook","event_types":["speech.completed"]}`); code != 200 {
				t.Fatalf("create endpoint: %d %s", code, body)
			}
			if code, body := hookPost(t, base+"/v1/audio/speech", key, `{"model":"demo-speech","input":"Announced once."}`); code != 200 {
				t.Fatalf("speech: %d %s", code, body)
			}
			var id string
			select {
			case id = <-rc.held: // the outcome committed; its delivery is on the wire
			case <-time.After(30 * time.Second):
				t.Fatal("the delivery never started")
			}
			var b *child
			if driver == "postgres" {
				b, _ = replica() // another replica, running before the kill
			}
			if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_, _ = a.cmd.Process.Wait()
			if b == nil {
				replica() // SQLite: the same data directory, restarted
			}
			testkit.WaitFor(t, 30*time.Second, "the delivery was never taken over", func() bool { return len(rc.answered()) > 0 })
			// Nothing more comes: the delivery is recorded as delivered once.
			if testkit.Poll(2*time.Second, func() bool { return len(rc.answered()) > 1 }) {
				t.Fatalf("delivered %d times: %v", len(rc.answered()), rc.answered())
			}
			if got := rc.answered(); got[0] != id || !strings.HasPrefix(id, "evt_") {
				t.Fatalf("delivered webhook-id %v, held %q: want the same", got, id)
			}
			status, attempts := deliveryRow(t, driver, dir, dbArgs, id)
			if status != "delivered" || attempts != 1 {
				t.Fatalf("delivery %s: %s after %d attempts, want delivered after 1 (the killed one is never recorded)", id, status, attempts)
			}
		})
	}
}

// deliveryRow reads the status and attempts of the event's one delivery from the store.
func deliveryRow(t *testing.T, driver, dir string, dbArgs []string, eventID string) (string, int) {
	t.Helper()
	var db *sql.DB
	var err error
	q := `SELECT status, attempts FROM webhook_deliveries WHERE event_id = ?`
	if driver == "postgres" {
		db, err = sql.Open("pgx", dbArgs[1])
		q = strings.Replace(q, "?", "$1", 1)
	} else {
		db, err = sql.Open("sqlite", "file:"+filepath.Join(dir, "mediagen.db")+"?mode=ro")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var status string
	var attempts, n int
	rows, err := db.Query(q, eventID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		n++
		if err := rows.Scan(&status, &attempts); err != nil {
			t.Fatal(err)
		}
	}
	if n != 1 {
		t.Fatalf("%d deliveries of %s, want 1", n, eventID)
	}
	return status, attempts
}
