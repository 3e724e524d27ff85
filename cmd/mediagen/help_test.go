package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// everyCommand is every command and subcommand of the binary, as the words that name it.
func everyCommand() [][]string {
	cmds := [][]string{{}, {"serve"}, {"migrate"}, {"video"}, {"video", "create"}, {"video", "get"}, {"video", "wait"},
		{"speech"}, {"balance"}, {"assets"}, {"assets", "list"}, {"tour"}, {"admin"}}
	for _, c := range adminCommands() {
		cmds = append(cmds, append([]string{"admin"}, strings.Fields(c.path)...))
	}
	return cmds
}

func TestHelpOfEveryCommandPrintsUsageOnStdoutAndExitsZero(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	vars := map[string]string{"MEDIAGEN_DATA_DIR": dir, "MEDIAGEN_API_KEY": "mg_secretsecretsecretsecretsecretsecret00"}
	for _, cmd := range everyCommand() {
		for _, h := range []string{"-h", "--help", "help"} {
			args := append(append([]string{}, cmd...), h)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				err := run(context.Background(), args, env(vars), &stdout, &stderr)
				if code := exitCode(err); err != nil && code != 0 {
					t.Fatalf("exit %d (%v); stderr:\n%s", code, err, stderr.String())
				}
				if stdout.Len() == 0 {
					t.Errorf("no usage on stdout; stderr:\n%s", stderr.String())
				}
				if stderr.Len() != 0 {
					t.Errorf("help wrote on stderr:\n%s", stderr.String())
				}
			})
		}
	}
	// Help reads nothing: no command opened (and so created) the database.
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Errorf("help created %v", m)
	}
}

func TestMistakenCommandPrintsUsageOnStderrAndExitsTwo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "no command given"},
		{"unknown command", []string{"bogus"}, `unknown command "bogus"`},
		{"video without a command", []string{"video"}, "video: give a command"},
		{"unknown video command", []string{"video", "bogus"}, `video: unknown command "bogus"`},
		{"admin without a command", []string{"admin"}, "admin: no command given"},
		{"unknown admin command", []string{"admin", "key", "bogus"}, `admin: unknown command "key bogus"`},
		{"unknown flag", []string{"balance", "--bogus"}, "flag provided but not defined"},
		{"unknown admin flag", []string{"admin", "key", "list", "--bogus"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, env(map[string]string{"MEDIAGEN_DATA_DIR": t.TempDir()}), &stdout, &stderr)
			if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v (exit %d), want exit 2 with %q", err, exitCode(err), tt.want)
			}
			if stderr.Len() == 0 {
				t.Error("no usage on stderr")
			}
			if stdout.Len() != 0 {
				t.Errorf("a mistake wrote on stdout:\n%s", stdout.String())
			}
		})
	}
}

func TestAdminUsageListsEveryAdminCommand(t *testing.T) {
	t.Parallel()
	for _, c := range adminCommands() {
		if !strings.Contains(adminUsage, "  mediagen admin "+c.path) {
			t.Errorf("admin usage omits %q", c.path)
		}
		if got := adminCommandUsage(c.path); !strings.Contains(got, "mediagen admin "+c.path) || strings.Count(got, "mediagen admin") != 1 {
			t.Errorf("usage of %q = %q, want its own line only", c.path, got)
		}
	}
}
