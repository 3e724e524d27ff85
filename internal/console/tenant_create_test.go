package console

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"mediagen/internal/admin"
	"mediagen/internal/apierr"
	"mediagen/internal/blob"
	"mediagen/internal/catalog"
	"mediagen/internal/jobs"
	"mediagen/internal/keys"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/provider"
	"mediagen/internal/provider/sandbox"
	"mediagen/internal/speech"
	"mediagen/internal/store"
)

// otherTenantYAML adds a second tenant to the demo catalog: one Fast 2.0 alias, no packages.
const otherTenantYAML = `
  - id: other
    name: Other tenant
    currency: USD
    aliases:
      - alias: other-video-fast
        product: native
        family: fast-2.0
        upstream: sandbox
        model: sandbox-video-fast-2.0
    rates:
      native:
        other-video-fast: 1.00
`

// withOtherTenant swaps the console's catalog for the demo one plus otherTenantYAML and
// returns a key of the other tenant.
func (e *tenantEnv) withOtherTenant(t *testing.T) string {
	t.Helper()
	two, err := catalog.Parse("two.yaml", append(catalog.DemoYAML(), otherTenantYAML...))
	if err != nil {
		t.Fatal(err)
	}
	e.con.cfg.Catalogs.Swap(&catalog.Loaded{Catalog: two})
	svc := admin.New(admin.Config{Store: e.st, Catalog: func() *catalog.Catalog { return two }, Now: e.clock.Now})
	made, err := svc.CreateKey(context.Background(), admin.CLIActor("tester"), admin.KeyInput{Tenant: "other", Name: "other", Credit: 10_000_000})
	if err != nil {
		t.Fatal(err)
	}
	return made.Secret
}

var (
	requestIDField = regexp.MustCompile(`name="client_request_id" value="([^"]+)"`)
	quotedField    = regexp.MustCompile(`name="quoted" value="([^"]+)"`)
	reservation    = regexp.MustCompile(`Reservation: ([0-9.]+) USD`)
	optionValue    = regexp.MustCompile(`<option value="([^"]*)"`)
	controlID      = regexp.MustCompile(`<(?:input|select|textarea) id="([^"]+)"`)
)

// createForm opens a create form and returns its filled-in values (csrf, route, request id).
func (b *browser) createForm(route string) url.Values {
	b.t.Helper()
	p := b.get("/console/create?route=" + route)
	if p.status != http.StatusOK {
		b.t.Fatalf("create form %s: %d\n%s", route, p.status, p.body)
	}
	id := requestIDField.FindStringSubmatch(p.body)
	if id == nil {
		b.t.Fatalf("no client_request_id on the %s form:\n%s", route, p.body)
	}
	return url.Values{"csrf": {csrfField.FindStringSubmatch(p.body)[1]}, "route": {route}, "client_request_id": {id[1]}}
}

// caller is the key's principal as the API builds it.
func (e *tenantEnv) caller(t *testing.T, secret string) keys.Caller {
	t.Helper()
	key, err := e.st.KeyByHash(context.Background(), keys.Hash(secret))
	if err != nil {
		t.Fatal(err)
	}
	cat := e.con.cfg.Catalogs.Current()
	tenant, _ := cat.Tenant(key.TenantID)
	return keys.Caller{Key: key, Tenant: tenant, Catalog: cat}
}

// wroteNothing fails unless the key has no task and its whole credit available.
func (e *tenantEnv) wroteNothing(t *testing.T, keyID string, credit money.Micros) {
	t.Helper()
	tasks, err := e.st.SearchTasks(context.Background(), store.TaskFilter{KeyID: keyID})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.st.Balance(context.Background(), keyID)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 0 || b.Available != credit || b.Reserved != 0 {
		t.Errorf("after a form that must write nothing: %d tasks, available %s, reserved %s; want none, %s, 0", len(tasks), b.Available, b.Reserved, credit)
	}
}

func TestCreateFormOffersOnlyTheTenantsAliasesAndResolutions(t *testing.T) {
	e := newTenantEnv(t)
	other := e.withOtherTenant(t)

	demo := newBrowser(t, e.ts.URL)
	demo.signIn(e.key)
	p := demo.get("/console/create")
	if p.status != http.StatusOK {
		t.Fatalf("create: %d\n%s", p.status, p.body)
	}
	for _, want := range []string{`value="demo-video-standard"`, `value="demo-video-2.5"`, `href="/console/create?route=enhancement"`,
		`href="/console/create?route=production"`, `value="4k"`, `name="client_request_id"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the demo tenant's native form lacks %s", want)
		}
	}
	for _, absent := range []string{"other-video-fast", "demo-enhance", "demo-production-lite", "route=speech", `formaction="/console/create"`} {
		if strings.Contains(p.body, absent) {
			t.Errorf("the demo tenant's native form offers %s", absent)
		}
	}
	// Every control has its label.
	for _, m := range controlID.FindAllStringSubmatch(p.body, -1) {
		if !strings.Contains(p.body, `<label for="`+m[1]+`"`) {
			t.Errorf("control %s has no label", m[1])
		}
	}
	if p := demo.get("/console/create?route=enhancement"); !strings.Contains(p.body, `value="demo-enhance-lite"`) || strings.Contains(p.body, `value="demo-video-fast"`) ||
		!strings.Contains(p.body, `value="8k"`) || !strings.Contains(p.body, `name="tool_version"`) {
		t.Errorf("enhancement form:\n%s", p.body)
	}

	b := newBrowser(t, e.ts.URL)
	b.signIn(other)
	p = b.get("/console/create?route=production")
	if p.status != http.StatusOK {
		t.Fatalf("create as the other tenant: %d\n%s", p.status, p.body)
	}
	var options []string
	for _, m := range optionValue.FindAllStringSubmatch(p.body, -1) {
		options = append(options, m[1])
	}
	got := strings.Join(options, " ")
	// Its one alias and the Fast family's resolutions; no production (not in its packages),
	// no enhancement, nothing of the demo tenant.
	if !strings.HasPrefix(got, "other-video-fast 480p 720p adaptive") || strings.Contains(got, "1080p") || strings.Contains(got, "demo-") {
		t.Errorf("the other tenant's options: %s", got)
	}
	for _, absent := range []string{"route=production", "route=enhancement", "demo-video"} {
		if strings.Contains(p.body, absent) {
			t.Errorf("the other tenant's form offers %s", absent)
		}
	}
}

func TestCreatePreviewShowsTheReservationAndWritesNothing(t *testing.T) {
	e := newTenantEnv(t)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	form := with(b.createForm(routeNative), "model", "demo-video-fast", "prompt", "a red kite <b>over</b> the sea",
		"duration", "5", "resolution", "480p", "ratio", "16:9", "generate_audio", "false")
	p := b.post("/console/create/preview", form)
	if p.status != http.StatusOK {
		t.Fatalf("preview: %d\n%s", p.status, p.body)
	}
	body, _ := json.Marshal(map[string]any{"model": "demo-video-fast", "prompt": "a red kite <b>over</b> the sea", "metadata": map[string]any{
		"duration": 5, "resolution": "480p", "ratio": "16:9", "generate_audio": false, "client_request_id": form.Get("client_request_id")}})
	want, err := e.videos.Quote(context.Background(), e.caller(t, e.key), body)
	if err != nil {
		t.Fatal(err)
	}
	m := reservation.FindStringSubmatch(p.body)
	if m == nil || m[1] != want.Amount.String() {
		t.Fatalf("reservation shown %v; want %s USD\n%s", m, want.Amount, p.body)
	}
	for _, wantText := range []string{"per million tokens", `formaction="/console/create"`, "Available balance", "100", `name="quoted"`,
		"a red kite &lt;b&gt;over&lt;/b&gt; the sea", `value="480p" selected`} {
		if !strings.Contains(p.body, wantText) {
			t.Errorf("preview lacks %q", wantText)
		}
	}
	e.wroteNothing(t, e.keyID, 100_000_000)
}

func TestCreateInvalidInputShowsTheContractsMessageOnItsFieldAndWritesNothing(t *testing.T) {
	tests := []struct {
		name   string
		route  string
		fields []string
		body   map[string]any // the contract request the form sends, without client_request_id
		field  string
		status int
	}{
		{"a duration out of range", routeNative, []string{"model", "demo-video-fast", "prompt", "kite", "duration", "99", "resolution", "480p"},
			map[string]any{"model": "demo-video-fast", "prompt": "kite", "metadata": map[string]any{"duration": 99, "resolution": "480p"}}, "duration", 400},
		{"a plain http image", routeNative, []string{"model", "demo-video-2.5", "prompt", "kite", "image_url", "http://example.com/a.png", "image_role", "reference_image"},
			map[string]any{"model": "demo-video-2.5", "prompt": "kite", "metadata": map[string]any{"content": []any{map[string]any{
				"type": "image_url", "role": "reference_image", "image_url": map[string]string{"url": "http://example.com/a.png"}}}}}, "image_url", 400},
		{"a resolution the family does not render", routeNative, []string{"model", "demo-video-fast", "prompt", "kite", "resolution", "1080p"},
			map[string]any{"model": "demo-video-fast", "prompt": "kite", "metadata": map[string]any{"resolution": "1080p"}}, "resolution", 400},
		{"an enhancement without its source", routeEnhancement, []string{"model", "demo-enhance", "duration", "5", "resolution", "1080p"},
			map[string]any{"model": "demo-enhance", "metadata": map[string]any{"duration": 5, "resolution": "1080p"}}, "video_url", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTenantEnv(t)
			b := newBrowser(t, e.ts.URL)
			b.signIn(e.key)
			form := with(b.createForm(tt.route), tt.fields...)
			_, err := e.videos.Quote(context.Background(), e.caller(t, e.key), mustJSON(t, tt.body))
			var ae *apierr.Error
			if !errors.As(err, &ae) {
				t.Fatalf("the service accepts the case's body: %v", err)
			}
			for _, path := range []string{"/console/create/preview", "/console/create"} {
				p := b.post(path, form)
				if p.status != tt.status {
					t.Fatalf("%s: %d; want %d\n%s", path, p.status, tt.status, p.body)
				}
				errP := `<p class="field-error" id="` + tt.field + `-error">` + html.EscapeString(ae.Message) + `</p>`
				if !strings.Contains(p.body, errP) {
					t.Errorf("%s: no %q next to its field\n%s", path, errP, p.body)
				}
				control := regexp.MustCompile(`id="f-` + tt.field + `"[^>]*aria-describedby="[^"]*` + tt.field + `-error"[^>]*aria-invalid="true"|id="f-` + tt.field + `"[^>]*aria-invalid="true" aria-describedby="` + tt.field + `-error"`)
				if !control.MatchString(p.body) {
					t.Errorf("%s: field %s is not marked invalid", path, tt.field)
				}
				if strings.Contains(p.body, "Reservation:") || strings.Contains(p.body, `formaction="/console/create"`) {
					t.Errorf("%s: a refused form shows a reservation", path)
				}
				for i := 0; i+1 < len(tt.fields); i += 2 {
					if v := tt.fields[i+1]; !strings.Contains(p.body, `value="`+v+`"`) && !strings.Contains(p.body, ">"+v+"</textarea>") {
						t.Errorf("%s: the value %s=%q was not kept", path, tt.fields[i], v)
					}
				}
			}
			e.wroteNothing(t, e.keyID, 100_000_000)
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCreateMakesOneTaskForTwoPostsAndRedirectsToIt(t *testing.T) {
	e := newTenantEnv(t)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	form := with(b.createForm(routeNative), "model", "demo-video-standard", "prompt", "a lighthouse", "duration", "5", "resolution", "720p", "ratio", "adaptive")

	// Create before the reservation was shown, or with a form changed since, previews again.
	if p := b.post("/console/create", form); p.status != http.StatusOK || !strings.Contains(p.body, "The form changed since its reservation was shown") {
		t.Fatalf("create without a preview: %d\n%s", p.status, p.body)
	}
	e.wroteNothing(t, e.keyID, 100_000_000)

	p := b.post("/console/create/preview", form)
	q := quotedField.FindStringSubmatch(p.body)
	amount := reservation.FindStringSubmatch(p.body)
	if q == nil || amount == nil {
		t.Fatalf("preview: %d\n%s", p.status, p.body)
	}
	form.Set("quoted", q[1])
	var ids []string
	for range 2 {
		p := b.post("/console/create", form)
		loc := p.header.Get("Location")
		if p.status != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/tasks/video_") {
			t.Fatalf("create: %d %q\n%s", p.status, loc, p.body)
		}
		ids = append(ids, strings.TrimPrefix(loc, "/console/tasks/"))
	}
	if ids[0] != ids[1] {
		t.Errorf("two posts of one form made tasks %v; want one", ids)
	}
	tasks, err := e.st.SearchTasks(context.Background(), store.TaskFilter{KeyID: e.keyID})
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 || tasks[0].ID != ids[0] || tasks[0].Reserved.String() != amount[1] || tasks[0].ClientRequestID != form.Get("client_request_id") {
		t.Fatalf("tasks %+v; want one, %s, reserving the %s shown", tasks, ids[0], amount[1])
	}
	bal, _ := e.st.Balance(context.Background(), e.keyID)
	if bal.Reserved != tasks[0].Reserved {
		t.Errorf("reserved %s; want the task's %s", bal.Reserved, tasks[0].Reserved)
	}

	// A changed form with the same request ID is the contract's conflict: shown at the top,
	// with a new ID for a deliberate new task.
	changed := with(form, "prompt", "another lighthouse")
	p = b.post("/console/create/preview", changed)
	changed.Set("quoted", quotedField.FindStringSubmatch(p.body)[1])
	p = b.post("/console/create", changed)
	if p.status != http.StatusConflict || !strings.Contains(p.body, `id="form-problem"`) || !strings.Contains(p.body, "new request ID") ||
		strings.Contains(p.body, `value="`+form.Get("client_request_id")+`"`) {
		t.Errorf("changed form, same id: %d\n%s", p.status, p.body)
	}
}

func TestCreateWithTooLittleBalanceSaysSoAndWritesNothing(t *testing.T) {
	e := newTenantEnv(t)
	made, err := e.svc.CreateKey(context.Background(), admin.CLIActor("tester"), admin.KeyInput{Tenant: "demo", Name: "poor", Credit: 1})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, e.ts.URL)
	b.signIn(made.Secret)
	form := with(b.createForm(routeNative), "model", "demo-video-fast", "prompt", "kite", "duration", "5", "resolution", "480p")
	p := b.post("/console/create/preview", form)
	if p.status != http.StatusOK || !strings.Contains(p.body, "below this reservation") {
		t.Fatalf("preview beyond the balance: %d\n%s", p.status, p.body)
	}
	form.Set("quoted", quotedField.FindStringSubmatch(p.body)[1])
	p = b.post("/console/create", form)
	if p.status != http.StatusPaymentRequired || !strings.Contains(p.body, "Insufficient balance") || !strings.Contains(p.body, "Top up") {
		t.Fatalf("create beyond the balance: %d\n%s", p.status, p.body)
	}
	e.wroteNothing(t, made.ID, 1)
}

func TestCreateRefusesAForgedPost(t *testing.T) {
	e := newTenantEnv(t)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	form := b.createForm(routeNative)
	form.Del("csrf")
	form = with(form, "model", "demo-video-fast", "prompt", "kite", "duration", "5", "resolution", "480p")
	if p := b.post("/console/create/preview", form); p.status != http.StatusForbidden || quotedField.MatchString(p.body) {
		t.Fatalf("preview without the csrf token: %d; want 403", p.status)
	}
	form.Set("quoted", "x")
	if p := b.post("/console/create", form); p.status != http.StatusForbidden {
		t.Errorf("create without the csrf token: %d; want 403", p.status)
	}
	e.wroteNothing(t, e.keyID, 100_000_000)
}

func TestCreateIsHeldToThePublicAPIsLimits(t *testing.T) {
	e := newTenantEnv(t)
	var admitted, ended int
	refuse := true
	e.con.cfg.Admit = func(c keys.Caller) (func(), error) {
		if c.Key.ID != e.keyID {
			t.Errorf("admitted key %s; want %s", c.Key.ID, e.keyID)
		}
		if refuse {
			return nil, &apierr.Error{Kind: apierr.KindRateLimit, Message: "Too many requests for this key. Slow down."}
		}
		admitted++
		return func() { ended++ }, nil
	}
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	form := with(b.createForm(routeNative), "model", "demo-video-fast", "prompt", "kite", "duration", "5", "resolution", "480p")
	p := b.post("/console/create/preview", form)
	if p.status != http.StatusTooManyRequests || !strings.Contains(p.body, `id="form-problem"`) || !strings.Contains(p.body, "Slow down.") {
		t.Fatalf("refused preview: %d\n%s", p.status, p.body)
	}
	e.wroteNothing(t, e.keyID, 100_000_000)
	refuse = false
	p = b.post("/console/create/preview", form)
	form.Set("quoted", quotedField.FindStringSubmatch(p.body)[1])
	if p := b.post("/console/create", form); p.status != http.StatusSeeOther {
		t.Fatalf("create: %d\n%s", p.status, p.body)
	}
	if admitted != 2 || ended != 2 {
		t.Errorf("admitted %d, ended %d; want the preview and the create, each ended", admitted, ended)
	}
}

// speechService is a speech service on the env's store with the sandbox engine (ffmpeg,
// ffprobe and espeak-ng; skipped without them unless CI=true).
func (e *tenantEnv) speechService(t *testing.T) *speech.Service {
	t.Helper()
	tools := ffmpeg.Tools{}
	if err := tools.Check(context.Background()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("ffmpeg, ffprobe and espeak-ng required under CI=true: %v", err)
		}
		t.Skip(err)
	}
	eng, err := sandbox.New(sandbox.Config{Dir: t.TempDir(), Tools: tools, Pace: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	blobs, err := blob.NewFS(t.TempDir(), []byte(strings.Repeat("s", 32)), "http://files.test")
	if err != nil {
		t.Fatal(err)
	}
	svc := &speech.Service{Store: e.st, Engines: map[string]provider.Synthesizer{"sandbox": eng}, Blobs: blobs, Probe: tools,
		Logger: slog.New(slog.DiscardHandler), Now: e.clock.Now}
	// The generation is a job: run the kind here, as a process serving the API does.
	jobsEng := jobs.New(jobs.Config{Store: e.st, Logger: svc.Logger, Now: e.clock.Now})
	for _, k := range svc.Kinds() {
		if err := jobsEng.Register(k); err != nil {
			t.Fatal(err)
		}
	}
	if err := jobsEng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	svc.Notify = jobsEng.Notify
	t.Cleanup(jobsEng.Stop)
	return svc
}

func TestCreateSpeechPreviewsRefusesOnTheFieldAndRedirectsToTheSpeech(t *testing.T) {
	e := newTenantEnv(t)
	e.con.cfg.Speech = e.speechService(t)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	if p := b.get("/console/create"); !strings.Contains(p.body, `href="/console/create?route=speech"`) {
		t.Fatalf("no speech tab once speech is on:\n%s", p.body)
	}
	form := b.createForm(routeSpeech)
	p := b.post("/console/create/preview", with(form, "model", "demo-speech", "input", strings.Repeat("a", 3001)))
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, `id="input-error"`) || !strings.Contains(p.body, `aria-invalid="true"`) {
		t.Fatalf("over-long text: %d\n%s", p.status, p.body)
	}
	form = with(form, "model", "demo-speech", "input", "Hello from the console.", "instructions", "Calm.")
	p = b.post("/console/create/preview", form)
	if p.status != http.StatusOK || !strings.Contains(p.body, "per second of audio") || !strings.Contains(p.body, "Generate speech") {
		t.Fatalf("speech preview: %d\n%s", p.status, p.body)
	}
	e.wroteNothing(t, e.keyID, 100_000_000)
	form.Set("quoted", quotedField.FindStringSubmatch(p.body)[1])
	var locs []string
	for range 2 {
		p := b.post("/console/create", form)
		if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/console/speech/speech_") {
			t.Fatalf("speech create: %d %q\n%s", p.status, p.header.Get("Location"), p.body)
		}
		locs = append(locs, p.header.Get("Location"))
	}
	if locs[0] != locs[1] {
		t.Errorf("two posts of one speech form: %v; want one speech", locs)
	}
}

// measures12 is a video.Prober that measures every source as 12 seconds long.
type measures12 struct{}

func (measures12) Check(string, bool) error { return nil }
func (measures12) MeasureVideo(context.Context, string, bool) (float64, error) {
	return 12, nil
}

func TestCreateEnhancementPreviewReservesOnTheMeasuredSource(t *testing.T) {
	e := newTenantEnv(t)
	e.videos.Prober = measures12{}
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	form := with(b.createForm(routeEnhancement), "model", "demo-enhance", "video_url", "https://cdn.example.com/a.mp4",
		"duration", "2.5", "tool_version", "professional", "resolution", "4k", "fps", "60")
	p := b.post("/console/create/preview", form)
	if p.status != http.StatusOK {
		t.Fatalf("preview: %d\n%s", p.status, p.body)
	}
	body := mustJSON(t, map[string]any{"model": "demo-enhance", "metadata": map[string]any{"video_url": "https://cdn.example.com/a.mp4",
		"duration": 2.5, "tool_version": "professional", "resolution": "4k", "fps": 60, "client_request_id": form.Get("client_request_id")}})
	want, err := e.videos.Quote(context.Background(), e.caller(t, e.key), body)
	if err != nil {
		t.Fatal(err)
	}
	if m := reservation.FindStringSubmatch(p.body); m == nil || m[1] != want.Amount.String() {
		t.Fatalf("reservation %v; want %s\n%s", m, want.Amount, p.body)
	}
	for _, s := range []string{"professional, 4k", "12 s; 13 s reserved", "× 2", `value="2.5"`} {
		if !strings.Contains(p.body, s) {
			t.Errorf("enhancement preview lacks %q", s)
		}
	}
	e.wroteNothing(t, e.keyID, 100_000_000)
}
