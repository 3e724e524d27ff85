package rest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"mediagen/internal/provider"
)

var errRefused = errors.New("refused by the adapter")

// Every failure is typed for the pipeline, with Retry-After kept and the key never shown.
func TestClassifyTypesEveryFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		header string
		want   error
		after  time.Duration
	}{
		{"401 is the account's", 401, "", provider.ErrAccount, 0},
		{"403 is the account's", 403, "", provider.ErrAccount, 0},
		{"400 is the adapter's refusal", 400, "", errRefused, 0},
		{"404 is the adapter's refusal", 404, "", errRefused, 0},
		{"422 is the adapter's refusal", 422, "", errRefused, 0},
		{"429 passes with its Retry-After", 429, "7", provider.ErrTransient, 7 * time.Second},
		{"a Retry-After beyond ten minutes is bounded", 503, "86400", provider.ErrTransient, 10 * time.Minute},
		{"a Retry-After date is not read", 503, "Wed, 21 Oct 2026 07:28:00 GMT", provider.ErrTransient, 0},
		{"500 passes", 500, "", provider.ErrTransient, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.header != "" {
					w.Header().Set("Retry-After", tt.header)
				}
				w.WriteHeader(tt.status)
			}))
			defer srv.Close()
			c, err := New(Config{Name: "test", BaseURL: srv.URL, APIKey: "sk-rest-secret"})
			if err != nil {
				t.Fatal(err)
			}
			var out any
			err = Classify(c.JSON(context.Background(), Request{Method: "GET", Path: "/x"}, &out), func(*StatusError) error { return errRefused })
			if !errors.Is(err, tt.want) || provider.RetryDelay(err) != tt.after {
				t.Errorf("error %v (retry after %v), want %v after %v", err, provider.RetryDelay(err), tt.want, tt.after)
			}
			if strings.Contains(err.Error(), "sk-rest-secret") {
				t.Errorf("the key is in %v", err)
			}
		})
	}
}

// A transport failure is transient and its text never carries the key.
func TestTransportFailureIsTransientWithoutTheKey(t *testing.T) {
	t.Parallel()
	c, err := New(Config{Name: "test", BaseURL: "http://127.0.0.1:1/sk-rest-secret", APIKey: "sk-rest-secret"})
	if err != nil {
		t.Fatal(err)
	}
	var out any
	err = c.JSON(context.Background(), Request{Method: "GET", Path: "/x"}, &out)
	if !errors.Is(err, provider.ErrTransient) || strings.Contains(err.Error(), "sk-rest-secret") {
		t.Errorf("transport failure: %v", err)
	}
}

// An account whose API takes its key in a header of its own (Gemini's x-goog-api-key) sends
// it there alone: no Authorization header carries the key beside it.
func TestKeyHeaderCarriesTheKeyAlone(t *testing.T) {
	t.Parallel()
	var auth, key string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, key = r.Header.Get("Authorization"), r.Header.Get("x-goog-api-key")
	}))
	t.Cleanup(srv.Close)
	c, err := New(Config{Name: "t", BaseURL: srv.URL, APIKey: "k1", KeyHeader: "x-goog-api-key"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Do(t.Context(), Request{Method: http.MethodGet, Path: "/x"})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if auth != "" || key != "k1" {
		t.Fatalf("Authorization %q, x-goog-api-key %q", auth, key)
	}
}
