// Package otlptest is an in-process OTLP/HTTP trace receiver for tests and benchmarks: a
// plain net/http handler that decodes the protobuf ExportTraceServiceRequest an
// otlptracehttp exporter posts to /v1/traces and keeps the spans.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened: its resource's and its own attributes as strings.
type Span struct {
	Name                   string
	TraceID, SpanID        string // hex
	ParentID               string // hex; "" for a root
	Kind                   string
	Attrs, Resource        map[string]string
	StatusError            bool
	StartUnixNano, EndNano uint64
}

// Receiver collects spans. Discard makes it a sink for benchmarks: it reads each export and
// counts its bytes without decoding it, so that the sink's own work stays out of what a
// benchmark on the same machine measures.
type Receiver struct {
	Discard bool

	mu             sync.Mutex
	spans          []Span
	n              int
	exports, bytes int64
}

// Start serves a Receiver on 127.0.0.1 for the test's life and returns it with its base URL
// (the value of OTEL_EXPORTER_OTLP_ENDPOINT).
func Start(t testing.TB) (*Receiver, string) {
	t.Helper()
	r := &Receiver{}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv.URL
}

// ServeHTTP takes one export.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, "bad gzip", http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = zr
	}
	raw, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.exports++
	r.bytes += int64(len(raw))
	r.mu.Unlock()
	if !r.Discard {
		var msg coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &msg); err != nil {
			http.Error(w, "decode", http.StatusBadRequest)
			return
		}
		r.add(&msg)
	}
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *Receiver) add(msg *coltracepb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range msg.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.n++
				sp := Span{Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					Kind: s.GetKind().String(), Attrs: attrs(s.GetAttributes()), Resource: res,
					StatusError: s.GetStatus().GetCode() == 2, StartUnixNano: s.GetStartTimeUnixNano(), EndNano: s.GetEndTimeUnixNano()}
				if p := s.GetParentSpanId(); len(p) > 0 {
					sp.ParentID = hex.EncodeToString(p)
				}
				r.spans = append(r.spans, sp)
			}
		}
	}
}

// Spans returns a copy of the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Count is the number of spans received so far (0 with Discard: they are not decoded).
func (r *Receiver) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Exports is the number of export requests received and their bytes in all.
func (r *Receiver) Exports() (n, bytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exports, r.bytes
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = value(kv.GetValue())
	}
	return m
}

func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return itoa(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	case *commonpb.AnyValue_DoubleValue:
		return ftoa(x.DoubleValue)
	}
	return v.String()
}
