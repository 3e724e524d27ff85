package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/mediagen-dev/mediagen/client"
	"mediagen/internal/media/samples"
)

// The tour runs every route of the contract once against a running sandbox service — the
// asset library, native generation (text, and a first frame with the last frame returned),
// standalone enhancement, production with a reference video from the library, speech with an
// audio reference, and a task that fails on purpose — and ends with the files it made and what
// it cost. Its inputs are the sandbox samples (internal/media/samples), which the service
// fetches from itself; nothing else has to be served or trusted.

type tourStep struct {
	route, alias, what string
	req                client.VideoRequest
	task               *client.Video
	file, frame        string
	size               int64
	err                error
}

// tourSummary is the --json output.
type tourSummary struct {
	Steps []tourLine `json:"steps"`
	Files []string   `json:"files"`
	// Balance before and after, and what the tour spent, in the key's currency.
	Currency string  `json:"currency"`
	Before   float64 `json:"available_before"`
	After    float64 `json:"available_after"`
	Spent    float64 `json:"spent"`
}

type tourLine struct {
	Route  string `json:"route"`
	Alias  string `json:"model"`
	ID     string `json:"id"`
	Status string `json:"status"`
	Code   string `json:"error_code,omitempty"`
	File   string `json:"file,omitempty"`
	Bytes  int64  `json:"bytes,omitempty"`
}

func runTour(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := &cliEnv{stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("tour", flag.ContinueOnError)
	e.register(fs, getenv)
	outDir := fs.String("out-dir", "mediagen-tour", "where to save the files made")
	if _, err := parseFlags(fs, args, stdout, stderr, parse); err != nil {
		return err
	}
	pollSet := getenv("MEDIAGEN_POLL_INTERVAL") != ""
	fs.Visit(func(f *flag.Flag) { pollSet = pollSet || f.Name == "poll" })
	if !pollSet {
		e.poll = time.Second // the tour is for the sandbox, whose tasks take seconds
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return err
	}
	say := func(format string, a ...any) {
		if !e.json {
			fmt.Fprintf(stdout, format+"\n", a...)
		}
	}
	before, err := c.Balance(ctx)
	if err != nil {
		return fmt.Errorf("tour: is the service running at %s with this key? %w", c.BaseURL(), err)
	}
	say("mediagen tour against %s — every route once, inputs from the sandbox samples (https://%s/…)", c.BaseURL(), samples.Host)
	say("balance: %s %s available", fmtAmount(before.Balance.Available), before.Currency)

	// The asset library: a group, a video registered by URL, processed until Active.
	lib := c.Virtual()
	g, err := lib.CreateGroup(ctx, "mediagen tour", "made by mediagen tour")
	if err != nil {
		return fmt.Errorf("tour: asset-groups/create: %w", err)
	}
	say("assets     group %s created; registering %s", g.ID, samples.URL("clip.mp4"))
	a, err := lib.CreateAsset(ctx, client.NewAsset{GroupID: g.ID, URL: samples.URL("clip.mp4"), AssetType: client.AssetVideo, Name: "sample clip"})
	if err != nil {
		return fmt.Errorf("tour: assets/create: %w", err)
	}
	if a, err = lib.WaitAsset(ctx, a.ID, 500*time.Millisecond); err != nil {
		return fmt.Errorf("tour: the sample asset did not become Active: %w", err)
	}
	say("assets     %s is %s: %s, %.3f s, %dx%d — usable as %s", a.ID, a.Status, a.AssetType, a.Duration, a.Width, a.Height, a.URI())

	steps := []*tourStep{
		{route: "native", alias: "demo-video-fast", what: "text to video, 4 s 480p with audio", file: "native.mp4",
			req: &client.NativeRequest{Model: "demo-video-fast", Prompt: "a paper boat on a pond at dawn",
				Metadata: client.NativeMetadata{Duration: client.Int(4), Resolution: "480p", Ratio: "16:9", GenerateAudio: client.Bool(true)}}},
		{route: "native", alias: "demo-video-2.5", what: "first frame from a sample image, last frame returned", file: "native-first-frame.mp4", frame: "native-last-frame.jpg",
			req: &client.NativeRequest{Model: "demo-video-2.5", Prompt: "the scene comes to life",
				Metadata: client.NativeMetadata{Duration: client.Int(4), Resolution: "480p", ReturnLastFrame: client.Bool(true),
					Content: []client.ContentItem{client.FirstFrame(samples.URL("still.jpg"))}}}},
		{route: "enhancement", alias: "demo-enhance-lite", what: "the sample clip to a 480-pixel short side at 30 fps", file: "enhanced.mp4",
			req: &client.EnhancementRequest{Model: "demo-enhance-lite", Metadata: client.EnhancementMetadata{
				VideoURL: samples.URL("clip.mp4"), Duration: 5, ResolutionLimit: client.Int(480), FPS: client.Int(30)}}},
		{route: "production", alias: "demo-production-lite", what: "extend the library asset, 1080p, last frame returned", file: "production.mp4", frame: "production-last-frame.jpg",
			req: &client.ProductionRequest{Model: "demo-production-lite", Prompt: "extend @Video1 with a slow pan",
				Metadata: client.ProductionMetadata{Resolution: "1080p", Duration: client.Int(4), OmniReferenceTaskType: "extend",
					ReturnLastFrame: client.Bool(true), Content: []client.ContentItem{client.ReferenceVideo(a.URI())}}}},
		{route: "native", alias: "demo-video-fast", what: "fails on purpose ([sandbox:fail]) to show a failed task",
			req: &client.NativeRequest{Model: "demo-video-fast", Prompt: "this one fails [sandbox:fail]",
				Metadata: client.NativeMetadata{Duration: client.Int(4), Resolution: "480p"}}},
	}
	for _, st := range steps {
		if st.task, st.err = c.CreateVideo(ctx, st.req); st.err != nil {
			return fmt.Errorf("tour: %s (%s): %w", st.route, st.alias, st.err)
		}
		say("%-10s %s %s: %s", st.route, st.task.ID, st.alias, st.what)
	}

	// Speech is synchronous: one call, a link to the audio.
	sp, err := c.CreateSpeech(ctx, &client.SpeechRequest{Model: "demo-speech", Input: "Welcome to the mediagen tour.",
		Instructions: "Friendly and clear.", Metadata: client.SpeechMetadata{References: []client.SpeechReference{{Type: "audio_url", URL: samples.URL("voice.mp3")}}}})
	if err != nil {
		return fmt.Errorf("tour: speech: %w", err)
	}
	speechFile := filepath.Join(*outDir, "speech.mp3")
	speechSize, err := c.DownloadFile(ctx, sp.URL, speechFile, nil)
	if err != nil {
		return fmt.Errorf("tour: speech download: %w", err)
	}
	say("%-10s %s demo-speech: %.3f s of audio → %s", "speech", sp.ID, sp.Duration, speechFile)

	for _, st := range steps {
		v, err := c.Wait(ctx, st.task.ID, nil)
		var te *client.TaskError
		switch {
		case errors.As(err, &te):
			st.task = v
			say("%-10s %s %s: %s", st.route, v.ID, v.Status, te.Code)
			continue
		case err != nil:
			if ctx.Err() != nil {
				return interrupted{fmt.Sprintf("tour stopped; task %s keeps running — mediagen video wait %s", st.task.ID, st.task.ID)}
			}
			return fmt.Errorf("tour: wait %s: %w", st.task.ID, err)
		}
		st.task = v
		path := filepath.Join(*outDir, st.file)
		if st.size, err = c.DownloadFile(ctx, v.ResultURL(), path, nil); err != nil {
			return fmt.Errorf("tour: download %s: %w", v.ID, err)
		}
		st.file = path
		if st.frame != "" && v.Metadata.LastFrameURL != "" {
			st.frame = filepath.Join(*outDir, st.frame)
			if _, err := c.DownloadFile(ctx, v.Metadata.LastFrameURL, st.frame, nil); err != nil {
				return fmt.Errorf("tour: download %s last frame: %w", v.ID, err)
			}
		} else {
			st.frame = ""
		}
		say("%-10s %s %s → %s (%s)", st.route, v.ID, v.Status, path, sizeString(st.size))
	}
	after, err := c.Balance(ctx)
	if err != nil {
		return err
	}
	sum := tourSummary{Currency: after.Currency, Before: before.Balance.Available, After: after.Balance.Available,
		Spent: roundMicro(before.Balance.Available - after.Balance.Available)}
	sum.Steps = append(sum.Steps, tourLine{Route: "assets", Alias: "-", ID: a.ID, Status: a.Status})
	for _, st := range steps {
		l := tourLine{Route: st.route, Alias: st.alias, ID: st.task.ID, Status: st.task.Status}
		if st.task.Error != nil {
			l.Code = st.task.Error.Code
		}
		if st.task.Status == client.StatusCompleted {
			l.File, l.Bytes = st.file, st.size
			sum.Files = append(sum.Files, st.file)
			if st.frame != "" {
				sum.Files = append(sum.Files, st.frame)
			}
		}
		sum.Steps = append(sum.Steps, l)
	}
	sum.Steps = append(sum.Steps, tourLine{Route: "speech", Alias: "demo-speech", ID: sp.ID, Status: "completed", File: speechFile, Bytes: speechSize})
	sum.Files = append(sum.Files, speechFile)
	if e.json {
		return e.printJSON(sum)
	}
	printTourSummary(stdout, sum)
	return nil
}

// printTourSummary ends the tour's output for people: a table of every step, the files made
// and the balance spent.
func printTourSummary(stdout io.Writer, sum tourSummary) {
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROUTE\tMODEL\tID\tSTATUS\tFILE")
	for _, l := range sum.Steps {
		what := l.File
		if l.Code != "" {
			what = "error.code " + l.Code
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.Route, l.Alias, l.ID, l.Status, what)
	}
	_ = tw.Flush()
	fmt.Fprintf(stdout, "\nfiles made (%d):\n", len(sum.Files))
	for _, f := range sum.Files {
		fmt.Fprintf(stdout, "  %s\n", f)
	}
	fmt.Fprintf(stdout, "balance: %s → %s %s available; the tour spent %s %s (the failed task was refunded)\n",
		fmtAmount(sum.Before), fmtAmount(sum.After), sum.Currency, fmtAmount(sum.Spent), sum.Currency)
}

// roundMicro rounds to the currency's micro-units, the precision of the ledger.
func roundMicro(v float64) float64 {
	return math.Round(v*1e6) / 1e6
}
