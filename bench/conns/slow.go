package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Issue 41's phases: slow uploads (a valid input_reference sent at an ordinary rate, which a
// 30 s whole-body deadline cut with a 500, and uploads that stop half way) and an admin
// slowloris (connections with unfinished headers to the admin listener from one address,
// reopened when dropped).

// pngHead is a PNG signature and the IHDR of a 16×16 RGB image: it passes the upload's type
// and header checks, so the whole upload is stored before the request is decided.
func pngHead() string {
	ihdr := "IHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x02\x00\x00\x00"
	var crc [4]byte
	binary.BigEndian.PutUint32(crc[:], crc32.ChecksumIEEE([]byte(ihdr)))
	return "\x89PNG\r\n\x1a\n\x00\x00\x00\r" + ihdr + string(crc[:])
}

// uploadBody is the multipart body of a slow upload: OpenAI's create with an input_reference
// of size bytes and seconds "99", out of range, so that the request is refused (400 naming
// seconds) only after the upload was read whole and stored — no task is rendered while the
// phase measures. A 400 says the body was read to its end; a 408 or 500 that it was cut.
func uploadBody(size int) (body []byte, contentType string) {
	var b strings.Builder
	mw := multipart.NewWriter(&b)
	_ = mw.WriteField("model", "demo-video-fast")
	_ = mw.WriteField("prompt", "bench conns slow upload")
	_ = mw.WriteField("seconds", "99")
	fw, _ := mw.CreateFormFile("input_reference", "frame.png")
	_, _ = io.WriteString(fw, pngHead())
	_, _ = io.WriteString(fw, strings.Repeat("\x42", max(0, size-len(pngHead()))))
	_ = mw.Close()
	return []byte(b.String()), mw.FormDataContentType()
}

// uploadChunkEvery is the pacing step of a slow upload: rate/10 bytes every 100 ms.
const uploadChunkEvery = 100 * time.Millisecond

// slowUploadAttack sends PacedUploads uploads of UploadBytes at UploadRate bytes a second,
// and StalledUploads that send their first 64 KiB and then nothing, from the first
// UploadAttackers addresses, and notes each one's answer and when it came.
func (a *attacker) slowUploadAttack(ctx context.Context, st *attackStats) {
	body, ct := uploadBody(a.UploadBytes)
	head := "POST /v1/videos HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + a.Key +
		"\r\nContent-Type: " + ct + "\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n"
	var wg sync.WaitGroup
	start := time.Now()
	// The two kinds alternate while both last, so that they ramp up together.
	var kinds []bool // true: stalled
	for i := range max(a.PacedUploads, a.StalledUploads) {
		if i < a.PacedUploads {
			kinds = append(kinds, false)
		}
		if i < a.StalledUploads {
			kinds = append(kinds, true)
		}
	}
	for i, stalled := range kinds {
		a.pace(ctx, start, i)
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			from := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%max(1, min(a.UploadAttackers, a.Attackers))))}
			kind, send := "paced upload", body
			if stalled {
				kind, send = "stalled upload", body[:min(len(body), 64<<10)]
			}
			answer, took := a.upload(ctx, st, kind, from, head, send)
			st.mu.Lock()
			defer st.mu.Unlock()
			if st.Uploads == nil {
				st.Uploads = map[string]map[string]int{}
				st.UploadTook = map[string][]time.Duration{}
			}
			if st.Uploads[kind] == nil {
				st.Uploads[kind] = map[string]int{}
			}
			st.Uploads[kind][answer]++
			st.UploadTook[kind] = append(st.UploadTook[kind], took)
		}()
	}
	wg.Wait()
}

// upload sends head and then send at UploadRate, and returns the answer's status and code
// ("400 invalid_request_error", "408 request_timeout", "no answer: …") and how long after
// the headers it came.
func (a *attacker) upload(ctx context.Context, st *attackStats, kind string, from *net.TCPAddr, head string, send []byte) (string, time.Duration) {
	c, err := dial(ctx, from, a.Addr, 0)
	if err != nil {
		return "connect failed", 0
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	_ = c.SetDeadline(deadline)
	start := time.Now()
	if _, err := io.WriteString(c, head); err != nil {
		return "refused", time.Since(start)
	}
	st.open(kind)
	go func() {
		step := max(1, int(float64(a.UploadRate)*uploadChunkEvery.Seconds()))
		tick := time.NewTicker(uploadChunkEvery)
		defer tick.Stop()
		for rest := send; len(rest) > 0; rest = rest[min(step, len(rest)):] {
			if _, err := c.Write(rest[:min(step, len(rest))]); err != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		// A stalled upload just stops sending here; its connection stays open.
	}()
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	took := time.Since(start)
	if err != nil {
		return "no answer", took
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
	code := ""
	if _, rest, ok := strings.Cut(string(b), `"code":"`); ok {
		code, _, _ = strings.Cut(rest, `"`)
	}
	return fmt.Sprintf("%d %s", res.StatusCode, code), took
}

// adminSlowlorisAttack holds AdminSlowloris connections to the admin listener from the
// first AdminAttackers addresses, each with a request whose headers never end, and opens a
// new one whenever the server drops one (its header timeout, or a refusal), until ctx ends.
func (a *attacker) adminSlowlorisAttack(ctx context.Context, st *attackStats) {
	var wg sync.WaitGroup
	for i := range a.AdminSlowloris {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%max(1, min(a.AdminAttackers, a.Attackers))))}
			for ctx.Err() == nil {
				answer := a.holdPartialHeader(ctx, st, from)
				st.mu.Lock()
				if st.AdminAnswers == nil {
					st.AdminAnswers = map[string]int{}
				}
				st.AdminAnswers[answer]++
				st.mu.Unlock()
				if answer != "held to the end" {
					// Reopen at once, as the client did; a short pause keeps a refused
					// address from spinning on the accept loop.
					select {
					case <-ctx.Done():
					case <-time.After(50 * time.Millisecond):
					}
				}
			}
		}()
	}
	wg.Wait()
}

// holdPartialHeader opens one connection, sends the start of a request, and waits for the
// server to answer or drop it.
func (a *attacker) holdPartialHeader(ctx context.Context, st *attackStats, from *net.TCPAddr) string {
	c, err := dial(ctx, from, a.AdminAddr, 0)
	if err != nil {
		return "connect failed"
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.SetReadDeadline(time.Now()) })
	defer stop()
	if _, err := io.WriteString(c, "GET /admin/v1/whoami HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "); err != nil {
		return "closed"
	}
	st.open("admin partial header")
	buf := make([]byte, 12)
	m, _ := io.ReadFull(c, buf)
	switch {
	case ctx.Err() != nil:
		return "held to the end"
	case m >= 12 && strings.HasPrefix(string(buf), "HTTP/1.1 "):
		return string(buf[9:12])
	}
	return "dropped (header timeout)"
}
