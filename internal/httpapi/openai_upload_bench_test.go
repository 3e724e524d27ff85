package httpapi

import (
	"io"
	"mime/multipart"
	"net/http"
	"testing"

	"mediagen/internal/blob"
)

// pngStream is a valid PNG signature and IHDR followed by n filler bytes: it passes the
// header check, so the whole upload is stored before the request is decided.
type pngStream struct{ head []byte }

func (p *pngStream) Read(b []byte) (int, error) {
	if len(p.head) > 0 {
		n := copy(b, p.head)
		p.head = p.head[n:]
		return n, nil
	}
	for i := range b {
		b[i] = 0x42
	}
	return len(b), nil
}

// BenchmarkOpenAIUploadMemory posts a 24 MiB input_reference, streamed by the client, and
// reports the bytes allocated per upload by client and server together: far below the
// upload's size, because the part goes to the blob store as a stream.
// Run: go test -run '^$' -bench OpenAIUploadMemory -benchmem ./internal/httpapi/
func BenchmarkOpenAIUploadMemory(b *testing.B) {
	const size = 24 << 20
	e := newVideoEnv(b, "acme")
	fs, err := blob.NewFS(b.TempDir(), []byte("0123456789abcdef0123456789abcdef"), "http://127.0.0.1")
	if err != nil {
		b.Fatal(err)
	}
	e.srv.uploads = fs
	ihdr := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x02\x00\x00\x00\x90\x91\x68\x36"
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		go func() {
			_ = mw.WriteField("model", "acme-video-fast")
			_ = mw.WriteField("prompt", "x")
			_ = mw.WriteField("seconds", "99") // refused after the upload: nothing kept
			fw, _ := mw.CreateFormFile("input_reference", "f.png")
			_, _ = io.Copy(fw, io.LimitReader(&pngStream{head: []byte(ihdr)}, size))
			_ = mw.Close()
			_ = pw.Close()
		}()
		req, _ := http.NewRequest("POST", e.ts.URL+"/v1/videos", pr)
		req.Header.Set("Authorization", "Bearer "+e.key)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 400 {
			b.Fatalf("status %d", res.StatusCode)
		}
	}
}
