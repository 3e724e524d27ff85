package speech

import (
	"context"
	"errors"
	"testing"

	"mediagen/internal/apierr"
	"mediagen/internal/catalog"
	"mediagen/internal/keys"
	"mediagen/internal/provider"
	"mediagen/internal/store"
)

// Quote is what Create reserves, and writes nothing.
func TestSpeechQuoteIsWhatCreateReservesAndWritesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := []byte(`{"model":"demo-speech","input":"Hello from the quote.","metadata":{"client_request_id":"q-1"}}`)
	before := e.balance()
	q, err := e.svc.Quote(t.Context(), e.caller, body)
	if err != nil {
		t.Fatal(err)
	}
	if after := e.balance(); after != before || e.calls.Load() != 0 {
		t.Fatalf("Quote wrote or generated: balance %+v → %+v, %d engine calls", before, after, e.calls.Load())
	}
	if _, err := e.db.SpeechByRequestID(t.Context(), e.caller.Key.ID, "q-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Quote recorded the request: %v", err)
	}
	res, err := e.svc.Create(t.Context(), e.caller, body)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := e.db.Speech(t.Context(), res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Reserved != q.Amount || q.Amount <= 0 {
		t.Errorf("Quote said %s; Create reserved %s", q.Amount, rec.Reserved)
	}
}

type noSynth struct{}

func (noSynth) Synthesize(context.Context, provider.SpeechRequest) (provider.Speech, error) {
	return provider.Speech{}, errors.New("not called")
}

// Quote refuses like Create: the contract's param, a non-speech alias, no engine.
func TestSpeechQuoteRefusesLikeCreate(t *testing.T) {
	t.Parallel()
	tenant, _ := catalog.Demo().Tenant("demo")
	c := keys.Caller{Key: store.Key{ID: "key_1", TenantID: "demo"}, Tenant: tenant}
	with := &Service{Engines: map[string]provider.Synthesizer{"sandbox": noSynth{}}}
	tests := []struct {
		name  string
		svc   *Service
		body  string
		kind  apierr.Kind
		param string
	}{
		{"no text", with, `{"model":"demo-speech","input":"  "}`, apierr.KindInvalid, "input"},
		{"a video alias", with, `{"model":"demo-video-fast","input":"hi"}`, apierr.KindInvalid, "model"},
		{"no engine for the alias", &Service{}, `{"model":"demo-speech","input":"hi"}`, apierr.KindUnavailable, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.svc.Quote(t.Context(), c, []byte(tt.body))
			var ae *apierr.Error
			if !errors.As(err, &ae) || ae.Kind != tt.kind || ae.Param != tt.param {
				t.Errorf("Quote: %v; want kind %v on %q", err, tt.kind, tt.param)
			}
		})
	}
	if q, err := with.Quote(t.Context(), c, []byte(`{"model":"demo-speech","input":"hi"}`)); err != nil || q.Amount <= 0 || q.Characters != 2 {
		t.Errorf("Quote: %+v, %v", q, err)
	}
}
