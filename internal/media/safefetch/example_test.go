package safefetch_test

import (
	"context"
	"errors"
	"fmt"
	"io"

	"mediagen/internal/media/safefetch"
)

// invalidRequest stands for the caller's 400 answer to the tenant.
func invalidRequest(msg string) error { return errors.New(msg) }

// fetchInput fetches a URL a tenant gave, as a use case does; docs/media.md shows this code.
func fetchInput(ctx context.Context, url string) ([]byte, error) {
	c := safefetch.New(safefetch.Options{}) // production policy
	resp, err := c.Get(ctx, url, safefetch.RequestOptions{NoRedirects: true})
	if err != nil {
		return nil, invalidRequest(safefetch.PublicMessage(err))
	}
	defer resp.Body.Close() // Body is capped
	return io.ReadAll(resp.Body)
}

// The production policy refuses an address of the service's own network before connecting,
// and the tenant is told why in a fixed sentence.
func ExampleClient_Get() {
	_, err := fetchInput(context.Background(), "https://127.0.0.1/clip.mp4")
	fmt.Println(err)
	// Output: The URL points to a destination that is not allowed; use a public address on the standard HTTPS port.
}
