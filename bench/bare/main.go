// Command bare is the baseline of the API benchmark: a plain net/http server whose every route
// answers 200 with a fixed JSON body about the size of a task (no routing table, middleware,
// authentication or database). bench/api runs it as its own process, like the service, so that
// "GET /v1/videos/{id} throughput ÷ bare throughput" compares the service with the cost of HTTP
// on the same machine in the same run.
//
//	go run ./bench/bare -listen 127.0.0.1:8090
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"mediagen/internal/httpapi"
)

// body has the shape and size of a queued task as GET /v1/videos/{id} returns it (173 bytes).
var body = []byte(`{"id":"video_bench000000000000000","task_id":"video_bench000000000000000","object":"video",` +
	`"model":"demo-video-fast","status":"queued","progress":0,"created_at":1795308230}` + "\n")

func handler(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bare:", err)
		os.Exit(1)
	}
	// The same server settings as mediagen serve's API listener, so both sides differ only in
	// the handler (and serve's per-request deadlines and connection counting).
	srv := httpapi.NewHTTPServer(http.HandlerFunc(handler), nil)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Printf("bare: listening on http://%s\n", ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "bare:", err)
		os.Exit(1)
	}
}
