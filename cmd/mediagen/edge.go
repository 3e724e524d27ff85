package main

import (
	"errors"
	"fmt"
	"net"

	"mediagen/internal/httpapi"
	"mediagen/internal/netlimit"
)

// The connection bounds of serve (docs/http.md, "Timeouts and bounds").
const (
	// defaultMaxConns is the API listener's connection bound unless --max-conns says
	// otherwise (or the open-file limit leaves less room). A connection costs the process up
	// to about 40 KiB while it is being read (goroutine stack, net/http's 4 KiB read and write
	// buffers, a header of up to MaxHeaderBytes): 4,096 of them hold well under 200 MiB. A
	// replica's real clients — a balancer's pool, SDKs keeping a few connections each — need
	// a few hundred; the rest is room for bursts.
	defaultMaxConns = 4096
	// defaultConnsPerClient bounds one client address's connections (--max-conns-per-client):
	// a NAT gateway or office puts dozens of browsers (6 connections each) behind one
	// address; with 256, an attacker needs 12 addresses to reach the high-water mark.
	defaultConnsPerClient = 256
	// highWaterPercent: from this share of --max-conns on, only clients holding fewer than
	// fewConns connections get a new one, so the last quarter (1,024 by default) is kept for
	// health checks and ordinary clients whatever a few heavy addresses hold.
	highWaterPercent = 75
	// fewConns is "holds few connections": a load balancer's health checker holds one, a
	// browser up to 6, an SDK its small pool.
	fewConns = 8
	// downloadsPerConns: file downloads at once are a quarter of the connection bound. Each
	// holds a file open besides its connection (and a 32 KiB copy buffer), and most
	// connections are API calls.
	downloadsPerConns = 4
	// fdReserve is what the open-file limit keeps apart from connections and downloads: the
	// database's connections and files, ffmpeg's pipes and scratch files, outbound fetches
	// (--max-probes, asset ingestion, upstream calls), listeners and logs.
	fdReserve = 512
	// opsMaxConns bounds each operator listener (--debug-listen, --metrics-listen): a
	// Prometheus server and an operator with a profiler hold a few connections.
	opsMaxConns = 32
	// opsConnsPerClient bounds one client address's connections on those listeners: a
	// Prometheus server (or two, for high availability, each from its own address) holds one
	// or two, a profiler one per profile. Without it one address with connections that
	// never finish their headers filled the listener and the scrapes failed (issue 41's
	// admin-listener case, found on these listeners too). Past the high-water mark
	// (highWaterPercent, 24) only an address holding fewer than opsFewConns gets one.
	opsConnsPerClient = 8
	opsFewConns       = 4
	// adminMaxConns bounds the admin listener (--admin-listen): the admin API's clients (the
	// CLI, an operator's scripts) hold one or two connections each, an operator console in
	// a browser up to 6; a team of operators needs a few dozen.
	adminMaxConns = 64
	// adminConnsPerClient bounds one client address's connections on the admin listener, the
	// public listener's rule at the admin listener's scale: two operators' browsers and a few
	// scripts behind one address fit, and 40 connections with unfinished headers from one
	// address (issue 41) no longer fill the listener — they get 16 and the rest are refused,
	// leaving 48 for everyone else. Past the high-water mark (highWaterPercent, 48) only an
	// address holding fewer than fewConns gets a new one, so the last 16 are kept for
	// operators whatever a few addresses hold.
	adminConnsPerClient = 16
	// notSentLowat bounds, per connection, the answer bytes queued in the kernel that the
	// client's window has not yet taken (TCP_NOTSENT_LOWAT, Linux). Without it a client that
	// stops reading lets the send buffer autotune to 4 MiB and the server copy a whole small
	// file into it: 500 stalled downloads of a 600 KiB result cost 1.4 s of CPU in one burst
	// (bench/conns). 128 KiB keeps a fast client's pipe full — bytes in flight do not count —
	// while a stalled one holds 128 KiB of kernel memory.
	notSentLowat = 128 << 10
	// minConns is the fewest API connections serve starts with: fewer than this and the
	// open-file limit is a misconfiguration to fix, not a bound to work under.
	minConns = 64
)

// edgeBounds are the connection and download bounds in force, derived from the open-file
// limit and the flags; serve logs them at start.
type edgeBounds struct {
	OpenFiles       uint64 // the soft RLIMIT_NOFILE in force (0: unknown)
	MaxConns        int
	ConnsPerClient  int
	HighWater, Few  int
	Downloads       int
	OpsConns        int // the operator listeners' connections together
	explicitMaxConn bool
}

// planEdge fits the bounds in the open-file limit: API connections, the files downloads
// hold, the operator listeners' connections (opsConns, opsListenerConns) and fdReserve. maxConns 0 derives the bound
// (defaultMaxConns, or less when the limit is lower); an explicit one that does not fit is
// an error, as is a limit too low for minConns.
func planEdge(openFiles uint64, maxConns, perClient, opsConns int) (edgeBounds, error) {
	b := edgeBounds{OpenFiles: openFiles, MaxConns: maxConns, OpsConns: opsConns, explicitMaxConn: maxConns > 0}
	if maxConns < 0 || perClient < 0 {
		return b, errors.New("--max-conns and --max-conns-per-client must not be negative")
	}
	fixed := uint64(fdReserve + opsConns)
	if b.MaxConns == 0 {
		b.MaxConns = defaultMaxConns
		if openFiles > 0 {
			room := 0
			if openFiles > fixed {
				// conns + conns/downloadsPerConns must fit in what is left.
				room = int(min(openFiles-fixed, 1<<30) * downloadsPerConns / (downloadsPerConns + 1))
			}
			b.MaxConns = min(b.MaxConns, room)
		}
	}
	b.Downloads = max(1, b.MaxConns/downloadsPerConns)
	if openFiles > 0 {
		need := uint64(b.MaxConns+b.Downloads) + fixed
		if b.explicitMaxConn && need > openFiles {
			return b, fmt.Errorf("--max-conns %d needs about %d open files (with %d downloads, %d for the operator listeners and %d in reserve), but the limit is %d: raise it (ulimit -n, systemd LimitNOFILE=) or lower --max-conns",
				b.MaxConns, need, b.Downloads, opsConns, fdReserve, openFiles)
		}
		if b.MaxConns < minConns {
			return b, fmt.Errorf("the open-file limit %d leaves room for %d connections, fewer than %d: raise it (ulimit -n, systemd LimitNOFILE=)",
				openFiles, b.MaxConns, minConns)
		}
	}
	b.ConnsPerClient = perClient
	if b.ConnsPerClient == 0 {
		b.ConnsPerClient = defaultConnsPerClient
	}
	b.ConnsPerClient = min(b.ConnsPerClient, b.MaxConns)
	b.HighWater = b.MaxConns * highWaterPercent / 100
	b.Few = fewConns
	return b, nil
}

// wrapAPI bounds the API listener.
func (b edgeBounds) wrapAPI(ln net.Listener, proxies netlimit.Proxies, met *netlimit.Metrics) *netlimit.Listener {
	return netlimit.Wrap(ln, netlimit.Config{Name: netlimit.ListenerAPI, Max: b.MaxConns, PerClient: b.ConnsPerClient,
		HighWater: b.HighWater, Few: b.Few, Proxies: proxies, Metrics: met, NotSentLowat: notSentLowat})
}

// wrapOps bounds an operator listener (--debug-listen, --metrics-listen): opsMaxConns in all,
// opsConnsPerClient per client address, and headroom above the high-water mark for addresses
// holding few. Trusted proxies are exempt from the per-address rules.
func wrapOps(name string, ln net.Listener, proxies netlimit.Proxies, met *netlimit.Metrics) *netlimit.Listener {
	return netlimit.Wrap(ln, netlimit.Config{Name: name, Max: opsMaxConns, PerClient: opsConnsPerClient,
		HighWater: opsMaxConns * highWaterPercent / 100, Few: opsFewConns, Proxies: proxies, Metrics: met})
}

// wrapAdmin bounds the admin listener as the API's is bounded, at its own scale: a bound per
// client address and headroom above a high-water mark for addresses that hold few. Trusted
// proxies (--trusted-proxies) are exempt from both, as on the API listener.
func wrapAdmin(ln net.Listener, proxies netlimit.Proxies, met *netlimit.Metrics) *netlimit.Listener {
	return netlimit.Wrap(ln, netlimit.Config{Name: netlimit.ListenerAdmin, Max: adminMaxConns, PerClient: adminConnsPerClient,
		HighWater: adminMaxConns * highWaterPercent / 100, Few: fewConns, Proxies: proxies, Metrics: met})
}

// opsListenerConns is what the operator listeners asked for hold in connections together.
func opsListenerConns(debug, metrics, admin bool) int {
	n := 0
	for _, on := range []bool{debug, metrics} {
		if on {
			n += opsMaxConns
		}
	}
	if admin {
		n += adminMaxConns
	}
	return n
}

// edgeTimeouts are the logged figures of the listeners' timeouts.
func edgeTimeouts() []any {
	return []any{"max_header_bytes", httpapi.MaxHeaderBytes, "read_header_timeout", httpapi.ReadHeaderTimeout,
		"idle_timeout", httpapi.IdleTimeout, "body_read_stall", httpapi.DefaultBodyReadStall,
		"body_read_timeout", httpapi.DefaultBodyReadTimeout, "write_stall", httpapi.DefaultWriteStall,
		"admin_max_conns", adminMaxConns, "admin_max_conns_per_client", adminConnsPerClient}
}
