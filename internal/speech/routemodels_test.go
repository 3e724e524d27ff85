package speech

import (
	"context"
	"strings"
	"sync"
	"testing"

	"mediagen/internal/catalog"
	"mediagen/internal/keys"
	"mediagen/internal/provider"
)

// recording remembers the model of every call.
type recording struct {
	next   provider.Synthesizer
	mu     *sync.Mutex
	models *[]string
}

func (r recording) Synthesize(ctx context.Context, req provider.SpeechRequest) (provider.Speech, error) {
	r.mu.Lock()
	*r.models = append(*r.models, req.Model)
	r.mu.Unlock()
	return r.next.Synthesize(ctx, req)
}

// An alias over an openai account and an espeak one names each account's model: the
// request that fails over from openai-a (its key refused) runs on local-speech as the
// alias's model, and openai-a was sent its own.
func TestRoutedSpeechSendsEachAccountItsModel(t *testing.T) {
	t.Parallel()
	e, _, _ := routedEnv(t)
	src := strings.Replace(routedCatalog, "        upstreams: [openai-a, local-speech]\n        model: tts-1\n",
		"        upstreams: [{name: openai-a, model: gpt-4o-mini-tts}, local-speech]\n        model: espeak-ng\n", 1)
	cat, err := catalog.Parse("routed.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	tenant, _ := cat.Tenant("demo")
	e.caller = keys.Caller{Key: e.caller.Key, Tenant: tenant, Catalog: cat}
	e.svc.Accounts = cat.Upstream
	var mu sync.Mutex
	sent := map[string]*[]string{}
	for name, eng := range e.svc.Engines {
		sent[name] = &[]string{}
		e.svc.Engines[name] = recording{eng, &mu, sent[name]}
	}
	if _, err := e.svc.Create(context.Background(), e.caller, []byte(`{"model":"routed-speech","input":"Two kinds, two models."}`)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(*sent["openai-a"], ","); got != "gpt-4o-mini-tts" {
		t.Errorf("openai-a was sent %q, want its own model gpt-4o-mini-tts", got)
	}
	if got := strings.Join(*sent["local-speech"], ","); got != "espeak-ng" {
		t.Errorf("local-speech was sent %q, want the alias's model espeak-ng", got)
	}
}
