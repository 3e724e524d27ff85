package blob

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Range answers on signed links: malformed Range headers are ignored (the whole file, as RFC
// 9110 §14.2 allows), unsatisfiable ones are 416 envelopes with "bytes */SIZE", and every
// refusal ServeContent would have written as plain text comes back as an error.
func TestServeFile_RangeAnswers(t *testing.T) {
	t.Parallel()
	f := newServeFixture(t)
	content := []byte(strings.Repeat("abcdefghijklmnopqrstuvwxyz", 100))
	size := strconv.Itoa(len(content))
	put(t, f.fs, "videos/v/result.mp4", string(content))
	link, _ := f.fs.SignedURL("videos/v/result.mp4", time.Hour)
	resp, _ := f.do(t, http.MethodGet, link, nil)
	etag := resp.Header.Get("ETag")
	many := "bytes=" + strings.TrimSuffix(strings.Repeat("0-0,", maxRanges+1), ",")

	tests := []struct {
		name         string
		method       string
		hdr          map[string]string
		wantStatus   int
		wantBody     []byte // nil: not checked
		wantCode     string // an envelope with this code
		contentRange string
	}{
		{name: "malformed range is ignored", hdr: map[string]string{"Range": "bytes=abc"}, wantStatus: 200, wantBody: content},
		{name: "unknown unit is ignored", hdr: map[string]string{"Range": "items=0-1"}, wantStatus: 200, wantBody: content},
		{name: "last before first is ignored", hdr: map[string]string{"Range": "bytes=9-3"}, wantStatus: 200, wantBody: content},
		{name: "empty range set is ignored", hdr: map[string]string{"Range": "bytes=,"}, wantStatus: 200, wantBody: content},
		{name: "negative suffix is ignored", hdr: map[string]string{"Range": "bytes=--5"}, wantStatus: 200, wantBody: content},
		{name: "too many ranges are ignored", hdr: map[string]string{"Range": many}, wantStatus: 200, wantBody: content},
		{name: "zero-length suffix is 416", hdr: map[string]string{"Range": "bytes=-0"}, wantStatus: 416,
			wantCode: "range_not_satisfiable", contentRange: "bytes */" + size},
		{name: "range past the end is 416", hdr: map[string]string{"Range": "bytes=5000-6000"}, wantStatus: 416,
			wantCode: "range_not_satisfiable", contentRange: "bytes */" + size},
		{name: "first-pos beyond int64 is 416", hdr: map[string]string{"Range": "bytes=99999999999999999999999-"}, wantStatus: 416,
			wantCode: "range_not_satisfiable", contentRange: "bytes */" + size},
		{name: "HEAD with an unsatisfiable range is 416", method: http.MethodHead, hdr: map[string]string{"Range": "bytes=-0"},
			wantStatus: 416, contentRange: "bytes */" + size},
		{name: "an unsatisfiable part is dropped", hdr: map[string]string{"Range": "bytes=-0,0-1"}, wantStatus: 206,
			wantBody: content[:2], contentRange: "bytes 0-1/" + size},
		{name: "huge last-pos is clamped", hdr: map[string]string{"Range": "bytes=2590-99999999999999999999999"}, wantStatus: 206,
			wantBody: content[2590:], contentRange: "bytes 2590-2599/" + size},
		{name: "unit is case-insensitive", hdr: map[string]string{"Range": "Bytes=0-1"}, wantStatus: 206,
			wantBody: content[:2], contentRange: "bytes 0-1/" + size},
		{name: "stale If-Range ignores an unsatisfiable range", hdr: map[string]string{"Range": "bytes=-0", "If-Range": `"stale"`},
			wantStatus: 200, wantBody: content},
		{name: "matching If-Range keeps it unsatisfiable", hdr: map[string]string{"Range": "bytes=-0", "If-Range": etag},
			wantStatus: 416, wantCode: "range_not_satisfiable", contentRange: "bytes */" + size},
		{name: "failed If-Match is a 412 envelope", hdr: map[string]string{"If-Match": `"other"`}, wantStatus: 412,
			wantCode: "precondition_failed"},
		{name: "multi-range still works", hdr: map[string]string{"Range": "bytes=0-1,5-6"}, wantStatus: 206},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			resp, body := f.do(t, method, link, tc.hdr)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status = %d, want %d; body %.200q", resp.StatusCode, tc.wantStatus, body)
			}
			if tc.wantBody != nil && !bytes.Equal(body, tc.wantBody) {
				t.Errorf("body = %.80q, want %.80q", body, tc.wantBody)
			}
			if tc.contentRange != "" && resp.Header.Get("Content-Range") != tc.contentRange {
				t.Errorf("Content-Range = %q, want %q", resp.Header.Get("Content-Range"), tc.contentRange)
			}
			if tc.wantStatus >= 400 {
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q, want application/json", ct)
				}
				if resp.Header.Get("Content-Disposition") != "" {
					t.Errorf("error carries file headers: %v", resp.Header)
				}
			}
			if tc.wantCode != "" {
				var env struct {
					Error struct{ Code string } `json:"error"`
				}
				if err := json.Unmarshal(body, &env); err != nil || env.Error.Code != tc.wantCode {
					t.Errorf("body = %q (err %v), want code %q", body, err, tc.wantCode)
				}
			}
		})
	}
}

func TestNormalizeRange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header string
		size   int64
		want   string
	}{
		{"", 100, ""},
		{"bytes=0-9", 100, "bytes=0-9"},
		{"bytes= 0-9 , 20-", 100, "bytes=0-9,20-"},
		{"bytes=-0", 100, "bytes=100-"},
		{"bytes=100-", 100, "bytes=100-"},
		{"bytes=-500", 100, "bytes=-100"},
		{"bytes=0-500", 100, "bytes=0-99"},
		{"bytes=007-8", 100, "bytes=7-8"},
		{"bytes=abc", 100, ""},
		{"bytes=1-2-3", 100, ""},
		{"bytes=+1-2", 100, ""},
		{"bytes=", 100, ""},
		{"bytes =0-1", 100, ""},
		{"bytes=0-1", 0, ""},
	}
	for _, tc := range tests {
		if got := normalizeRange(tc.header, tc.size); got != tc.want {
			t.Errorf("normalizeRange(%q, %d) = %q, want %q", tc.header, tc.size, got, tc.want)
		}
	}
}
