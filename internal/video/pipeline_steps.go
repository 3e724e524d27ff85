package video

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/billing"
	"mediagen/internal/contract"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/provider"
	"mediagen/internal/store"
)

// KeyPrefix starts the key of every object a video task stores: its result, last frame and
// production intermediate.
const KeyPrefix = "videos/"

func (s *stepCtx) inputs() []provider.Input {
	var in []provider.Input
	for i, it := range s.req.Request.Content {
		src := provider.Source{URL: it.URL}
		if a, ok := s.req.Assets[i]; ok {
			src = provider.Source{URL: a.AccessURL, Path: a.Path, Key: a.Key, Library: a.Library, LibraryID: a.LibraryID}
		}
		in = append(in, provider.Input{Type: string(it.Type), Role: string(it.Role), Source: src})
	}
	return in
}

// generateRequest builds the generation half: a native request as sent, or the production
// tier's generation at the alias's bound native resolution.
func (s *stepCtx) generateRequest(key string) provider.GenerateRequest {
	r := s.req.Request
	g := provider.GenerateRequest{IdempotencyKey: key, Tenant: s.c.TenantID, Key: s.c.KeyID, Model: s.req.modelOn(genAccount(s.req, s.st)), Prompt: r.Prompt, Seed: r.Seed, Inputs: s.inputs()}
	if n := r.Native; n != nil {
		g.Resolution, g.Ratio, g.Duration = n.Resolution, n.Ratio, n.Duration
		g.GenerateAudio, g.Watermark, g.OutputFormat, g.TaskType = n.GenerateAudio, n.Watermark, n.OutputFormat, n.OmniTaskType
	}
	if p := r.Production; p != nil {
		g.Resolution, g.Ratio, g.Duration = s.req.GenerateRes, p.Ratio, p.Duration
		g.GenerateAudio, g.Watermark, g.OutputFormat, g.TaskType = p.GenerateAudio, p.Watermark, "mp4", p.OmniTaskType
	}
	g.Width, g.Height = contract.Dimensions(g.Resolution, g.Ratio)
	return g
}

// productionTool is the enhancement route each production tier is bound to.
func productionTool(t contract.Tier) string {
	switch t {
	case contract.TierStandard:
		return contract.ToolStandard
	case contract.TierPro:
		return contract.ToolProfessional
	}
	return ""
}

func (s *stepCtx) enhanceRequest(key string) (provider.EnhanceRequest, error) {
	r := s.req.Request
	if e := r.Enhancement; e != nil {
		// A task accepted before sources were measured has no SourceMicros: no limit.
		var maxSource float64
		if s.quote.SourceMicros > 0 {
			maxSource = float64(s.quote.SourceMicros+billing.OutputSlackMicros) / 1e6
		}
		return provider.EnhanceRequest{IdempotencyKey: key, Tenant: s.c.TenantID, Key: s.c.KeyID, Model: s.req.modelOn(enhAccount(s.req, s.st)), ToolVersion: e.ToolVersion,
			Source: provider.Source{URL: e.VideoURL}, Resolution: e.Resolution, ShortSide: e.ResolutionLimit,
			MaxSourceSeconds: maxSource,
			FPS:              e.FPS, Bitrate: e.Bitrate, BitrateLevel: e.BitrateLevel, BitDepth: e.BitDepth,
			Scene: e.Scene, EnhanceStyle: e.EnhanceStyle}, nil
	}
	p := r.Production
	if p == nil || s.st.Intermediate == "" {
		return provider.EnhanceRequest{}, errors.New("enhancement without a source")
	}
	// A local engine reads the intermediate from its file, or from the store by key; a
	// remote one through the signed link.
	src := provider.Source{Key: s.st.Intermediate}
	if path, ok := s.p.Blobs.LocalPath(s.st.Intermediate); ok {
		src.Path = path
	}
	ttl := s.p.LinkTTL
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	src.URL, _ = s.p.Blobs.SignedURL(s.st.Intermediate, ttl)
	// The intermediate is bounded like a standalone source: the request's length plus the
	// slack, what the reservation priced (keepIntermediate cut it to that already). An engine
	// refuses a longer source and never makes a longer output.
	return provider.EnhanceRequest{IdempotencyKey: key, Model: s.req.enhanceModelOn(enhAccount(s.req, s.st)), ToolVersion: productionTool(p.Tier),
		Source: src, Resolution: p.Resolution, FPS: p.FPS, Bitrate: p.Bitrate, BitrateLevel: p.BitrateLevel,
		BitDepth: p.BitDepth, Scene: p.Scene, EnhanceStyle: p.EnhanceStyle, Prompt: r.Prompt,
		MaxSourceSeconds: float64(s.quote.LengthBound()) / 1e6}, nil
}

// finish stores the final output, holds it within the request (cut to the request's bound
// when the upstream returned more), measures it, takes the last frame from the stored final
// video when requested, and prices the task: billing.Final bounds the charge by the
// reservation above and by what the stored result implies below; what the upstream did
// beyond the request is returned as excess, recorded at settlement. Keys are fixed per task,
// so a retried finish rewrites the same objects.
func (s *stepCtx) finish(ctx context.Context, out *provider.Output) (Outcome, string, error) {
	id := s.c.ID
	videoKey := KeyPrefix + id + "/result" + extOf(out.ContentType)
	if err := s.copyOutput(ctx, videoKey, out.Source); err != nil {
		return s.outputError(err)
	}
	path, release, err := s.blobFile(ctx, videoKey)
	if err != nil {
		return Outcome{}, "", fmt.Errorf("read the stored result: %w", err)
	}
	defer release()
	m, path, cut, releaseCut, err := s.bounded(ctx, videoKey, path, s.account())
	defer releaseCut()
	if errors.Is(err, errUnusable) {
		return s.unusable(err)
	}
	if err != nil {
		return Outcome{}, "", err
	}
	info := m.info
	res := Result{VideoKey: videoKey, Duration: m.length, FPS: info.FPS, Width: info.Width, Height: info.Height}
	r := s.req.Request
	if (r.Native != nil && r.Native.ReturnLastFrame) || (r.Production != nil && r.Production.ReturnLastFrame) {
		key, err := s.lastFrame(ctx, path)
		if err != nil {
			return Outcome{}, "", err
		}
		res.LastFrameKey = key
	}
	// A thumbnail that cannot be made costs only variant=thumbnail (a 404 saying so), not
	// the video the caller paid for; a cancelled context stops the task as before.
	if key, err := s.thumbnail(ctx, path); err == nil {
		res.ThumbnailKey = key
	} else if ctx.Err() != nil {
		return Outcome{}, "", err
	} else {
		s.log.WarnContext(ctx, "video thumbnail", "task", s.c.ID, "err", err)
	}
	if e := r.Enhancement; e != nil {
		res.Resolution = fmt.Sprintf("%dx%d", info.Width, info.Height)
		res.ToolVersion = billing.EnhancementTier(contract.EnhRoute(enhRouteOf(e)), e.ToolVersion)
	}
	var reported int64
	if r.Native != nil {
		reported = s.st.Tokens
	}
	settled, err := billing.Final(s.quote, m.delivered(reported))
	if err != nil {
		return Outcome{}, "", err
	}
	if r.Native != nil {
		res.CompletionTokens = settled.Tokens
	}
	excess := append([]billing.Excess(nil), s.st.Excess...)
	if cut != nil {
		excess = append(excess, *cut)
	}
	for _, e := range settled.Excess {
		e.Upstream = s.account()
		excess = append(excess, e)
	}
	if r.Native != nil {
		if e := secondsOver(s.quote, s.st.Seconds, info.Width, info.Height, info.FPS, settled.Charge); e != nil {
			e.Upstream = s.account()
			excess = append(excess, *e)
		}
	}
	body, err := json.Marshal(res)
	if err != nil {
		return Outcome{}, "", err
	}
	return Outcome{Final: &Final{Status: store.StatusCompleted, Result: body, Charge: settled.Charge, Excess: excess,
		UpstreamTokens: s.st.Tokens, UpstreamSeconds: s.st.Seconds}}, "", nil
}

func enhRouteOf(e *contract.EnhancementParams) string {
	if e.ToolVersion == "" {
		return string(contract.EnhLite)
	}
	return string(contract.EnhStandard)
}

// lastFrame takes a JPG of the final video's last frame and stores it.
func (s *stepCtx) lastFrame(ctx context.Context, videoPath string) (string, error) {
	return s.frameJPG(ctx, videoPath, "last_frame.jpg", s.p.Tools.LastFrameJPG)
}

// thumbnail takes a JPG of the final video's first frame and stores it beside the video, so
// every replica serves it and DELETE removes it with the video.
func (s *stepCtx) thumbnail(ctx context.Context, videoPath string) (string, error) {
	return s.frameJPG(ctx, videoPath, "thumbnail.jpg", s.p.Tools.FirstFrameJPG)
}

func (s *stepCtx) frameJPG(ctx context.Context, videoPath, name string, take func(ctx context.Context, video, out string) error) (string, error) {
	dir, err := os.MkdirTemp("", ffmpeg.ScratchPrefix+"frame-*") // swept at start if a crash leaves it
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	jpg := filepath.Join(dir, name)
	if err := take(ctx, videoPath, jpg); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	f, err := os.Open(jpg)
	if err != nil {
		return "", err
	}
	defer f.Close()
	key := KeyPrefix + s.c.ID + "/" + name
	if _, err := s.p.Blobs.Put(ctx, key, f); err != nil {
		return "", err
	}
	return key, nil
}
