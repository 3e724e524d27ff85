package limits

import (
	"fmt"
	"sync"
	"time"

	"mediagen/internal/netlimit"
)

// Scopes of the download limits (the signed /v1/files links are unauthenticated, so no key or
// tenant limit applies to them): the client address, the file a link names, and this
// process. They join ScopeKey and ScopeTenant in mediagen_rate_limited_total.
const (
	ScopeClient = "client"
	ScopeLink   = "link"
	ScopeServer = "server"

	CodeDownloads = "too_many_downloads"
)

// The download bounds (docs/http.md, "Timeouts and bounds").
const (
	// DownloadsPerClient: a browser opens at most 6 connections to a host, a download
	// manager about 16 segments, and a tenant's backend copying its results from one address
	// runs a few dozen at once; past 32 it waits for Retry-After.
	DownloadsPerClient = 32
	// DownloadsPerLink: one file is read by one player (1 to 3 range requests at once) or one
	// download manager (up to 16 segments). Links are private and temporary, not a CDN.
	DownloadsPerLink = 16
	// FileRequestsPerSecond and FileBurst: a player that seeks sends a few range requests a
	// second; a backend fetching a batch of results starts them at once, within the burst.
	FileRequestsPerSecond = 20
	FileBurst             = 100
	// retryDownloads is the Retry-After of a refused download: a hint, as nothing says when
	// one ends; a small file is read in a second, a large one in minutes.
	retryDownloads = 2
	// maxDownloadClients bounds the rate buckets kept: past it the buckets that have refilled
	// (and so hold nothing a new bucket would not) are dropped, and when none has, a new client
	// goes untracked by the rate; its downloads are still bounded by the counts and its
	// connections by the listener.
	maxDownloadClients = 10_000
)

// DownloadLimits are the bounds of Downloads. Zero fields take the defaults above; Total
// has no default (serve derives it from the connection bound: each download also holds a
// file open).
type DownloadLimits struct {
	PerClient, PerLink, Total int
	Rate                      float64 // requests per second per client
	Burst                     float64
}

func (d DownloadLimits) withDefaults() DownloadLimits {
	if d.PerClient <= 0 {
		d.PerClient = DownloadsPerClient
	}
	if d.PerLink <= 0 {
		d.PerLink = DownloadsPerLink
	}
	if d.Rate <= 0 {
		d.Rate = FileRequestsPerSecond
	}
	if d.Burst < 1 {
		d.Burst = FileBurst
	}
	return d
}

// Downloads bounds the file downloads this process serves: the rate at which a client
// address starts them, and how many run at once per client address, per file and in all.
type Downloads struct {
	now func() time.Time
	lim DownloadLimits

	mu       sync.Mutex
	total    int
	byClient map[netlimit.Client]int
	byLink   map[string]int
	buckets  map[netlimit.Client]*bucket
	swept    time.Time // when a full bucket table was last swept
}

// NewDownloads makes the download bounds; now nil is time.Now.
func NewDownloads(now func() time.Time, lim DownloadLimits) *Downloads {
	if now == nil {
		now = time.Now
	}
	return &Downloads{now: now, lim: lim.withDefaults(), byClient: map[netlimit.Client]int{},
		byLink: map[string]int{}, buckets: map[netlimit.Client]*bucket{}}
}

// Limits are the bounds in force.
func (d *Downloads) Limits() DownloadLimits { return d.lim }

// InFlight is the number of downloads being served.
func (d *Downloads) InFlight() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.total
}

// Begin admits one request for the file link, from client, or refuses it. A request takes a
// token from its client's bucket even when a count then refuses it: the rate bounds what a
// client can make the process do, refusals included. The caller calls end when the request
// ends.
func (d *Downloads) Begin(client netlimit.Client, link string) (end func(), err error) {
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if b := d.bucket(client, now); b != nil {
		b.refill(now, d.lim.Rate, d.lim.Burst)
		if w := b.wait(d.lim.Rate); w > 0 {
			secs := seconds(w)
			return nil, refuse(ScopeClient, LimitRate, CodeRate, secs,
				fmt.Sprintf("Too many file requests from this client address. Slow down and retry after %d s (Retry-After).", secs))
		}
		b.take(now, d.lim.Rate, d.lim.Burst)
	}
	switch {
	case d.byClient[client] >= d.lim.PerClient:
		return nil, refuse(ScopeClient, LimitInFlight, CodeDownloads, retryDownloads,
			fmt.Sprintf("This client address already has %d file downloads running, its limit. Retry when one has finished.", d.lim.PerClient))
	case d.byLink[link] >= d.lim.PerLink:
		return nil, refuse(ScopeLink, LimitInFlight, CodeDownloads, retryDownloads,
			fmt.Sprintf("This file already has %d downloads running, its limit. Retry when one has finished.", d.lim.PerLink))
	case d.lim.Total > 0 && d.total >= d.lim.Total:
		return nil, refuse(ScopeServer, LimitInFlight, CodeDownloads, retryDownloads,
			"The server is serving as many file downloads as it can at once. Retry shortly.")
	}
	d.total++
	d.byClient[client]++
	d.byLink[link]++
	var once sync.Once
	return func() { once.Do(func() { d.end(client, link) }) }, nil
}

func (d *Downloads) end(client netlimit.Client, link string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.total--
	// The maps hold only clients and links with downloads running.
	if d.byClient[client]--; d.byClient[client] <= 0 {
		delete(d.byClient, client)
	}
	if d.byLink[link]--; d.byLink[link] <= 0 {
		delete(d.byLink, link)
	}
}

// bucket returns the client's rate bucket, or nil when the table is full of clients whose
// buckets are still refilling.
func (d *Downloads) bucket(client netlimit.Client, now time.Time) *bucket {
	if b, ok := d.buckets[client]; ok {
		return b
	}
	if len(d.buckets) >= maxDownloadClients {
		// A sweep reads the whole table: at most one a second, so that a flood of new
		// addresses cannot make every request pay for it.
		if now.Sub(d.swept) < time.Second {
			return nil
		}
		d.swept = now
		for k, b := range d.buckets {
			if !now.Before(b.full) {
				delete(d.buckets, k)
			}
		}
		if len(d.buckets) >= maxDownloadClients {
			return nil
		}
	}
	b := &bucket{}
	d.buckets[client] = b
	return b
}
