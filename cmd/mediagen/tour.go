package main

import (
	"context"
	"io"
)

func runTour(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return usageError{"tour: not built yet"}
}
