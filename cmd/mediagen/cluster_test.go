package main

import (
	"context"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/blob/s3test"
	"mediagen/internal/store/postgres/pgtest"
	"mediagen/internal/testkit"
)

// Three replicas on one PostgreSQL and one bucket (a real MinIO): a task created on replica 1
// (api) is completed by replica 2 (the only worker), read on replica 3 (api), and its result
// downloaded through a presigned link straight from the store. A speech request made on
// replica 3 is stored in the same bucket.
func TestClusterOfThreeReplicasSharesTasksAndResults(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	db := pgtest.URL(t)
	minio := s3test.Start(t)
	blobURL, creds := minio.URL(t, "cluster")
	dir := t.TempDir()
	signing := strings.Repeat("5a", 32)
	start := func(name, role string) *Main {
		t.Helper()
		m := NewMain(env(creds), io.Discard, io.Discard)
		if err := m.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, name), "--db", db, "--blob", blobURL,
			"--role", role, "--signing-key", signing, "--sandbox-pace", "200ms", "--log-level", "warn"}); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(context.Background()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() { _ = m.Close() })
		return m
	}
	r1 := start("r1", "api")
	r2 := start("r2", "worker")
	r3 := start("r3", "api")
	if r1.DemoKey == "" {
		t.Fatal("no demo key from the first replica")
	}
	e1 := &e2e{t: t, m: r1, key: r1.DemoKey, tools: tools}
	e3 := &e2e{t: t, m: r3, key: r1.DemoKey, tools: tools}

	id := e1.create(`{"model":"demo-video-fast","prompt":"made by the cluster","metadata":{"duration":4,"resolution":"480p"}}`)
	task := e3.wait(id)
	if task.Status != "completed" {
		t.Fatalf("task on the cluster: %+v %+v", task, task.Error)
	}
	u, err := url.Parse(task.Metadata.URL)
	if err != nil || u.Host != minio.Endpoint {
		t.Fatalf("result link %s: want one presigned at the store %s", task.Metadata.URL, minio.Endpoint)
	}
	if _, info := e3.download(task.Metadata.URL, "cluster.mp4"); info.Height != 480 || !near(info.Duration, 4, 0.1) {
		t.Errorf("result %+v", info)
	}
	worker := &e2e{t: t, m: r2}
	if runs := sumSeries(worker.metrics(), "mediagen_job_runs_total", `kind="video.task"`); runs == 0 {
		t.Error("replica 2, the only worker, ran no video task step")
	}
	s := e3.speech(`{"model":"demo-speech","input":"Spoken on replica three."}`)
	if su, err := url.Parse(s.URL); err != nil || su.Host != minio.Endpoint {
		t.Errorf("speech link %s", s.URL)
	}
}

// A replica started while PostgreSQL is still coming up (a restart of both, a failover) waits
// for it (--db-wait) instead of exiting: here the server's port opens only once serve has
// found it closed and said it will try again.
func TestServeWaitsForPostgreSQLThatComesUpLate(t *testing.T) {
	t.Parallel()
	real, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	late := testkit.FreeAddr(t)
	delayed := *real
	delayed.Host = late
	var logs syncBuffer
	var opened atomic.Bool
	go func() {
		if !testkit.Poll(30*time.Second, func() bool { return strings.Contains(logs.String(), "PostgreSQL is unreachable; trying again") }) {
			t.Errorf("serve never said it waits for PostgreSQL:\n%s", logs.String())
			return
		}
		opened.Store(true)
		ln, err := net.Listen("tcp", late)
		if err != nil {
			t.Errorf("listen on %s: %v", late, err)
			return
		}
		t.Cleanup(func() { ln.Close() })
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", real.Host)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c) }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	m := NewMain(env(nil), io.Discard, &logs)
	if err := m.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--db", delayed.String(), "--role", "api", "--db-wait", "30s"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("serve with PostgreSQL up late: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	if !opened.Load() {
		t.Errorf("started before the server was reachable:\n%s", logs.String())
	}
}

// A server that answers "no such database" is not an outage: serve stops at once with what to
// do, however long --db-wait is (it used to retry for all of it).
func TestServeStopsAtOnceOnAMissingDatabase(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/mediagen_no_such_db"
	u.RawQuery = "sslmode=disable"
	m := NewMain(env(nil), io.Discard, io.Discard)
	if err := m.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--db", u.String(), "--role", "api", "--db-wait", "1h"}); err != nil {
		t.Fatal(err)
	}
	// The bound only keeps a regression from hanging the suite for the hour of --db-wait.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = m.Run(ctx)
	t.Cleanup(func() { _ = m.Close() })
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), `database "mediagen_no_such_db" does not exist`) || !strings.Contains(err.Error(), "CREATE DATABASE") {
		t.Fatalf("serve: %v (waiting: %v); want it to stop at once saying the database does not exist and how to create it", err, ctx.Err())
	}
}
