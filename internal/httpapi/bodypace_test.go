package httpapi

import (
	"bufio"
	"bytes"
	"fmt"
	"image"
	"image/png"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mediagen/internal/blob"
)

// Timing of the paced-body tests: a read stall far above what a paced piece takes on a
// loaded machine (pacedChunk every pacedEvery: 16 KiB in 80 ms), and bodies that take
// several stalls to arrive, so that a whole-body deadline of one stall — the edge's bound
// before issue 41 — cuts them.
const (
	testStall  = 500 * time.Millisecond
	pacedChunk = 2 << 10
	pacedEvery = 10 * time.Millisecond
	pacedBytes = 192 << 10 // 96 chunks: about 1 s, two stalls
)

// setBodyTiming gives the server a short read stall and a long total bound.
func setBodyTiming(s *Server, stall, total time.Duration) { s.bodyPace = BodyPace(stall, total) }

// rawPost sends a POST of body on a connection of its own, pacedChunk bytes every
// pacedEvery, and stops sending after stopAt bytes when stopAt >= 0 (a stalled client).
// It returns the answer, read whole, and whether it said Connection: close (for a stalled
// client: and the server closed the connection after it).
func rawPost(t *testing.T, addr, path string, header map[string]string, body []byte, stopAt int) (response, bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var h strings.Builder
	fmt.Fprintf(&h, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n", path, len(body))
	for k, v := range header {
		fmt.Fprintf(&h, "%s: %s\r\n", k, v)
	}
	h.WriteString("\r\n")
	if _, err := io.WriteString(c, h.String()); err != nil {
		t.Fatal(err)
	}
	sendErr := make(chan error, 1)
	go func() {
		rest := body
		if stopAt >= 0 {
			rest = body[:stopAt]
		}
		tick := time.NewTicker(pacedEvery)
		defer tick.Stop()
		for len(rest) > 0 {
			n := min(len(rest), pacedChunk)
			if _, err := c.Write(rest[:n]); err != nil {
				sendErr <- err
				return
			}
			rest = rest[n:]
			<-tick.C
		}
		sendErr <- nil
	}()
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v (sending: %v)", err, <-sendErr)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if stopAt < 0 {
		if err := <-sendErr; err != nil {
			t.Errorf("the body could not be sent whole: %v", err)
		}
		return response{res.StatusCode, res.Header, b}, res.Close
	}
	// A stalled client: the answer must say Connection: close, and the server close it.
	_, err = br.ReadByte()
	return response{res.StatusCode, res.Header, b}, res.Close && err != nil
}

// padJSON puts spaces before a JSON document's closing brace until it is n bytes long:
// whitespace the decoders skip, so a valid request of any size.
func padJSON(doc string, n int) []byte {
	i := strings.LastIndexByte(doc, '}')
	return []byte(doc[:i] + strings.Repeat(" ", max(0, n-len(doc))) + doc[i:])
}

// noisePNG is a valid PNG of about n bytes: random pixels do not compress.
func noisePNG(t *testing.T, n int) []byte {
	t.Helper()
	side := 8
	for side*side*4 < n {
		side++
	}
	img := image.NewNRGBA(image.Rect(0, 0, side, side))
	r := rand.New(rand.NewPCG(41, 2))
	for i := range img.Pix {
		img.Pix[i] = byte(r.Uint32())
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// bodyKind is one kind of request body of the public API, on a server ready for it.
type bodyKind struct {
	name   string
	addr   string
	path   string
	header map[string]string
	body   []byte
	ok     int // the status of the request sent whole
	// checkOK and checkStalled, when set, check what the server kept.
	checkOK, checkStalled func(t *testing.T, r response)
}

func jsonCreateKind(t *testing.T) bodyKind {
	e := newVideoEnv(t, "acme")
	setBodyTiming(e.srv, testStall, time.Minute)
	return bodyKind{name: "JSON create", addr: strings.TrimPrefix(e.ts.URL, "http://"), path: "/v1/videos",
		header: map[string]string{"Authorization": "Bearer " + e.key, "Content-Type": "application/json"},
		body:   padJSON(`{"model":"acme-video-fast","prompt":"a cat","metadata":{"duration":5,"resolution":"720p","ratio":"16:9"}}`, pacedBytes),
		ok:     http.StatusAccepted}
}

func multipartUploadKind(t *testing.T) bodyKind {
	e := newVideoEnv(t, "acme")
	setBodyTiming(e.srv, testStall, time.Minute)
	dir := t.TempDir()
	fs, err := blob.NewFS(dir, []byte("0123456789abcdef0123456789abcdef"), testPublicURL)
	if err != nil {
		t.Fatal(err)
	}
	e.srv.uploads = fs
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	_ = mw.WriteField("model", "acme-video-fast")
	_ = mw.WriteField("prompt", "the frame comes alive")
	_ = mw.WriteField("seconds", "5")
	_ = mw.WriteField("size", "1280x720")
	fw, _ := mw.CreateFormFile("input_reference", "frame.png")
	_, _ = fw.Write(noisePNG(t, pacedBytes))
	_ = mw.Close()
	return bodyKind{name: "multipart input_reference", addr: strings.TrimPrefix(e.ts.URL, "http://"), path: "/v1/videos",
		header: map[string]string{"Authorization": "Bearer " + e.key, "Content-Type": mw.FormDataContentType()},
		body:   b.Bytes(), ok: http.StatusAccepted,
		checkOK: func(t *testing.T, _ response) {
			if n := storedFiles(t, dir); n != 1 {
				t.Errorf("%d stored uploads after the accepted one, want 1", n)
			}
		},
		checkStalled: func(t *testing.T, _ response) {
			if n := storedFiles(t, dir); n != 0 {
				t.Errorf("%d stored uploads after the 408, want none", n)
			}
		}}
}

func assetCreateKind(t *testing.T) bodyKind {
	e := newAssetEnv(t)
	setBodyTiming(e.srv, testStall, time.Minute)
	g := e.ok(e.acme, vPrefix+"/asset-groups/create", `{"Name":"Brand kit"}`, 200)
	src := e.write("logo.png", testPNG(t, 32, 24))
	return bodyKind{name: "asset create", addr: strings.TrimPrefix(e.ts.URL, "http://"), path: vPrefix + "/assets/create",
		header: map[string]string{"Authorization": "Bearer " + e.acme, "Content-Type": "application/json"},
		body:   padJSON(`{"GroupId":"`+g["Id"].(string)+`","URL":"`+src+`","AssetType":"Image","Name":"Logo"}`, pacedBytes),
		ok:     http.StatusAccepted}
}

func storedFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// bodyKinds are the public API's kinds of body: a JSON create, an upload stored through the
// blob store, an asset library call.
var bodyKinds = []struct {
	name string
	make func(*testing.T) bodyKind
}{{"json", jsonCreateKind}, {"multipart", multipartUploadKind}, {"asset", assetCreateKind}}

// A body that keeps arriving above the minimum rate is read to its end however long it
// takes in all (here two read stalls: a whole-body deadline cut it, and an upload so cut
// was a 500); one that stops arriving is answered 408 request_timeout once a stall has
// passed, with the connection closed — on every kind of body, the upload stored through
// the blob store included — and nothing is kept.
func TestSlowBodiesAboveTheMinimumRateAreReadAndStalledOnesAre408(t *testing.T) {
	t.Parallel()
	for _, kind := range bodyKinds {
		t.Run(kind.name+"/paced", func(t *testing.T) {
			t.Parallel()
			k := kind.make(t)
			start := time.Now()
			r, _ := rawPost(t, k.addr, k.path, k.header, k.body, -1)
			if r.status != k.ok {
				t.Fatalf("%s sent at %d KiB/s over %v: %d %s", k.name, pacedChunk*int(time.Second/pacedEvery)>>10,
					time.Since(start).Round(time.Millisecond), r.status, r.body)
			}
			if took := time.Since(start); took < testStall {
				t.Errorf("%s: the paced body took %v, less than one stall (%v): the test proves nothing", k.name, took, testStall)
			}
			if k.checkOK != nil {
				k.checkOK(t, r)
			}
		})
		t.Run(kind.name+"/stalled", func(t *testing.T) {
			t.Parallel()
			k := kind.make(t)
			start := time.Now()
			r, closed := rawPost(t, k.addr, k.path, k.header, k.body, len(k.body)/2)
			checkEnvelope(t, r, http.StatusRequestTimeout, "invalid_request_error", "request_timeout")
			if !closed {
				t.Errorf("%s: the connection was kept after the 408", k.name)
			}
			if took := time.Since(start); took > 10*testStall {
				t.Errorf("%s: the 408 came after %v, far past the stall (%v)", k.name, took, testStall)
			}
			if k.checkStalled != nil {
				k.checkStalled(t, r)
			}
		})
	}
}
