package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/mediagen-dev/mediagen/client"
)

func runVideo(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, clientUsage)
		return usageError{"video: give a command: create, get or wait"}
	}
	if isHelpArg(args[0]) {
		fmt.Fprintln(stdout, clientUsage)
		return nil
	}
	switch args[0] {
	case "create":
		return runVideoCreate(ctx, args[1:], getenv, stdout, stderr)
	case "get", "wait":
		return runVideoGetWait(ctx, args[0], args[1:], getenv, stdout, stderr)
	default:
		fmt.Fprintln(stderr, clientUsage)
		return usageError{fmt.Sprintf("video: unknown command %q", args[0])}
	}
}

// videoFlags are the request fields of the three routes as flags.
type videoFlags struct {
	route, model, prompt, user, requestID              string
	duration, fps, bitrate, bitDepth, resolutionLimit  int
	seed                                               int64
	resolution, ratio, outputFormat, taskType, toolVer string
	bitrateLevel, scene, enhanceStyle, videoURL        string
	sourceDuration                                     float64
	audio, watermark, lastFrame                        string // "", true, false
	images, videos, audios                             multiFlag
	firstFrame, lastFrameIn                            string
}

func (f *videoFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.route, "route", "", "native, enhancement or production (default: enhancement with --video-url, else native)")
	fs.StringVar(&f.model, "model", "", "the alias (required)")
	fs.StringVar(&f.prompt, "prompt", "", "the prompt (or give it as the argument)")
	fs.StringVar(&f.user, "user", "", "your end user's id")
	fs.StringVar(&f.requestID, "request-id", "", "metadata.client_request_id (default: generated and printed)")
	fs.IntVar(&f.duration, "duration", 0, "output seconds: -1 or 4–30 (0: omitted)")
	fs.StringVar(&f.resolution, "resolution", "", "480p, 720p, 1080p, 2k, 4k, 8k (by route)")
	fs.StringVar(&f.ratio, "ratio", "", "adaptive, 16:9, 4:3, 1:1, 3:4, 9:16, 21:9")
	fs.StringVar(&f.audio, "audio", "", "generate_audio: true or false")
	fs.StringVar(&f.watermark, "watermark", "", "watermark: true or false")
	fs.StringVar(&f.lastFrame, "return-last-frame", "", "return_last_frame: true or false")
	fs.StringVar(&f.outputFormat, "output-format", "", "native: mp4 or mov")
	fs.StringVar(&f.taskType, "task-type", "", "omni_reference_task_type: auto, reference, edit, extend")
	fs.Int64Var(&f.seed, "seed", 0, "seed (2.0 families; 0: omitted)")
	fs.Var(&f.images, "image", "reference image URL (https or asset://; repeatable)")
	fs.Var(&f.videos, "video", "reference video URL (https or asset://; repeatable)")
	fs.Var(&f.audios, "audio-ref", "reference audio URL (repeatable)")
	fs.StringVar(&f.firstFrame, "first-frame", "", "first frame image URL")
	fs.StringVar(&f.lastFrameIn, "last-frame", "", "last frame image URL")
	fs.StringVar(&f.videoURL, "video-url", "", "enhancement: the source video URL")
	fs.Float64Var(&f.sourceDuration, "source-duration", 0, "enhancement: the source's duration in seconds (the service measures it too)")
	fs.StringVar(&f.toolVer, "tool-version", "", "enhancement: standard or professional")
	fs.IntVar(&f.resolutionLimit, "resolution-limit", 0, "enhancement: short side in pixels (instead of --resolution)")
	fs.IntVar(&f.fps, "fps", 0, "enhancement and production: 15–120")
	fs.StringVar(&f.bitrateLevel, "bitrate-level", "", "low, medium or high")
	fs.IntVar(&f.bitrate, "bitrate", 0, "kbit/s, 10–150000")
	fs.StringVar(&f.scene, "scene", "", "Standard tier: common, ugc, short_series, aigc, old_film")
	fs.StringVar(&f.enhanceStyle, "enhance-style", "", "hd or natural")
	fs.IntVar(&f.bitDepth, "bit-depth", 0, "Professional/Pro: 8, 10, 12, 16")
}

func optInt(v int) *int {
	if v == 0 {
		return nil
	}
	return &v
}

func optBool(name, v string) (*bool, error) {
	switch v {
	case "":
		return nil, nil
	case "true":
		return client.Bool(true), nil
	case "false":
		return client.Bool(false), nil
	}
	return nil, usageError{fmt.Sprintf("--%s %q: want true or false", name, v)}
}

func (f *videoFlags) content() []client.ContentItem {
	var items []client.ContentItem
	if f.firstFrame != "" {
		items = append(items, client.FirstFrame(f.firstFrame))
	}
	if f.lastFrameIn != "" {
		items = append(items, client.LastFrame(f.lastFrameIn))
	}
	for _, u := range f.images {
		items = append(items, client.ReferenceImage(u))
	}
	for _, u := range f.videos {
		items = append(items, client.ReferenceVideo(u))
	}
	for _, u := range f.audios {
		items = append(items, client.ReferenceAudio(u))
	}
	return items
}

// request builds the typed request of the chosen route. Flags a route does not have are
// refused here, before anything is sent.
func (f *videoFlags) request() (client.VideoRequest, error) {
	if f.model == "" {
		return nil, usageError{"video create: --model is required (the alias of your tenant, e.g. demo-video-fast)"}
	}
	audio, err := optBool("audio", f.audio)
	if err != nil {
		return nil, err
	}
	wm, err := optBool("watermark", f.watermark)
	if err != nil {
		return nil, err
	}
	lf, err := optBool("return-last-frame", f.lastFrame)
	if err != nil {
		return nil, err
	}
	route := f.route
	if route == "" {
		route = "native"
		if f.videoURL != "" {
			route = "enhancement"
		}
	}
	var dur *int
	if f.duration != 0 {
		dur = client.Int(f.duration)
	}
	switch route {
	case "native":
		if f.videoURL != "" || f.toolVer != "" || f.resolutionLimit != 0 || f.fps != 0 || f.bitrateLevel != "" || f.bitrate != 0 || f.scene != "" || f.enhanceStyle != "" || f.bitDepth != 0 {
			return nil, usageError{"video create: enhancement flags given for a native request (use --route enhancement or production)"}
		}
		r := &client.NativeRequest{Model: f.model, Prompt: f.prompt, User: f.user, Metadata: client.NativeMetadata{
			Duration: dur, Resolution: f.resolution, Ratio: f.ratio, GenerateAudio: audio, Watermark: wm,
			ClientRequestID: f.requestID, Content: f.content(), OutputFormat: f.outputFormat, ReturnLastFrame: lf,
			OmniReferenceTaskType: f.taskType}}
		if f.seed != 0 {
			r.Seed = client.Int64(f.seed)
		}
		return r, nil
	case "enhancement":
		if f.videoURL == "" || f.sourceDuration <= 0 {
			return nil, usageError{"video create: enhancement needs --video-url and --source-duration"}
		}
		if f.prompt != "" || len(f.content()) > 0 || f.ratio != "" || audio != nil || lf != nil {
			return nil, usageError{"video create: enhancement takes no prompt, content, ratio, audio or last frame"}
		}
		return &client.EnhancementRequest{Model: f.model, Metadata: client.EnhancementMetadata{
			VideoURL: f.videoURL, Duration: f.sourceDuration, ToolVersion: f.toolVer, Resolution: f.resolution,
			ResolutionLimit: optInt(f.resolutionLimit), FPS: optInt(f.fps), BitrateLevel: f.bitrateLevel, Bitrate: optInt(f.bitrate),
			Scene: f.scene, EnhanceStyle: f.enhanceStyle, BitDepth: optInt(f.bitDepth), ClientRequestID: f.requestID}}, nil
	case "production":
		if f.videoURL != "" || f.toolVer != "" || f.resolutionLimit != 0 || f.outputFormat != "" || f.seed != 0 {
			return nil, usageError{"video create: production takes no --video-url (use --video), --tool-version, --resolution-limit, --output-format or --seed"}
		}
		return &client.ProductionRequest{Model: f.model, Prompt: f.prompt, User: f.user, Metadata: client.ProductionMetadata{
			Resolution: f.resolution, Duration: dur, Content: f.content(), OmniReferenceTaskType: f.taskType, Ratio: f.ratio,
			GenerateAudio: audio, Watermark: wm, FPS: optInt(f.fps), BitrateLevel: f.bitrateLevel, Bitrate: optInt(f.bitrate),
			Scene: f.scene, EnhanceStyle: f.enhanceStyle, BitDepth: optInt(f.bitDepth), ReturnLastFrame: lf, ClientRequestID: f.requestID}}, nil
	}
	return nil, usageError{fmt.Sprintf("--route %q: want native, enhancement or production", f.route)}
}

func requestIDOf(r client.VideoRequest) string {
	switch r := r.(type) {
	case *client.NativeRequest:
		return r.Metadata.ClientRequestID
	case *client.EnhancementRequest:
		return r.Metadata.ClientRequestID
	case *client.ProductionRequest:
		return r.Metadata.ClientRequestID
	}
	return ""
}

func runVideoCreate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := &cliEnv{stdout: stdout, stderr: stderr, terminal: isTerminal(stderr)}
	fs := flag.NewFlagSet("video create", flag.ContinueOnError)
	e.register(fs, getenv)
	var f videoFlags
	f.register(fs)
	wait := fs.Bool("wait", false, "wait until the task ends (Ctrl-C stops waiting, not the task)")
	out := fs.String("out", "", "with --wait: save the result video here")
	pos, err := parseFlags(fs, args, stdout, stderr, parse)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		if f.prompt != "" {
			return usageError{"video create: give the prompt once (--prompt or the argument)"}
		}
		f.prompt = strings.Join(pos, " ")
	}
	if *out != "" && !*wait {
		*wait = true
	}
	req, err := f.request()
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	v, err := c.CreateVideo(ctx, req)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			// The create may or may not have been accepted: the request id finds out.
			return interrupted{fmt.Sprintf("interrupted while creating; run the same command with --request-id %s to get the task without creating a second one", requestIDOf(req))}
		}
		return err
	}
	if !e.json {
		fmt.Fprintf(stderr, "task %s %s (client_request_id %s)\n", v.ID, v.Status, requestIDOf(req))
	}
	if !*wait {
		if e.json {
			return e.printJSON(v)
		}
		fmt.Fprintf(stdout, "%s\nwait for it: mediagen video wait %s\n", v.ID, v.ID)
		return nil
	}
	return e.waitAndSave(ctx, c, v.ID, *out)
}

func runVideoGetWait(ctx context.Context, cmd string, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := &cliEnv{stdout: stdout, stderr: stderr, terminal: isTerminal(stderr)}
	fs := flag.NewFlagSet("video "+cmd, flag.ContinueOnError)
	e.register(fs, getenv)
	out := fs.String("out", "", "save the result video here (get: when completed)")
	pos, err := parseFlags(fs, args, stdout, stderr, parse)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{fmt.Sprintf("video %s: give one task id", cmd)}
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	if cmd == "wait" {
		return e.waitAndSave(ctx, c, pos[0], *out)
	}
	v, err := c.GetVideo(ctx, pos[0])
	if err != nil {
		return err
	}
	if *out != "" && v.ResultURL() != "" {
		if _, err := e.download(ctx, c, v.ResultURL(), *out, "mediagen video get "+v.ID+" --out "+*out); err != nil {
			return err
		}
	}
	if e.json {
		return e.printJSON(v)
	}
	e.describe(v)
	return v.Err()
}

// waitAndSave waits for the task, then downloads the result. Ctrl-C leaves the task running
// and says how to resume.
func (e *cliEnv) waitAndSave(ctx context.Context, c *client.Client, id, out string) error {
	resume := "mediagen video wait " + id
	if out != "" {
		resume += " --out " + out
	}
	r := e.reporter()
	v, err := c.Wait(ctx, id, r.task)
	if err != nil && v == nil {
		r.close()
		if ctx.Err() != nil {
			return interrupted{fmt.Sprintf("stopped waiting; task %s keeps running on the service\nresume with: %s", id, resume)}
		}
		return err
	}
	if v.Status == client.StatusCompleted && out != "" {
		n, derr := c.DownloadFile(ctx, v.ResultURL(), out, r.download)
		r.downloadDone(out, n, derr)
		r.close()
		if derr != nil {
			if ctx.Err() != nil {
				return interrupted{fmt.Sprintf("download interrupted; the part already saved is kept in %s.part\nresume with: %s", out, resume)}
			}
			return fmt.Errorf("download to %s: %w", out, derr)
		}
	} else {
		r.close()
	}
	if e.json {
		if perr := e.printJSON(v); perr != nil {
			return perr
		}
		return v.Err()
	}
	e.describe(v)
	if out != "" && v.Status == client.StatusCompleted {
		fmt.Fprintf(e.stdout, "saved %s\n", out)
	}
	return v.Err()
}

// describe prints a task for people.
func (e *cliEnv) describe(v *client.Video) {
	w := e.stdout
	fmt.Fprintf(w, "%s %s %s %d%%\n", v.ID, v.Model, v.Status, v.Progress)
	if u := v.ResultURL(); u != "" {
		fmt.Fprintf(w, "  result: %s\n", u)
	}
	if v.Metadata.LastFrameURL != "" {
		fmt.Fprintf(w, "  last frame: %s\n", v.Metadata.LastFrameURL)
	}
	if v.Metadata.Duration != nil {
		fmt.Fprintf(w, "  duration %.3f s, %s, %g fps\n", *v.Metadata.Duration, v.Metadata.Resolution, deref(v.Metadata.FPS))
	}
	if v.Usage != nil {
		fmt.Fprintf(w, "  usage: %d completion tokens\n", v.Usage.CompletionTokens)
	}
	if v.Error != nil {
		fmt.Fprintf(w, "  error: %s: %s\n", v.Error.Code, v.Error.Message)
	}
	if !v.Terminal() {
		fmt.Fprintf(w, "  wait for it: mediagen video wait %s\n", v.ID)
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
