// Command mediagen is the whole service in one binary: serve, migrate, admin and version, and
// the client commands (video, speech, balance, assets, tour) built on the public client package.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/mediagen-dev/mediagen/client"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		var r reported
		if !errors.Is(err, flag.ErrHelp) && !errors.As(err, &r) {
			// Errors of the client package already name the program.
			msg := err.Error()
			if !strings.HasPrefix(msg, "mediagen: ") {
				msg = "mediagen: " + msg
			}
			fmt.Fprintln(os.Stderr, msg)
		}
		os.Exit(exitCode(err))
	}
}

// reported is an error serve already logged (in the log format chosen, JSON included), so
// main does not print it again.
type reported struct{ err error }

func (e reported) Error() string { return e.err.Error() }
func (e reported) Unwrap() error { return e.err }

// usageError marks errors in how the command was called (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func exitCode(err error) int {
	var in interrupted
	if errors.As(err, &in) {
		return 130
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0 // asked for and printed on stdout
	}
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

const usage = `mediagen — multi-tenant media generation service

Usage:
  mediagen serve   [flags]            run the HTTP API (migrates the database first)
  mediagen migrate [flags]            apply database migrations and exit
  mediagen admin   <command> [flags]  operator commands ('mediagen admin help' for the list)
  mediagen version                    print the version
  mediagen video|speech|balance|assets|tour  the client ('mediagen help' for the list)

Run 'mediagen serve -h' for the configuration flags and their environment variables.`

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return usageError{"no command given"}
	}
	switch args[0] {
	case "serve":
		m := NewMain(getenv, stdout, stderr)
		if err := m.ParseFlags(args[1:]); err != nil {
			return err
		}
		if err := m.Run(ctx); err != nil {
			_ = m.Close()
			if m.log == nil || m.Config.LogFormat != "json" {
				return err // main prints it: a person reads text logs
			}
			m.log.Error("mediagen cannot serve", "err", err)
			return reported{err}
		}
		<-ctx.Done()
		m.log.Info("mediagen shutting down")
		if err := m.Close(); err != nil {
			if m.Config.LogFormat != "json" {
				return err
			}
			m.log.Error("shutdown incomplete", "err", err)
			return reported{err}
		}
		return nil
	case "migrate":
		return runMigrate(ctx, args[1:], getenv, stdout, stderr)
	case "admin":
		return runAdmin(ctx, args[1:], getenv, stdout, stderr)
	case "video":
		return startHint(runVideo(ctx, args[1:], getenv, stdout, stderr))
	case "speech":
		return startHint(runSpeech(ctx, args[1:], getenv, stdout, stderr))
	case "balance":
		return startHint(runBalance(ctx, args[1:], getenv, stdout, stderr))
	case "assets":
		return startHint(runAssets(ctx, args[1:], getenv, stdout, stderr))
	case "tour":
		return startHint(runTour(ctx, args[1:], getenv, stdout, stderr))
	case "version":
		fmt.Fprintln(stdout, "mediagen", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		fmt.Fprintln(stdout)
		fmt.Fprintln(stdout, clientUsage)
		return nil
	default:
		fmt.Fprintln(stderr, usage)
		return usageError{fmt.Sprintf("unknown command %q", args[0])}
	}
}

// startHint adds to a client command's refused connection how to get a service there.
func startHint(err error) error {
	var u *client.UnreachableError
	if errors.As(err, &u) {
		return fmt.Errorf("%w (start it with mediagen serve, or give its address with --base-url or MEDIAGEN_BASE_URL)", err)
	}
	return err
}

func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var c Config
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	c.register(fs, getenv, false)
	pos, err := parseFlags(fs, args, stdout, stderr, strictParse)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Sprintf("migrate: unexpected argument %q", pos[0])}
	}
	if err := c.validate(); err != nil {
		return usageError{err.Error()}
	}
	db, err := openStore(ctx, c.DB)
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintf(stdout, "migrations applied; %s database is up to date\n", db.Dialect())
	return nil
}
