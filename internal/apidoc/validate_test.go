package apidoc

import (
	"net/http"
	"strings"
	"testing"
)

type reqCase struct {
	name   string
	method string
	path   string
	header http.Header
	body   string
	want   string // substring of the error; "" means valid
}

func runRequests(t *testing.T, cases []reqCase) {
	t.Helper()
	d := doc(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := c.header
			if h == nil {
				h = jsonReq()
			}
			err := d.ValidateRequest(c.method, c.path, h, []byte(c.body))
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("valid request rejected: %v", err)
			case c.want != "" && err == nil:
				t.Fatal("invalid request accepted")
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("error does not mention %q:\n%v", c.want, err)
			}
		})
	}
}

func post(name, body, want string) reqCase {
	return reqCase{name: name, method: "POST", path: "/v1/videos", body: body, want: want}
}

func TestValidRequests(t *testing.T) {
	runRequests(t, []reqCase{
		post("native text", `{"model":"m","prompt":"a cat surfing"}`, ""),
		post("native text with controls and seed", `{"model":"m","prompt":"a cat","user":"u1","seed":-9223372036854775808,
			"metadata":{"duration":-1,"resolution":"480p","ratio":"21:9","generate_audio":true,"watermark":false,
			"client_request_id":"  id with spaces inside  ","output_format":"mov","return_last_frame":false}}`, ""),
		post("native first and last frame", `{"model":"m","metadata":{"ratio":"adaptive","content":[
			{"type":"image_url","role":"last_frame","image_url":{"url":"https://x.example/b.png"}},
			{"type":"image_url","role":"first_frame","image_url":{"url":"asset://img-1"}}]}}`, ""),
		post("native 2.5 edit", `{"model":"m","prompt":"make it night","metadata":{"duration":-1,"omni_reference_task_type":"edit",
			"content":[{"type":"video_url","role":"reference_video","video_url":{"url":"https://x.example/v.mp4"}},
			{"type":"audio_url","role":"reference_audio","audio_url":{"url":"https://x.example/a.mp3"}}]}}`, ""),
		post("native empty content with prompt", `{"model":"m","prompt":"x","metadata":{"content":[]}}`, ""),
		post("enhancement lite by limit", `{"model":"e","metadata":{"video_url":"http://x.example/v.mp4","duration":5.084,"resolution_limit":720}}`, ""),
		post("enhancement with null prompt", `{"model":"e","prompt":null,"metadata":{"video_url":"https://x.example/v.mp4","duration":1,"resolution":"8k","scene":"old_film","tool_version":"standard"}}`, ""),
		post("enhancement professional", `{"model":"e","prompt":{"any":"thing"},"metadata":{"video_url":"https://x.example/v.mp4","duration":1e1,
			"resolution":"2k","tool_version":"professional","bit_depth":16,"enhance_style":"hd","fps":120,"bitrate":150000,"bitrate_level":"low","client_request_id":"x"}}`, ""),
		post("production pro", `{"model":"p","metadata":{"resolution":"4k","bit_depth":12,"enhance_style":"natural","duration":30,
			"content":[{"type":"image_url","role":"reference_image","image_url":{"url":"https://x.example/i.png"}}],"omni_reference_task_type":"reference","ratio":"1:1"}}`, ""),
		post("production standard text", `{"model":"p","prompt":"city","user":"u","metadata":{"resolution":"1080p","scene":"ugc","fps":15,"return_last_frame":true,"watermark":true,"generate_audio":false}}`, ""),
		post("content type with charset", `{"model":"m","prompt":"x"}`, ""),
		{name: "get task", method: "GET", path: "/v1/videos/video_abc", header: hdr("Authorization", key)},
		{name: "get task lower-case bearer", method: "GET", path: "/v1/videos/video_abc", header: hdr("Authorization", "bearer k")},
		{name: "balance", method: "GET", path: "/v1/billing/balance", header: hdr("Authorization", key, "X-Request-Id", "anything at all")},
		{name: "healthz without auth", method: "GET", path: "/healthz", header: http.Header{}},
		{name: "readyz with a query", method: "GET", path: "/readyz?verbose=1", header: http.Header{}},
		{name: "metrics", method: "get", path: "/metrics", header: http.Header{}},
	})
}

func TestInvalidRequests(t *testing.T) {
	frame := func(role string) string {
		return `{"type":"image_url","role":"` + role + `","image_url":{"url":"https://x.example/i.png"}}`
	}
	ref := `{"type":"image_url","role":"reference_image","image_url":{"url":"https://x.example/i.png"}}`
	runRequests(t, []reqCase{
		// unknown fields
		post("unknown top-level field", `{"model":"m","prompt":"x","mode":"fast"}`, "additional properties 'mode'"),
		post("unknown metadata field", `{"model":"m","prompt":"x","metadata":{"task_type":"t2v"}}`, "task_type"),
		post("duration at top level", `{"model":"m","prompt":"x","duration":5}`, "duration"),
		post("unknown content item field", `{"model":"m","metadata":{"content":[{"type":"image_url","role":"reference_image","image_url":{"url":"https://x.example/i.png","detail":"hi"}}]}}`, "detail"),
		post("enhancement with user", `{"model":"e","user":"u","metadata":{"video_url":"https://x.example/v.mp4","duration":1,"resolution":"4k"}}`, "matches none"),
		// wrong enums and ranges
		post("native resolution 8k", `{"model":"m","prompt":"x","metadata":{"resolution":"8k"}}`, "resolution"),
		post("ratio 2:1", `{"model":"m","prompt":"x","metadata":{"ratio":"2:1"}}`, "ratio"),
		post("enum case", `{"model":"m","prompt":"x","metadata":{"output_format":"MP4"}}`, "output_format"),
		post("duration 3", `{"model":"m","prompt":"x","metadata":{"duration":3}}`, "duration"),
		post("duration 31", `{"model":"m","prompt":"x","metadata":{"duration":31}}`, "duration"),
		post("duration decimal", `{"model":"m","prompt":"x","metadata":{"duration":5.5}}`, "duration"),
		post("duration string", `{"model":"m","prompt":"x","metadata":{"duration":"5"}}`, "duration"),
		post("fps 121", `{"model":"p","prompt":"x","metadata":{"resolution":"1080p","fps":121}}`, "fps"),
		post("bitrate 9", `{"model":"p","prompt":"x","metadata":{"resolution":"1080p","bitrate":9}}`, "bitrate"),
		post("bit_depth 9", `{"model":"e","metadata":{"video_url":"https://x.example/v.mp4","duration":1,"resolution":"4k","tool_version":"professional","bit_depth":9}}`, "bit_depth"),
		post("resolution_limit 4321", `{"model":"e","metadata":{"video_url":"https://x.example/v.mp4","duration":1,"resolution_limit":4321}}`, "resolution_limit"),
		post("enhancement 720p", `{"model":"e","metadata":{"video_url":"https://x.example/v.mp4","duration":1,"resolution":"720p"}}`, "resolution"),
		post("enhancement tool_version fast", `{"model":"e","metadata":{"video_url":"https://x.example/v.mp4","duration":1,"resolution":"4k","tool_version":"fast"}}`, "tool_version"),
		post("enhancement duration 0", `{"model":"e","metadata":{"video_url":"https://x.example/v.mp4","duration":0,"resolution":"4k"}}`, "duration"),
		post("production 720p", `{"model":"p","prompt":"x","metadata":{"resolution":"720p","fps":30}}`, "resolution"),
		post("client_request_id too long", `{"model":"m","prompt":"x","metadata":{"client_request_id":"`+strings.Repeat("a", 65)+`"}}`, "client_request_id"),
		post("client_request_id blank", `{"model":"m","prompt":"x","metadata":{"client_request_id":"   "}}`, "client_request_id"),
		post("client_request_id non-ASCII", `{"model":"m","prompt":"x","metadata":{"client_request_id":"é"}}`, "client_request_id"),
		post("model blank", `{"model":"  ","prompt":"x"}`, "model"),
		post("content url data:", `{"model":"m","metadata":{"content":[{"type":"image_url","role":"reference_image","image_url":{"url":"data:image/png;base64,AAAA"}}]}}`, "url"),
		post("content role/type mismatch", `{"model":"m","metadata":{"content":[{"type":"image_url","role":"reference_video","image_url":{"url":"https://x.example/i.png"}}]}}`, "role"),
		post("enhancement asset url", `{"model":"e","metadata":{"video_url":"asset://a1","duration":1,"resolution":"4k"}}`, "video_url"),
		// missing required
		post("no model", `{"prompt":"x"}`, "model"),
		post("text mode without prompt", `{"model":"m","metadata":{"duration":5}}`, "prompt"),
		post("text mode with blank prompt", `{"model":"m","prompt":" \n"}`, "prompt"),
		post("production without resolution", `{"model":"p","prompt":"x","metadata":{"fps":30}}`, "resolution"),
		post("enhancement without duration", `{"model":"e","metadata":{"video_url":"https://x.example/v.mp4","resolution":"4k"}}`, "duration"),
		post("enhancement without selector", `{"model":"e","metadata":{"video_url":"https://x.example/v.mp4","duration":1}}`, "oneOf"),
		post("enhancement with both selectors", `{"model":"e","metadata":{"video_url":"https://x.example/v.mp4","duration":1,"resolution":"4k","resolution_limit":720}}`, "oneOf"),
		post("content item without media object", `{"model":"m","metadata":{"content":[{"type":"image_url","role":"reference_image"}]}}`, "image_url"),
		// null values
		post("null duration", `{"model":"m","prompt":"x","metadata":{"duration":null}}`, "duration"),
		post("null native prompt", `{"model":"m","prompt":null,"metadata":{"content":[`+ref+`]}}`, "prompt"),
		post("null metadata", `{"model":"m","prompt":"x","metadata":null}`, "metadata"),
		post("null seed", `{"model":"m","prompt":"x","seed":null}`, "seed"),
		// cross-field rules
		post("seed with omni task type", `{"model":"m","prompt":"x","seed":1,"metadata":{"omni_reference_task_type":"auto"}}`, "omni_reference_task_type"),
		post("frames mixed with references", `{"model":"m","metadata":{"content":[`+frame("first_frame")+`,`+ref+`]}}`, "not"),
		post("two first frames", `{"model":"m","metadata":{"content":[`+frame("first_frame")+`,`+frame("first_frame")+`]}}`, "max 1 items"),
		post("last frame alone", `{"model":"m","metadata":{"content":[`+frame("last_frame")+`]}}`, "content"),
		post("31 reference images", `{"model":"m","metadata":{"content":[`+strings.TrimSuffix(strings.Repeat(ref+",", 31), ",")+`]}}`, "max 30 items"),
		post("51 items", `{"model":"m","metadata":{"content":[`+strings.TrimSuffix(strings.Repeat(`{"type":"audio_url","role":"reference_audio","audio_url":{"url":"https://x.example/a.mp3"}},`, 51), ",")+`]}}`, "maxItems"),
		post("first frame with ratio", `{"model":"m","metadata":{"ratio":"16:9","content":[`+frame("first_frame")+`]}}`, "ratio"),
		post("edit with duration", `{"model":"m","prompt":"x","metadata":{"omni_reference_task_type":"edit","duration":5,"content":[{"type":"video_url","role":"reference_video","video_url":{"url":"https://x.example/v.mp4"}}]}}`, "duration"),
		post("extend without video", `{"model":"m","prompt":"x","metadata":{"omni_reference_task_type":"extend","content":[`+ref+`]}}`, "content"),
		post("reference without references", `{"model":"m","prompt":"x","metadata":{"omni_reference_task_type":"reference"}}`, "content"),
		post("enhancement scene with professional", `{"model":"e","metadata":{"video_url":"https://x.example/v.mp4","duration":1,"resolution":"4k","tool_version":"professional","scene":"aigc"}}`, "scene"),
		post("enhancement bit_depth without professional", `{"model":"e","metadata":{"video_url":"https://x.example/v.mp4","duration":1,"resolution":"4k","bit_depth":10}}`, "bit_depth"),
		post("production scene with bit_depth", `{"model":"p","prompt":"x","metadata":{"resolution":"4k","scene":"aigc","bit_depth":10}}`, "bit_depth"),
		// JSON syntax
		post("duplicate key", `{"model":"m","prompt":"x","prompt":"y"}`, "at prompt: The field prompt appears more than once"),
		post("trailing data", `{"model":"m","prompt":"x"} {}`, "data after the JSON"),
		post("not JSON", `{"model":`, "invalid JSON"),
		post("array body", `[]`, "matches none"),
		{name: "empty body", method: "POST", path: "/v1/videos", body: "", want: "required"},
		// headers
		{name: "no auth", method: "POST", path: "/v1/videos", header: hdr("Content-Type", "application/json"), body: `{"model":"m","prompt":"x"}`, want: "security"},
		{name: "basic auth", method: "POST", path: "/v1/videos", header: hdr("Authorization", "Basic dTpw", "Content-Type", "application/json"), body: `{"model":"m","prompt":"x"}`, want: "security"},
		{name: "empty bearer", method: "GET", path: "/v1/billing/balance", header: hdr("Authorization", "Bearer "), want: "security"},
		{name: "text/plain body", method: "POST", path: "/v1/videos", header: hdr("Authorization", key, "Content-Type", "text/plain"), body: `{"model":"m","prompt":"x"}`, want: "Content-Type"},
		{name: "no content type", method: "POST", path: "/v1/videos", header: hdr("Authorization", key), body: `{"model":"m","prompt":"x"}`, want: "Content-Type"},
		{name: "body on GET", method: "GET", path: "/v1/billing/balance", header: hdr("Authorization", key), body: `{}`, want: "no request body"},
		// operations
		{name: "unknown path", method: "DELETE", path: "/v1/videos", want: "no such operation"},
		{name: "unknown method", method: "PUT", path: "/v1/videos/video_abc", want: "no such operation"},
		{name: "empty task id", method: "GET", path: "/v1/videos/", want: "no such operation"},
		{name: "extra segment", method: "GET", path: "/v1/videos/a/b", want: "no such operation"},
	})
}

type respCase struct {
	name   string
	method string
	path   string
	status int
	header http.Header
	body   string
	want   string
}

func runResponses(t *testing.T, cases []respCase) {
	t.Helper()
	d := doc(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := c.header
			if h == nil {
				h = jsonResp()
			}
			err := d.ValidateResponse(c.method, c.path, c.status, h, []byte(c.body))
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("valid response rejected: %v", err)
			case c.want != "" && err == nil:
				t.Fatal("invalid response accepted")
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("error does not mention %q:\n%v", c.want, err)
			}
		})
	}
}

const (
	taskQueued    = `{"id":"video_a","task_id":"video_a","object":"video","model":"m","status":"queued","progress":0,"created_at":1795306534}`
	taskCompleted = `{"id":"video_a","task_id":"video_a","object":"video","model":"m","status":"completed","progress":100,"created_at":1795306534,
		"metadata":{"client_request_id":"c1","url":"https://f.example/r/a.mov?sig=1","last_frame_url":"https://f.example/r/a.jpg"},
		"usage":{"completion_tokens":10,"total_tokens":10}}`
)

func getTask(name string, status int, body, want string) respCase {
	return respCase{name: name, method: "GET", path: "/v1/videos/video_a", status: status, body: body, want: want}
}

func TestValidResponses(t *testing.T) {
	runResponses(t, []respCase{
		{name: "create 202", method: "POST", path: "/v1/videos", status: 202, body: taskQueued},
		{name: "create 202 with client_request_id", method: "POST", path: "/v1/videos", status: 202,
			body: `{"id":"video_a","task_id":"video_a","object":"video","model":"m","status":"queued","progress":0,"created_at":1,"metadata":{"client_request_id":"x"}}`},
		getTask("completed", 200, taskCompleted, ""),
		getTask("in progress", 200, `{"id":"v","task_id":"v","object":"video","model":"m","status":"in_progress","progress":55,"created_at":1}`, ""),
		getTask("enhancement completed", 200, `{"id":"v","task_id":"v","object":"video","model":"e","status":"completed","progress":100,"created_at":1,
			"metadata":{"client_request_id":"c","video_url":"https://f.example/v.mp4","duration":5.084,"resolution":"4k","fps":29.97,"tool_version":"standard"}}`, ""),
		getTask("failed", 200, `{"id":"v","task_id":"v","object":"video","model":"m","status":"failed","progress":0,"created_at":1,"error":{"code":"video_generation_failed","message":"The video could not be generated."}}`, ""),
		getTask("expired", 200, `{"id":"v","task_id":"v","object":"video","model":"m","status":"expired","progress":10,"created_at":1,"error":{"code":"expired","message":"The task expired."}}`, ""),
		getTask("404", 404, `{"error":{"message":"No such task.","type":"not_found_error","code":"not_found"}}`, ""),
		getTask("401 revoked", 401, `{"error":{"message":"Revoked.","type":"authentication_error","code":"revoked_api_key"}}`, ""),
		{name: "balance", method: "GET", path: "/v1/billing/balance", status: 200,
			body: `{"object":"billing.balance","currency":"USD","balance":{"available":12.345678,"used":0.000001,"unlimited":false},"updated_at":1795306534}`},
		{name: "balance negative", method: "GET", path: "/v1/billing/balance", status: 200,
			body: `{"object":"billing.balance","currency":"EUR","balance":{"available":-3.5,"used":9223372036854.775807,"unlimited":true},"updated_at":0}`},
		{name: "400 with param", method: "POST", path: "/v1/videos", status: 400, body: `{"error":{"message":"m","type":"invalid_request_error","code":"invalid_request_error","param":"metadata.content[2].role"}}`},
		{name: "401 missing key", method: "POST", path: "/v1/videos", status: 401, body: `{"error":{"message":"m","type":"authentication_error","code":"missing_api_key"}}`},
		{name: "401 scheme", method: "GET", path: "/v1/billing/balance", status: 401, body: `{"error":{"message":"m","type":"authentication_error","code":"invalid_auth_scheme"}}`},
		{name: "402", method: "POST", path: "/v1/videos", status: 402, body: `{"error":{"message":"m","type":"insufficient_balance","code":"insufficient_balance"}}`},
		{name: "403", method: "POST", path: "/v1/videos", status: 403, body: `{"error":{"message":"m","type":"permission_error","code":"permission_denied","param":"model"}}`},
		{name: "409", method: "POST", path: "/v1/videos", status: 409, body: `{"error":{"message":"m","type":"idempotency_error","code":"idempotency_conflict"}}`},
		{name: "413", method: "POST", path: "/v1/videos", status: 413, body: `{"error":{"message":"m","type":"invalid_request_error","code":"request_too_large"}}`},
		{name: "415", method: "POST", path: "/v1/videos", status: 415, body: `{"error":{"message":"m","type":"invalid_request_error","code":"unsupported_media_type"}}`},
		{name: "500", method: "POST", path: "/v1/videos", status: 500, body: `{"error":{"message":"m","type":"api_error","code":"internal_error"}}`},
		{name: "429", method: "POST", path: "/v1/videos", status: 429, header: hdr("Content-Type", "application/json", "X-Request-Id", "r", "Retry-After", "5"), body: `{"error":{"message":"m","type":"rate_limit_error","code":"too_many_tasks_in_flight"}}`},
		{name: "healthz", method: "GET", path: "/healthz", status: 200, header: hdr("Content-Type", "application/json", "X-Request-Id", "r"), body: `{"status":"ok"}` + "\n"},
		{name: "readyz", method: "GET", path: "/readyz", status: 200, body: `{"status":"ready"}`},
		{name: "readyz 503", method: "GET", path: "/readyz", status: 503, body: `{"error":{"message":"The database is not reachable.","type":"api_error","code":"service_unavailable"}}`},
		{name: "metrics", method: "GET", path: "/metrics", status: 200,
			header: hdr("Content-Type", "text/plain; version=0.0.4; charset=utf-8; escaping=underscores", "X-Request-Id", "r"), body: "# HELP x y\nx 1\n"},
	})
}

func TestInvalidResponses(t *testing.T) {
	task := func(replace ...string) string { return strings.NewReplacer(replace...).Replace(taskCompleted) }
	runResponses(t, []respCase{
		// statuses
		{name: "200 on create", method: "POST", path: "/v1/videos", status: 200, body: taskQueued, want: "status 200 is not documented"},
		{name: "201 on create", method: "POST", path: "/v1/videos", status: 201, body: taskQueued, want: "not documented"},
		{name: "404 on balance", method: "GET", path: "/v1/billing/balance", status: 404, body: `{"error":{"message":"m","type":"not_found_error","code":"not_found"}}`, want: "not documented"},
		{name: "429 on healthz", method: "GET", path: "/healthz", status: 429, body: `{"error":{"message":"m","type":"rate_limit_error","code":"rate_limit_exceeded"}}`, want: "not documented"},
		{name: "429 without Retry-After", method: "GET", path: "/v1/videos/v", status: 429, body: `{"error":{"message":"m","type":"rate_limit_error","code":"rate_limit_exceeded"}}`, want: "missing required header Retry-After"},
		{name: "429 with an unknown code", method: "GET", path: "/v1/videos/v", status: 429, header: hdr("Content-Type", "application/json", "X-Request-Id", "r", "Retry-After", "1"), body: `{"error":{"message":"m","type":"rate_limit_error","code":"x"}}`, want: "value must be one of"},
		{name: "429 with Retry-After 0", method: "GET", path: "/v1/videos/v", status: 429, header: hdr("Content-Type", "application/json", "X-Request-Id", "r", "Retry-After", "0"), body: `{"error":{"message":"m","type":"rate_limit_error","code":"rate_limit_exceeded"}}`, want: "Retry-After"},
		{name: "unknown path", method: "GET", path: "/v2/videos", status: 404, body: `{}`, want: "no such operation"},
		// content type
		{name: "text/plain task", method: "GET", path: "/v1/videos/v", status: 200, header: hdr("Content-Type", "text/plain", "X-Request-Id", "r"), body: taskCompleted, want: "Content-Type"},
		{name: "no content type", method: "GET", path: "/v1/videos/v", status: 200, header: hdr("X-Request-Id", "r"), body: taskCompleted, want: "no Content-Type"},
		{name: "metrics as JSON", method: "GET", path: "/metrics", status: 200, body: `{}`, want: "Content-Type"},
		// headers
		{name: "no X-Request-Id", method: "GET", path: "/v1/videos/v", status: 200, header: hdr("Content-Type", "application/json"), body: taskCompleted, want: "X-Request-Id"},
		{name: "X-Request-Id with space", method: "GET", path: "/v1/videos/v", status: 200, header: hdr("Content-Type", "application/json", "X-Request-Id", "a b"), body: taskCompleted, want: "X-Request-Id"},
		// bodies
		getTask("unknown field", 200, task(`"usage"`, `"cost":1,"usage"`), "cost"),
		getTask("unknown metadata field", 200, task(`"client_request_id"`, `"mode":"x","client_request_id"`), "mode"),
		getTask("null usage", 200, task(`{"completion_tokens":10,"total_tokens":10}`, `null`), "usage"),
		getTask("null url", 200, task(`"https://f.example/r/a.mov?sig=1"`, `null`), "url"),
		getTask("relative url", 200, task(`"https://f.example/r/a.mov?sig=1"`, `"/r/a.mov"`), "url"),
		getTask("missing progress", 200, task(`"progress":100,`, ``), "progress"),
		getTask("missing task_id", 200, task(`"task_id":"video_a",`, ``), "task_id"),
		getTask("wrong status enum", 200, task(`"completed"`, `"succeeded"`), "status"),
		getTask("wrong object", 200, task(`"object":"video"`, `"object":"task"`), "object"),
		getTask("progress 101", 200, task(`"progress":100`, `"progress":101`), "progress"),
		getTask("completed below 100", 200, task(`"progress":100`, `"progress":99`), "progress"),
		getTask("completed without url", 200, task(`"url":"https://f.example/r/a.mov?sig=1",`, ``), "metadata"),
		getTask("created_at string", 200, task(`1795306534`, `"1795306534"`), "created_at"),
		getTask("usage decimal", 200, task(`"total_tokens":10`, `"total_tokens":10.5`), "total_tokens"),
		getTask("failed without error", 200, `{"id":"v","task_id":"v","object":"video","model":"m","status":"failed","progress":0,"created_at":1}`, "error"),
		getTask("queued with error", 200, `{"id":"v","task_id":"v","object":"video","model":"m","status":"queued","progress":0,"created_at":1,"error":{"code":"x","message":"y"}}`, "not"),
		getTask("error without code", 200, `{"id":"v","task_id":"v","object":"video","model":"m","status":"failed","progress":0,"created_at":1,"error":{"message":"y"}}`, "code"),
		getTask("duplicate member", 200, task(`"model":"m"`, `"model":"m","model":"n"`), "at model: The field model appears more than once"),
		getTask("trailing data", 200, taskCompleted+"{}", "data after the JSON"),
		getTask("empty body", 200, "", "body is empty"),
		{name: "balance 7 decimals", method: "GET", path: "/v1/billing/balance", status: 200,
			body: `{"object":"billing.balance","currency":"USD","balance":{"available":0.0000001,"used":0,"unlimited":false},"updated_at":1}`, want: "multipleOf"},
		{name: "balance string amount", method: "GET", path: "/v1/billing/balance", status: 200,
			body: `{"object":"billing.balance","currency":"USD","balance":{"available":"100","used":0,"unlimited":false},"updated_at":1}`, want: "available"},
		{name: "balance missing unlimited", method: "GET", path: "/v1/billing/balance", status: 200,
			body: `{"object":"billing.balance","currency":"USD","balance":{"available":1,"used":0},"updated_at":1}`, want: "unlimited"},
		{name: "balance lower-case currency", method: "GET", path: "/v1/billing/balance", status: 200,
			body: `{"object":"billing.balance","currency":"usd","balance":{"available":1,"used":0,"unlimited":false},"updated_at":1}`, want: "currency"},
		// error envelopes
		{name: "401 wrong type", method: "POST", path: "/v1/videos", status: 401, body: `{"error":{"message":"m","type":"invalid_request_error","code":"invalid_api_key"}}`, want: "type"},
		{name: "401 unknown code", method: "POST", path: "/v1/videos", status: 401, body: `{"error":{"message":"m","type":"authentication_error","code":"expired_key"}}`, want: "code"},
		{name: "409 wrong code", method: "POST", path: "/v1/videos", status: 409, body: `{"error":{"message":"m","type":"idempotency_error","code":"conflict"}}`, want: "code"},
		{name: "envelope extra field", method: "POST", path: "/v1/videos", status: 400, body: `{"error":{"message":"m","type":"invalid_request_error","code":"c","details":[]}}`, want: "details"},
		{name: "envelope null param", method: "POST", path: "/v1/videos", status: 400, body: `{"error":{"message":"m","type":"invalid_request_error","code":"c","param":null}}`, want: "param"},
		{name: "envelope missing code", method: "POST", path: "/v1/videos", status: 400, body: `{"error":{"message":"m","type":"invalid_request_error"}}`, want: "code"},
		{name: "envelope unknown type", method: "POST", path: "/v1/videos", status: 500, body: `{"error":{"message":"m","type":"server_error","code":"c"}}`, want: "type"},
		{name: "bare error string", method: "POST", path: "/v1/videos", status: 500, body: `{"error":"boom"}`, want: "error"},
		{name: "healthz wrong status", method: "GET", path: "/healthz", status: 200, body: `{"status":"ready"}`, want: "status"},
	})
}

func TestValidateResponseBodyChecksStatusAndBodyNotHeaders(t *testing.T) {
	d := doc(t)
	cases := []struct {
		name   string
		status int
		body   string
		want   string // substring of the error; "" means valid
	}{
		{"completed task without headers", 200, taskCompleted, ""},
		{"unknown member", 200, strings.Replace(taskCompleted, `"usage"`, `"cost":1,"usage"`, 1), "cost"},
		{"undocumented status", 201, taskCompleted, "status 201 is not documented"},
		{"429 without Retry-After", 429, `{"error":{"message":"m","type":"rate_limit_error","code":"rate_limit_exceeded"}}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := d.ValidateResponseBody("GET", "/v1/videos/video_1", c.status, "application/json", []byte(c.body))
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("valid sample rejected: %v", err)
			case c.want != "" && err == nil:
				t.Fatal("invalid sample accepted")
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("error does not mention %q:\n%v", c.want, err)
			}
		})
	}
}
