package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/mediagen-dev/mediagen/client"
)

// The client commands (video, speech, balance, assets, tour) live in this binary so that one
// download gives an operator the service and a tenant developer a client; they use only the
// public client package, exactly as a tenant's own program would.

// cliEnv is what every client command shares: where the service is, the key, how to print.
type cliEnv struct {
	baseURL, apiKey string
	envKey          string // MEDIAGEN_API_KEY, used when --api-key is not given
	poll            time.Duration
	json            bool
	stdout, stderr  io.Writer
	terminal        bool // stderr is a terminal: draw bars
}

// interrupted is returned when Ctrl-C stopped a wait; the task keeps running (exit status 130).
type interrupted struct{ msg string }

func (e interrupted) Error() string { return e.msg }

// registerCLI adds the shared flags to fs.
func (e *cliEnv) register(fs *flag.FlagSet, getenv func(string) string) {
	base := getenv("MEDIAGEN_BASE_URL")
	if base == "" {
		base = "http://127.0.0.1:8080"
	}
	fs.StringVar(&e.baseURL, "base-url", base, "service address (env MEDIAGEN_BASE_URL)")
	// The variable is read after parsing, never made the flag's default: -h prints defaults,
	// and a secret must not land in a terminal's scrollback or a CI log.
	fs.StringVar(&e.apiKey, "api-key", "", "API key (default: env MEDIAGEN_API_KEY)")
	e.envKey = getenv("MEDIAGEN_API_KEY")
	poll := 30 * time.Second
	if v := getenv("MEDIAGEN_POLL_INTERVAL"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			poll = d
		}
	}
	fs.DurationVar(&e.poll, "poll", poll, "time between two reads of a task; the contract asks for 30s or more (env MEDIAGEN_POLL_INTERVAL; shorter only against the sandbox)")
	fs.BoolVar(&e.json, "json", false, "print JSON results on stdout and no progress (for scripts)")
}

func (e *cliEnv) client() (*client.Client, error) {
	if e.apiKey == "" {
		e.apiKey = e.envKey
	}
	if e.apiKey == "" {
		return nil, usageError{"no API key: set MEDIAGEN_API_KEY or pass --api-key (make run prints the demo key)"}
	}
	c, err := client.New(e.baseURL, e.apiKey, client.Options{PollInterval: e.poll, UserAgent: "mediagen-cli/" + version})
	if err != nil {
		return nil, usageError{err.Error()}
	}
	return c, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// parse parses a command's flags, allowing flags after positional arguments
// (`speech "hello" --out a.mp3`), and returns the positional ones.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func (e *cliEnv) printJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // URLs keep their & for people and scripts alike
	return enc.Encode(v)
}

const clientUsage = `Client commands (talk to a running service; MEDIAGEN_BASE_URL, MEDIAGEN_API_KEY):
  mediagen video create --model ALIAS [--prompt TEXT] [flags] [--wait] [--out FILE]
  mediagen video get ID                 read a task once
  mediagen video wait ID [--out FILE]   wait for a task (resumes after Ctrl-C or a restart)
  mediagen speech "text" [--model ALIAS] [--out FILE]
  mediagen balance
  mediagen assets <command>             the asset library ('mediagen assets help' for the list)
  mediagen tour                         run every route once against the sandbox and report
Each takes --base-url, --api-key, --poll and --json; -h (or help) shows the rest.`

func runBalance(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := &cliEnv{stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("balance", flag.ContinueOnError)
	e.register(fs, getenv)
	if _, err := parseFlags(fs, args, stdout, stderr, parse); err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	b, err := c.Balance(ctx)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(b)
	}
	if b.Balance.Unlimited {
		fmt.Fprintf(stdout, "unlimited (used %s %s)\n", fmtAmount(b.Balance.Used), b.Currency)
		return nil
	}
	fmt.Fprintf(stdout, "available %s %s, used %s %s\n", fmtAmount(b.Balance.Available), b.Currency, fmtAmount(b.Balance.Used), b.Currency)
	return nil
}

// fmtAmount prints an amount with up to 6 decimals and no trailing zeros.
func fmtAmount(v float64) string {
	s := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.6f", v), "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}

func runSpeech(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := &cliEnv{stdout: stdout, stderr: stderr, terminal: isTerminal(stderr)}
	fs := flag.NewFlagSet("speech", flag.ContinueOnError)
	e.register(fs, getenv)
	model := getenv("MEDIAGEN_SPEECH_MODEL")
	if model == "" {
		model = "demo-speech"
	}
	req := &client.SpeechRequest{}
	fs.StringVar(&req.Model, "model", model, "speech alias (env MEDIAGEN_SPEECH_MODEL)")
	fs.StringVar(&req.Instructions, "instructions", "", "delivery guidance (pace, tone)")
	fs.StringVar(&req.Metadata.ClientRequestID, "request-id", "", "client_request_id (default: generated); reuse it to get the same audio again")
	out := fs.String("out", "", "save the audio to this file")
	var refs multiFlag
	fs.Var(&refs, "ref-audio", "https audio reference (up to 3)")
	image := fs.String("ref-image", "", "https image reference (one; not with --ref-audio)")
	pos, err := parseFlags(fs, args, stdout, stderr, parse)
	if err != nil {
		return err
	}
	req.Input = strings.Join(pos, " ")
	for _, r := range refs {
		req.Metadata.References = append(req.Metadata.References, client.SpeechReference{Type: "audio_url", URL: r})
	}
	if *image != "" {
		req.Metadata.References = append(req.Metadata.References, client.SpeechReference{Type: "image_url", URL: *image})
	}
	if req.Input == "" && req.Instructions == "" {
		return usageError{`speech: give the text: mediagen speech "Hello there" --out hello.mp3`}
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	s, err := c.CreateSpeech(ctx, req)
	if err != nil {
		return err
	}
	if *out != "" {
		if _, err := e.download(ctx, c, s.URL, *out, ""); err != nil {
			return err
		}
	}
	if e.json {
		return e.printJSON(s)
	}
	fmt.Fprintf(stdout, "%s: %.3f s of audio (request id %s)\n", s.ID, s.Duration, req.Metadata.ClientRequestID)
	if *out != "" {
		fmt.Fprintf(stdout, "saved %s\n", *out)
	} else {
		fmt.Fprintf(stdout, "temporary link: %s\n", s.URL)
	}
	return nil
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// download saves a result link to out with a progress display. resume is the command that
// continues an interrupted download, when there is one.
func (e *cliEnv) download(ctx context.Context, c *client.Client, url, out, resume string) (int64, error) {
	r := e.reporter()
	defer r.close()
	n, err := c.DownloadFile(ctx, url, out, r.download)
	r.downloadDone(out, n, err)
	if err != nil && ctx.Err() != nil {
		msg := "download interrupted; the part already saved is kept in " + out + ".part"
		if resume != "" {
			msg += "\nresume with: " + resume
		}
		return n, interrupted{msg}
	}
	if err != nil {
		return n, fmt.Errorf("download to %s: %w", out, err)
	}
	return n, nil
}
