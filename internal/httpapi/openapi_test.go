package httpapi

import (
	"net/http/httptest"
	"testing"
	"time"

	"mediagen/internal/apidoc"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

// TestOpenAPIMatchesRecordedTraffic sends a representative request of every documented
// operation and outcome through the real handler chain and validates each exchange against
// docs/openapi.yaml, so the document cannot drift from the code.
func TestOpenAPIMatchesRecordedTraffic(t *testing.T) {
	t.Parallel()
	doc, err := apidoc.Load("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := newVideoEnv(t, "acme")
	rec := &apidoc.Recorder{}
	recorded := httptest.NewServer(apidoc.Middleware(e.srv.Handler(), rec.Record))
	t.Cleanup(recorded.Close)
	e.ts = recorded
	lim := newVideoEnv(t, "limited")
	limRec := httptest.NewServer(apidoc.Middleware(lim.srv.Handler(), rec.Record))
	t.Cleanup(limRec.Close)
	lim.ts = limRec
	poor, _ := e.newKey("acme", 1, false)
	full, _ := newLimitedVideoEnv(t, limitedCatalog(t, map[string]string{"requests_per_second": "1", "burst": "3", "video_tasks_in_flight": "1"}, nil))
	fullRec := httptest.NewServer(apidoc.Middleware(full.srv.Handler(), rec.Record))
	t.Cleanup(fullRec.Close)
	full.ts = fullRec

	native := e.post(e.key, `{"model":"acme-video-2.5","prompt":"a cat","metadata":{"duration":5,"resolution":"1080p","ratio":"9:16","generate_audio":true,"watermark":false,"client_request_id":"oa-1"}}`)
	e.post(e.key, `{"model":"acme-video-2.5","prompt":"a cat","metadata":{"duration":5,"resolution":"1080p","ratio":"9:16","generate_audio":true,"watermark":false,"client_request_id":"oa-1"}}`) // replay
	e.post(e.key, `{"model":"acme-video-standard","prompt":"frames","seed":42,"metadata":{"output_format":"mov","return_last_frame":true,"content":[
		{"type":"image_url","role":"first_frame","image_url":{"url":"https://cdn.example/a.png"}},
		{"type":"image_url","role":"last_frame","image_url":{"url":"https://cdn.example/b.png"}}]}}`)
	e.post(e.key, `{"model":"acme-enhance","prompt":null,"metadata":{"video_url":"https://cdn.example/v.mp4","duration":5.5,"tool_version":"professional","resolution_limit":1440,"fps":60,"bitrate":8000,"bit_depth":10,"enhance_style":"natural"}}`)
	e.post(e.key, `{"model":"acme-production-standard","prompt":"x","user":"u-1","metadata":{"resolution":"2k","duration":6,"scene":"ugc","enhance_style":"hd","bitrate_level":"high","return_last_frame":true,"content":[
		{"type":"video_url","role":"reference_video","video_url":{"url":"https://media.example/in-3.mp4"}}]}}`)
	e.post(e.key, `{"model":"acme-video-2.5","prompt":"a cat","metadata":{"duration":5,"client_request_id":"oa-1"}}`) // 409
	e.post(e.key, `{"model":"acme-video-2.5","prompt":"a cat","metadata":{"duration":99}}`)                           // 400
	e.post(poor, `{"model":"acme-video-2.5","prompt":"a cat"}`)                                                       // 402
	e.post("mg_wrong", `{"model":"acme-video-2.5","prompt":"a cat"}`)                                                 // 401
	capped, cappedKey := e.newKey("acme", startCredit, false)
	setCaps(t, e.store, cappedKey, store.Caps{Daily: money.CapOf(1)})
	e.post(capped, `{"model":"acme-video-2.5","prompt":"a cat"}`) // 402 spend_cap_exceeded
	expired, expiredKey := e.newKey("acme", 0, false)
	expiredKey.ExpiresAt = time.Now().Add(-time.Second)
	if err := e.store.Transact(t.Context(), func(tx store.Tx) error { return tx.UpdateKey(t.Context(), expiredKey) }); err != nil {
		t.Fatal(err)
	}
	e.do("GET", "/v1/billing/balance", map[string]string{"Authorization": "Bearer " + expired}, "") // 401 expired_api_key
	lim.post(lim.key, `{"model":"lim-video","prompt":"a cat","metadata":{"resolution":"4k"}}`)      // 403
	e.do("POST", "/v1/videos", map[string]string{"Authorization": "Bearer " + e.key, "Content-Type": "text/plain"}, "{}")
	full.post(full.key, createBody("f1"))
	full.post(full.key, createBody("f2")) // 429 too_many_tasks_in_flight
	full.do("GET", "/v1/billing/balance", map[string]string{"Authorization": "Bearer " + full.key}, "")
	full.do("GET", "/v1/billing/balance", map[string]string{"Authorization": "Bearer " + full.key}, "") // 429 rate_limit_exceeded

	e.get(e.key, decodeTask(t, native).ID)
	e.get(e.key, "video_unknown")
	auth := map[string]string{"Authorization": "Bearer " + e.key}
	e.do("GET", "/v1/videos", auth, "")
	e.do("GET", "/v1/videos?limit=1&order=asc&status=queued&created_after=2026-01-01T00:00:00Z", auth, "")
	e.do("GET", "/v1/videos?status=failed", auth, "")                                    // an empty page
	e.do("GET", "/v1/videos?limit=0", auth, "")                                          // 400
	e.do("GET", "/v1/videos", map[string]string{"Authorization": "Bearer mg_wrong"}, "") // 401
	e.do("GET", "/v1/billing/balance", map[string]string{"Authorization": "Bearer " + e.key}, "")
	addUsageRows(t, e.store, e.keyRec, 0)
	for _, q := range []string{"from=2026-11-01&to=2026-11-30&group_by=day,alias", "from=2026-11-02T00:00:00Z&to=2026-11-03T00:00:00Z&group_by=hour,route",
		"from=2026-11-01&to=2026-11-30", "from=2026-11-01&group_by=tenant"} {
		e.do("GET", "/v1/billing/usage?"+q, map[string]string{"Authorization": "Bearer " + e.key}, "")
	}
	e.do("GET", "/healthz", nil, "")
	e.do("GET", "/readyz", nil, "")

	ex := rec.Exchanges()
	if len(ex) < 16 {
		t.Fatalf("recorded %d exchanges", len(ex))
	}
	doc.Check(t, ex)
}
