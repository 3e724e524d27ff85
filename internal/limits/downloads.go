package limits

import (
	"fmt"
	"sync"
	"time"

	"mediagen/internal/netlimit"
)

// Scopes of the limits of the routes that need no key (the signed /v1/files links, the
// verification page), to which no key or tenant limit applies: the client address, the file
// a link names, and this process. They join ScopeKey and ScopeTenant in
// mediagen_rate_limited_total.
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
	// second; a tenant's backend copying a batch of results from one address (behind one NAT)
	// starts a few hundred at once: they fit in the burst. Past it, the rate is twice
	// DownloadsPerClient, so a client running its 32 downloads at once that comes back after
	// the 1 s Retry-After finds a token for each; at 20 a second (issue 41) a third of them
	// were refused again on every round and an SDK at its 4 retries gave up on 14 of 300
	// results. What the rate bounds is cheap requests (a HEAD, a one-byte range, a refusal),
	// each a bucket lookup, an HMAC and at most an open file; the bytes are bounded by the
	// counts above.
	FileRequestsPerSecond = 2 * DownloadsPerClient
	FileBurst             = 500
	// retryDownloads is the Retry-After of a refused download: a hint, as nothing says when
	// one ends; a small file is read in a second, a large one in minutes.
	retryDownloads = 2
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
	lim   DownloadLimits
	rates *ClientRates

	mu       sync.Mutex
	total    int
	byClient map[netlimit.Client]int
	byLink   map[string]int
}

// NewDownloads makes the download bounds; now nil is time.Now.
func NewDownloads(now func() time.Time, lim DownloadLimits) *Downloads {
	lim = lim.withDefaults()
	return &Downloads{lim: lim, rates: NewClientRates(now, lim.Rate, lim.Burst, "file requests"),
		byClient: map[netlimit.Client]int{}, byLink: map[string]int{}}
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
	if err := d.rates.Allow(client); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
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
