//go:build genclient

// Command roundtrip drives a running mediagen with the client oapi-codegen generates from
// docs/openapi.yaml (into api.gen.go beside this file, in a temporary copy of this module; the
// build tag keeps this file out of builds without it). It reads the balance, creates a video
// task with a body that fits two routes of the request's anyOf, polls it to completed, and
// sends a body the server refuses, then prints what it saw as one JSON object for the test.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"
)

type report struct {
	Available   float64 `json:"available"`
	Created     string  `json:"created"`
	Status      string  `json:"status"`
	Polls       int     `json:"polls"`
	ResultURL   string  `json:"result_url"`
	ErrorStatus int     `json:"error_status"`
	ErrorType   string  `json:"error_type"`
	ErrorCode   string  `json:"error_code"`
	ErrorParam  string  `json:"error_param"`
	ErrorMsg    string  `json:"error_message"`
}

func main() {
	base := flag.String("base", "", "the service's base URL")
	key := flag.String("key", "", "an API key")
	poll := flag.Duration("poll", 200*time.Millisecond, "time between polls")
	flag.Parse()
	if err := run(context.Background(), *base, *key, *poll); err != nil {
		fmt.Fprintln(os.Stderr, "roundtrip:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, base, key string, poll time.Duration) error {
	auth := WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+key)
		return nil
	})
	c, err := NewClientWithResponses(base, auth)
	if err != nil {
		return err
	}
	var rep report

	bal, err := c.GetBalanceWithResponse(ctx, nil)
	if err != nil {
		return fmt.Errorf("balance: %w", err)
	}
	if bal.JSON200 == nil {
		return fmt.Errorf("balance: status %d: %s", bal.StatusCode(), bal.Body)
	}
	rep.Available = bal.JSON200.Balance.Available

	// {"model":"demo-video-standard","prompt":"p","metadata":{"resolution":"1080p","duration":4}}
	// fits NativeRequest and ProductionRequest: valid under the anyOf, refused by a oneOf.
	prompt, res, dur := "p", NativeMetadataResolutionN1080p, 4
	// The anyOf body is a union (CreateVideoJSONBody with From/As methods). oapi-codegen's
	// CreateVideoJSONRequestBody is a new type of it that loses its MarshalJSON (it would send
	// {}), so the union is marshalled here and sent with the WithBody variant.
	var body CreateVideoJSONBody
	if err := body.FromNativeRequest(NativeRequest{Model: "demo-video-standard", Prompt: &prompt,
		Metadata: &NativeMetadata{Resolution: &res, Duration: &dur}}); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	created, err := create(ctx, c, body)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if created.JSON202 == nil {
		return fmt.Errorf("create: status %d: %s", created.StatusCode(), created.Body)
	}
	rep.Created = created.JSON202.Id

	for rep.Polls = 1; rep.Polls <= 600; rep.Polls++ {
		got, err := c.GetVideoWithResponse(ctx, created.JSON202.Id, nil)
		if err != nil {
			return fmt.Errorf("poll: %w", err)
		}
		if got.JSON200 == nil {
			return fmt.Errorf("poll: status %d: %s", got.StatusCode(), got.Body)
		}
		rep.Status = string(got.JSON200.Status)
		if got.JSON200.Status == VideoStatusCompleted || got.JSON200.Status == VideoStatusFailed {
			if m := got.JSON200.Metadata; m != nil && m.Url != nil {
				rep.ResultURL = *m.Url
			}
			break
		}
		time.Sleep(poll)
	}

	bad, dur3 := NativeRequest{Model: "demo-video-standard", Prompt: &prompt}, 3
	bad.Metadata = &NativeMetadata{Duration: &dur3}
	if err := body.FromNativeRequest(bad); err != nil {
		return fmt.Errorf("bad create: %w", err)
	}
	refused, err := create(ctx, c, body)
	if err != nil {
		return fmt.Errorf("bad create: %w", err)
	}
	rep.ErrorStatus = refused.StatusCode()
	if e := refused.JSON400; e != nil {
		rep.ErrorType, rep.ErrorCode, rep.ErrorMsg = string(e.Error.Type), e.Error.Code, e.Error.Message
		if e.Error.Param != nil {
			rep.ErrorParam = *e.Error.Param
		}
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}

func create(ctx context.Context, c *ClientWithResponses, body CreateVideoJSONBody) (*CreateVideoResponse, error) {
	b, err := body.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return c.CreateVideoWithBodyWithResponse(ctx, nil, "application/json", bytes.NewReader(b))
}
