package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"mediagen/internal/apidoc"
	"mediagen/internal/contract"
	"mediagen/internal/provider"
)

// TestSpeechOpenAPIMatchesRecordedTraffic sends speech requests of every documented outcome
// through the real handler chain and validates each exchange against docs/openapi.yaml.
func TestSpeechOpenAPIMatchesRecordedTraffic(t *testing.T) {
	t.Parallel()
	doc, err := apidoc.Load("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	se := newSpeechEnv(t)
	rec := &apidoc.Recorder{}
	recorded := httptest.NewServer(apidoc.Middleware(se.srv.Handler(), rec.Record))
	t.Cleanup(recorded.Close)
	se.ts = recorded
	poor, _ := se.newKey("acme", 1, false)

	full := spBody(`"input":"Hello there.","instructions":"Warm."`, `{"client_request_id":"oa-sp-1","references":[`+ref("audio_url", se.mediaURL("/voice.mp3"))+`]}`)
	decodeSpeech(t, se.post(se.key, full))
	decodeSpeech(t, se.post(se.key, full)) // replay
	decodeSpeech(t, se.post(se.key, spBody(`"instructions":"Read the sign."`, `{"references":[`+ref("image_url", se.mediaURL("/face.png"))+`]}`)))
	decodeSpeech(t, se.post(se.key, spBody(`"input":"No metadata."`, "")))
	se.post(se.key, spBody(`"input":"Hello there!","instructions":"Warm."`, `{"client_request_id":"oa-sp-1"}`))                   // 409
	se.post(se.key, spBody(`"input":"Hi","voice":"alloy"`, ""))                                                                   // 400
	se.post(se.key, spBody(`"input":"Hi"`, `{"references":[`+ref("audio_url", se.mediaURL("/redirect.mp3"))+`]}`))                // 400 on the url
	se.post(poor, spBody(`"input":"Hi"`, ""))                                                                                     // 402
	se.post("mg_wrong", spBody(`"input":"Hi"`, ""))                                                                               // 401
	se.do("POST", "/v1/audio/speech", map[string]string{"Authorization": "Bearer " + se.key, "Content-Type": "text/plain"}, "{}") // 415
	se.post(se.key, spBody(`"input":"Boom [sandbox:fail]"`, ""))                                                                  // 502
	se.svc.Wait = 300 * time.Millisecond
	se.post(se.key, spBody(`"input":"Slow [sandbox:slow=5s]"`, "")) // 504
	se.svc.Wait = 20 * time.Second
	engines := se.svc.Engines
	se.svc.Engines = map[string]provider.Synthesizer{}
	se.post(se.key, spBody(`"input":"Nobody home"`, "")) // 503
	se.svc.Engines = engines

	ex := rec.Exchanges()
	statuses := map[int]int{}
	for _, x := range ex {
		statuses[x.Status]++
	}
	for _, s := range []int{200, 400, 401, 402, 409, 415, 502, 503, 504} {
		if statuses[s] == 0 {
			t.Errorf("no exchange with status %d recorded (%v)", s, statuses)
		}
	}
	doc.Check(t, ex)

	// The in-progress answer cannot be provoked over HTTP without a stalled engine; its
	// envelope is checked against the document directly.
	h := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"req_x"}, "Retry-After": {"5"}}
	body := `{"error":{"message":"Still generating.","type":"idempotency_error","code":"request_in_progress","param":"metadata.client_request_id"}}`
	if err := doc.ValidateResponse("POST", "/v1/audio/speech", 409, h, []byte(body)); err != nil {
		t.Error(err)
	}
	if err := doc.ValidateResponse("POST", "/v1/audio/speech", 409, h, []byte(strings.Replace(body, "request_in_progress", "other", 1))); err == nil {
		t.Error("the document accepts an unknown 409 code")
	}
}

// Every speech body the contract decoder accepts is accepted by the document too, so Check
// can never report correct traffic as drift.
func TestSpeechDocumentAcceptsWhatTheDecoderAccepts(t *testing.T) {
	t.Parallel()
	doc, err := apidoc.Load("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Authorization": {"Bearer mg_x"}, "Content-Type": {"application/json"}}
	bodies := []string{
		`{"model":"m","input":"Hi"}`,
		`{"model":"m","input":"","instructions":"Say hi."}`,
		`{"model":"m","instructions":"Say hi.","metadata":{}}`,
		`{"model":"m","input":"  Hi  ","instructions":" ","metadata":{"references":[]}}`,
		`{"model":"m","input":"` + strings.Repeat("😀", 3000) + `"}`,
		`{"model":"m","input":"Hi","metadata":{"client_request_id":"  x  ","references":[{"type":"audio_url","url":"https://a.example/1.mp3"},{"url":"HTTPS://B.example:8443/2.wav?x=1#t","type":"audio_url"},{"type":"audio_url","url":"https://[2606:4700:4700::1111]/3.ogg"}]}}`,
		`{"model":"m","input":"Hi","metadata":{"references":[{"type":"image_url","url":"https://my_bucket.s3.example.com/a%20b.png"}]}}`,
	}
	for _, b := range bodies {
		if _, derr := contract.DecodeSpeech([]byte(b)); derr != nil {
			t.Fatalf("test bug: the decoder rejects %.80s: %v", b, derr)
		}
		if err := doc.ValidateRequest("POST", "/v1/audio/speech", h, []byte(b)); err != nil {
			t.Errorf("the decoder accepts %.80s, the document does not:\n%v", b, err)
		}
	}
	// And the document rejects the mode rules it can express.
	for _, b := range []string{
		`{"model":"m","input":"Hi","metadata":{"references":[{"type":"image_url","url":"https://a.example/1.png"},{"type":"image_url","url":"https://a.example/2.png"}]}}`,
		`{"model":"m","input":"Hi","metadata":{"references":[{"type":"audio_url","url":"https://a.example/1.mp3"},{"type":"image_url","url":"https://a.example/2.png"}]}}`,
		`{"model":"m","metadata":{}}`,
		`{"model":"m","input":"Hi","voice":"alloy"}`,
		`{"model":"m","input":"Hi","metadata":{"references":[{"type":"audio_url","url":"http://a.example/1.mp3"}]}}`,
	} {
		if err := doc.ValidateRequest("POST", "/v1/audio/speech", h, []byte(b)); err == nil {
			t.Errorf("the document accepts %s", b)
		}
	}
}
