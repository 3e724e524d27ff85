package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// attackStats is what the attack sockets saw; the attacker process prints it as JSON.
type attackStats struct {
	mu       sync.Mutex
	Opened   map[string]int `json:"opened"` // sockets that sent their request, by kind
	DialErrs int            `json:"dial_errors"`
	FirstErr string         `json:"first_error,omitempty"`
	// Slow uploads: how long after the phase started the server cut each one (its write
	// failed), and how many were still open at the end.
	UploadCut    []time.Duration `json:"upload_cut,omitempty"`
	UploadsAtEnd int             `json:"uploads_at_end"`
	// Header sockets: what each read back ("431", "closed", "nothing"), and how many bytes of
	// the header line the kernel took before the server stopped it.
	HeaderAnswers  map[string]int `json:"header_answers,omitempty"`
	HeaderBodySent []int          `json:"header_bytes_sent,omitempty"`
	// Paced and stalled uploads (slow.go): the answers by kind ("paced upload", "stalled
	// upload") and status, and how long after its headers each one was answered.
	Uploads    map[string]map[string]int  `json:"uploads,omitempty"`
	UploadTook map[string][]time.Duration `json:"upload_took,omitempty"`
	// Admin slowloris: how each held connection ended ("429", "503", "dropped (header
	// timeout)", "held to the end").
	AdminAnswers map[string]int `json:"admin_answers,omitempty"`
}

func (st *attackStats) fail(err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.DialErrs++
	if st.FirstErr == "" {
		st.FirstErr = err.Error()
	}
}

func (st *attackStats) open(kind string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.Opened == nil {
		st.Opened = map[string]int{}
	}
	st.Opened[kind]++
}

// dialConcurrency bounds the connects in progress at once: the server's listen backlog
// (somaxconn, 4096 by default) would drop the rest, and their retries after a second would
// only spread the ramp.
const dialConcurrency = 256

// attackerAddr is the source address of attack socket i: 127.0.0.2 and up, round robin.
func (a *attacker) attackerAddr(i int) *net.TCPAddr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%a.Attackers))}
}

// dial connects from local with a receive buffer of rcvbuf bytes (0: the system's), set
// before the connect so that the window the server sees is the small one.
func dial(ctx context.Context, local *net.TCPAddr, addr string, rcvbuf int) (net.Conn, error) {
	d := net.Dialer{LocalAddr: local, Timeout: 5 * time.Second}
	if rcvbuf > 0 {
		d.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
			})
			return errors.Join(err, serr)
		}
	}
	return d.DialContext(ctx, "tcp", addr)
}

// held is the attack's open sockets, closed together at the end of the phase.
type held struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (h *held) add(c net.Conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.conns = append(h.conns, c)
}

func (h *held) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		_ = c.Close()
	}
	h.conns = nil
}

// uploadBodyBytes is the body length the slow uploads declare: far more than they send in
// a phase at one byte a second, and well under the body limit, so the server waits for it.
const uploadBodyBytes = 4096

// downloadAttack opens -stalled downloads of the stored result (1 KiB receive buffer, never
// read) and -uploads slow uploads, trickles a byte a second into each upload, and closes
// everything when ctx ends. Each socket is opened once: a socket the server closes stays
// closed, so what the server still holds is what its bounds left it.
func (a *attacker) downloadAttack(ctx context.Context, st *attackStats) {
	var open held
	defer open.closeAll()
	start := time.Now()
	sem := make(chan struct{}, dialConcurrency)
	var wg sync.WaitGroup
	post := "POST /v1/videos HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + a.Key +
		"\r\nContent-Type: application/json\r\nContent-Length: " + fmt.Sprint(uploadBodyBytes) + "\r\n\r\n{"
	var upMu sync.Mutex
	var uploads []net.Conn
	total := a.Stalled + a.Uploads
	// The uploads are spread evenly among the downloads, so both ramp up together, and come
	// from the first UploadAttackers addresses only: a few addresses that hold many
	// connections, beside many that each hold a few downloads.
	isUpload := make([]bool, total)
	from := make([]*net.TCPAddr, total)
	for i := range total {
		from[i] = a.attackerAddr(i)
	}
	for j := range a.Uploads {
		i := j * total / a.Uploads
		isUpload[i] = true
		from[i] = &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+j%max(1, min(a.UploadAttackers, a.Attackers))))}
	}
	for i := 0; i < total && ctx.Err() == nil; i++ {
		a.pace(ctx, start, i)
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			upload := isUpload[i]
			get := "GET " + a.Links[i%len(a.Links)] + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: bench-conns\r\n\r\n"
			rcvbuf, req, kind := 1024, get, "stalled download"
			if upload {
				rcvbuf, req, kind = 0, post, "slow upload"
			}
			c, err := dial(ctx, from[i], a.Addr, rcvbuf)
			if err != nil {
				st.fail(err)
				return
			}
			open.add(c)
			_ = c.SetWriteDeadline(time.Now().Add(2 * time.Second))
			if _, err := io.WriteString(c, req); err != nil {
				return // refused at once (the server answered and closed)
			}
			st.open(kind)
			if upload {
				upMu.Lock()
				uploads = append(uploads, c)
				upMu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	// Trickle: one byte a second into each upload still open, until the phase ends.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			upMu.Lock()
			st.mu.Lock()
			st.UploadsAtEnd = len(uploads)
			st.mu.Unlock()
			upMu.Unlock()
			return
		case <-tick.C:
		}
		upMu.Lock()
		kept := uploads[:0]
		for _, c := range uploads {
			_ = c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			if _, err := c.Write([]byte(" ")); err != nil {
				st.mu.Lock()
				st.UploadCut = append(st.UploadCut, time.Since(start))
				st.mu.Unlock()
				continue
			}
			kept = append(kept, c)
		}
		uploads = kept
		upMu.Unlock()
	}
}

// headerLine is the probe's request: GET /healthz and one header line of 1,040,000 bytes
// with no end.
var headerLine = []byte("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: " + strings.Repeat("a", 1_040_000))

// headerAttack opens -headers sockets, each sending headerLine once, reads back what the
// server answers, and holds the sockets until ctx ends.
func (a *attacker) headerAttack(ctx context.Context, st *attackStats) {
	var open held
	defer open.closeAll()
	sem := make(chan struct{}, dialConcurrency)
	var wg sync.WaitGroup
	deadline, _ := ctx.Deadline()
	start := time.Now()
	for i := 0; i < a.Headers && ctx.Err() == nil; i++ {
		a.pace(ctx, start, i)
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, err := dial(ctx, a.attackerAddr(i), a.Addr, 0)
			<-sem // the connect is done; the write may take as long as the server lets it
			if err != nil {
				st.fail(err)
				return
			}
			open.add(c)
			st.open("header")
			_ = c.SetWriteDeadline(deadline)
			n, _ := c.Write(headerLine)
			// What did the server say? A bounded server answers 431 at once (or resets the
			// connection); an unbounded one reads everything and says nothing.
			_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			buf := make([]byte, 12)
			m, rerr := io.ReadFull(c, buf)
			answer := "nothing"
			switch {
			case m >= 12 && strings.HasPrefix(string(buf), "HTTP/1.1 "):
				answer = string(buf[9:12])
			case errors.Is(rerr, io.EOF), errors.Is(rerr, io.ErrUnexpectedEOF), errors.Is(rerr, syscall.ECONNRESET):
				answer = "closed"
			}
			st.mu.Lock()
			if st.HeaderAnswers == nil {
				st.HeaderAnswers = map[string]int{}
			}
			st.HeaderAnswers[answer]++
			st.HeaderBodySent = append(st.HeaderBodySent, n)
			st.mu.Unlock()
		}(i)
	}
	wg.Wait()
	<-ctx.Done()
}

// pace waits until socket i is due: the attack opens Ramp sockets a second.
func (a *attacker) pace(ctx context.Context, start time.Time, i int) {
	due := start.Add(time.Duration(float64(i) / a.Ramp * float64(time.Second)))
	if d := time.Until(due); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
