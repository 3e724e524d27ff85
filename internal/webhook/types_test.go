package webhook

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"mediagen/internal/apierr"
)

// Every type this service emits may be subscribed to, and a test event of each names a
// sample object of its kind; OpenAI's types this service never sends are refused with the
// entry's param.
func TestEveryEmittedTypeSubscribesAndTestsOthersRefused(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(n int, w http.ResponseWriter) bool { return true })
	e := newEnv(t, rc, fast)
	all := `"` + strings.Join(EventTypes, `","`) + `"`
	ep, err := e.svc.Create(context.Background(), "demo", 3, []byte(`{"name":"n","url":"`+rc.url("/")+`","event_types":[`+all+`]}`))
	if err != nil || len(ep.EventTypes) != len(EventTypes) {
		t.Fatalf("create with every type: %+v %v", ep, err)
	}
	samples := map[string]string{SpeechCompleted: "speech_test", SpeechFailed: "speech_test", AssetReady: "asset_test",
		AssetFailed: "asset_test", VerificationCompleted: "vs_test", VerificationFailed: "vs_test", VideoCompleted: "video_test"}
	for typ, object := range samples {
		if _, err := e.svc.Test(context.Background(), "demo", ep.ID, []byte(`{"event_type":"`+typ+`"}`)); err != nil {
			t.Fatalf("test %s: %v", typ, err)
		}
		r := rc.requests()
		last := string(r[len(r)-1].body)
		if !strings.Contains(last, `"type":"`+typ+`"`) || !strings.Contains(last, `"data":{"id":"`+object+`"}`) {
			t.Fatalf("test event of %s: %s", typ, last)
		}
	}
	for _, bad := range []string{"response.completed", "batch.failed", "asset.ready.later"} {
		_, err := e.svc.Create(context.Background(), "demo", 3, []byte(`{"name":"n","url":"`+rc.url("/")+`","event_types":["video.failed","`+bad+`"]}`))
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Param != "event_types[1]" || !strings.Contains(ae.Message, "asset.verification.failed") {
			t.Fatalf("%s: %v", bad, err)
		}
	}
}
