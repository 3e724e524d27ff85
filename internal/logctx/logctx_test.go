package logctx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"mediagen/internal/logctx"
)

func TestHandlerWritesTheRequestIDOnceWhereTheContextHasOne(t *testing.T) {
	t.Parallel()
	ctx := logctx.WithRequestID(context.Background(), "req-1")
	tests := []struct {
		name string
		log  func(l *slog.Logger)
		want string // the request_id of the line, "" for none
	}{
		{"context with an id", func(l *slog.Logger) { l.InfoContext(ctx, "m") }, "req-1"},
		{"context without one", func(l *slog.Logger) { l.InfoContext(context.Background(), "m") }, ""},
		{"no context", func(l *slog.Logger) { l.Info("m") }, ""},
		{"explicit attribute kept", func(l *slog.Logger) { l.InfoContext(ctx, "m", "request_id", "req-explicit") }, "req-explicit"},
		{"logger made by Logger", func(l *slog.Logger) { logctx.Logger(ctx, l).InfoContext(ctx, "m") }, "req-1"},
		{"Logger without an id", func(l *slog.Logger) { logctx.Logger(context.Background(), l).Info("m") }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.log(slog.New(logctx.NewHandler(slog.NewJSONHandler(&buf, nil))))
			line := strings.TrimSpace(buf.String())
			if n := strings.Count(line, `"request_id"`); n > 1 {
				t.Fatalf("request_id %d times: %s", n, line)
			}
			var got struct {
				RequestID string `json:"request_id"`
			}
			if err := json.Unmarshal([]byte(line), &got); err != nil || got.RequestID != tt.want {
				t.Errorf("line %s, want request_id %q", line, tt.want)
			}
		})
	}
}
