package console

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/asset"
	"mediagen/internal/blob"
	"mediagen/internal/contract"
	"mediagen/internal/keys"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/store"
)

// withAssets gives the tenant env an asset library: the real asset.Service on the env's
// store, with the default fetch policy (no job engine: assets stay Processing unless a test
// finishes them in the store).
func withAssets(t *testing.T, e *tenantEnv, c *TenantConfig) {
	t.Helper()
	blobs, err := blob.NewFS(filepath.Join(t.TempDir(), "assets"), bytes.Repeat([]byte("k"), 32), "http://127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	e.assets = asset.New(asset.Config{Store: e.st, Blobs: blobs, Fetch: safefetch.New(safefetch.Options{}),
		PublicURL: "http://127.0.0.1:9", Now: e.clock.Now})
	c.Assets = e.assets
}

// seedGroup writes an asset group straight into the store.
func seedGroup(t *testing.T, e *tenantEnv, id, tenant, library, origin, name string) {
	t.Helper()
	ctx := context.Background()
	now := e.clock.Now()
	g := store.AssetGroup{ID: id, TenantID: tenant, Library: library, Name: name, Origin: origin, Status: store.GroupActive, CreatedAt: now, UpdatedAt: now}
	if err := e.st.Transact(ctx, func(tx store.Tx) error { return tx.CreateAssetGroup(ctx, g) }); err != nil {
		t.Fatal(err)
	}
}

// seedAsset writes a Processing asset straight into the store; active finishes it as the
// asset jobs would.
func seedAsset(t *testing.T, e *tenantEnv, id, tenant, group, library, typ, name string, active bool) {
	t.Helper()
	ctx := context.Background()
	now := e.clock.Now()
	a := store.Asset{ID: id, TenantID: tenant, KeyID: e.keyID, GroupID: group, Library: library, Name: name, Type: typ,
		SourceURL: "https://cdn.example.com/" + name, Status: store.AssetProcessing, CreatedAt: now, UpdatedAt: now}
	err := e.st.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateAsset(ctx, a); err != nil {
			return err
		}
		if !active {
			return nil
		}
		return tx.FinishAsset(ctx, store.AssetOutcome{ID: id, Status: store.AssetActive, BlobKey: "assets/" + id + "/1.png",
			ContentType: "image/png", Bytes: 10, Width: 64, Height: 36, Attempts: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// tenantAssets counts the demo tenant's assets in the store.
func tenantAssets(t *testing.T, e *tenantEnv) int {
	t.Helper()
	_, n, err := e.st.Assets(context.Background(), store.AssetQuery{TenantID: "demo", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAssetsPageListsOnlyThisTenantsGroupsAndAssets(t *testing.T) {
	e := newTenantEnv(t, withAssets)
	seedGroup(t, e, "grp_brand", "demo", store.LibraryVirtual, store.GroupOriginTenant, "Brand <assets>")
	seedGroup(t, e, "grp_person", "demo", store.LibraryRealHuman, store.GroupOriginVerification, "Verified presenter")
	seedGroup(t, e, "grp_theirs", "other", store.LibraryVirtual, store.GroupOriginTenant, "Their secret group")
	seedAsset(t, e, "asset_logo", "demo", "grp_brand", store.LibraryVirtual, asset.TypeImage, "logo.png", true)
	seedAsset(t, e, "asset_clip", "demo", "grp_brand", store.LibraryVirtual, asset.TypeVideo, "clip.mp4", false)
	seedAsset(t, e, "asset_face", "demo", "grp_person", store.LibraryRealHuman, asset.TypeImage, "face.png", false)
	seedAsset(t, e, "asset_theirs", "other", "grp_theirs", store.LibraryVirtual, asset.TypeImage, "their-logo.png", false)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)

	cases := []struct {
		path          string
		want, notWant []string
	}{
		{"/console/assets", []string{"Brand &lt;assets&gt;", "logo.png", "clip.mp4", `<span class="badge processing">Processing</span>`,
			`<span class="badge active">Active</span>`, `<img class="thumb" src="http://127.0.0.1:9/v1/files/assets/asset_logo/1.png?`, `alt="logo.png"`,
			`<label for="asset-url">`, `name="csrf"`, `action="/console/assets/groups"`},
			[]string{"Their secret group", "their-logo.png", "grp_theirs", "face.png", "Verified presenter", "<assets>"}},
		{"/console/assets?lib=real-human", []string{"Verified presenter", "face.png", "Verification"},
			[]string{"Brand &lt;assets&gt;", `id="asset-asset_logo"`, "Their secret group", `action="/console/assets/groups"`}},
		{"/console/assets?group=grp_brand", []string{"logo.png", "clip.mp4", `<option value="grp_brand" selected>`}, []string{"their-logo.png"}},
	}
	for _, c := range cases {
		p := b.get(c.path)
		if p.status != http.StatusOK {
			t.Fatalf("%s: %d\n%s", c.path, p.status, p.body)
		}
		for _, w := range c.want {
			if !strings.Contains(p.body, w) {
				t.Errorf("%s lacks %q", c.path, w)
			}
		}
		for _, w := range c.notWant {
			if strings.Contains(p.body, w) {
				t.Errorf("%s shows %q", c.path, w)
			}
		}
	}
	// Another tenant's group is as unknown as one that does not exist.
	if p := b.get("/console/assets?group=grp_theirs"); p.status != http.StatusNotFound || strings.Contains(p.body, "their-logo.png") {
		t.Errorf("another tenant's group: %d\n%s", p.status, p.body)
	}
}

func TestRegisteringAnAssetWithABadURLShowsTheContractsMessageAndWritesNothing(t *testing.T) {
	e := newTenantEnv(t, withAssets)
	seedGroup(t, e, "grp_brand", "demo", store.LibraryVirtual, store.GroupOriginTenant, "Brand")
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	token := b.csrf("/console/assets")
	cases := []struct {
		name, url, typ, field string
		message               string // as assets/create words it
	}{
		{"http", "http://cdn.example.com/logo.png", "Image", "asset-url", "URL must use https."},
		{"data URL", "data:image/png;base64,iVBORw0KGgo=", "Image", "asset-url", "URL must not be a data: URL"},
		{"empty", "", "Image", "asset-url", "URL must not be empty."},
		{"relative", "logo.png", "Image", "asset-url", "URL must be an absolute https URL"},
		{"service's own file", "https://127.0.0.1:9/v1/files/assets/x/1.png", "Image", "asset-url", "URL must not be a link to this service's own files"},
		{"unknown type", "https://cdn.example.com/logo.png", "Picture", "asset-type", "AssetType must be one of"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := b.post("/console/assets", url.Values{"csrf": {token}, "lib": {"virtual"}, "group": {"grp_brand"}, "url": {c.url},
				"type": {c.typ}, "name": {"kept name"}})
			if p.status != http.StatusBadRequest {
				t.Fatalf("status %d; want 400\n%s", p.status, p.body)
			}
			// The message is the API's own, word for word.
			_, err := runAsset[contract.AssetCreated](context.Background(), e.assets, callerOf(t, e), asset.VirtualPrefix+"/assets/create",
				map[string]any{"GroupId": "grp_brand", "URL": c.url, "AssetType": c.typ, "Name": "kept name"})
			if err == nil || !strings.Contains(err.Error(), c.message) {
				t.Fatalf("the API answers %v; want %q", err, c.message)
			}
			msg := html.EscapeString(errMessage(err))
			want := fmt.Sprintf(`<p class="field-error" id="%s-error" role="alert">%s</p>`, c.field, msg)
			if !strings.Contains(p.body, want) {
				t.Errorf("the page lacks %s\n%s", want, p.body)
			}
			if !regexp.MustCompile(`id="` + c.field + `"[^>]*aria-invalid="true" aria-describedby="` + c.field + `-error"`).MatchString(p.body) {
				t.Errorf("field %s is not marked invalid", c.field)
			}
			if !strings.Contains(p.body, `value="kept name"`) || (c.url != "" && !strings.Contains(p.body, `value="`+html.EscapeString(c.url)+`"`)) {
				t.Error("the form lost its values")
			}
			if n := tenantAssets(t, e); n != 0 {
				t.Errorf("%d assets written", n)
			}
		})
	}
}

func TestRegisteringAnAssetByURLListsItProcessing(t *testing.T) {
	e := newTenantEnv(t, withAssets)
	seedGroup(t, e, "grp_brand", "demo", store.LibraryVirtual, store.GroupOriginTenant, "Brand")
	seedGroup(t, e, "grp_other", "demo", store.LibraryVirtual, store.GroupOriginTenant, "Other")
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	p := b.post("/console/assets", url.Values{"csrf": {b.csrf("/console/assets")}, "lib": {"virtual"}, "group": {"grp_brand"},
		"url": {"https://cdn.example.com/brand/intro%20v2.mp4"}, "type": {"Video"}})
	loc, _ := url.Parse(p.header.Get("Location"))
	if p.status != http.StatusSeeOther || loc == nil || loc.Path != "/console/assets" || loc.Query().Get("group") != "grp_brand" {
		t.Fatalf("register: %d %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	id := loc.Query().Get("created")
	a, err := e.st.Asset(context.Background(), id)
	if err != nil || a.TenantID != "demo" || a.KeyID != e.keyID || a.GroupID != "grp_brand" || a.Status != store.AssetProcessing || a.Name != "intro v2.mp4" {
		t.Fatalf("stored asset %+v, %v", a, err)
	}
	p = b.get(loc.RequestURI())
	status := "/console/assets/" + id + "/status?lib=virtual"
	for _, want := range []string{`id="asset-` + id + `" data-poll="` + status + `"`, "intro v2.mp4", `<span class="badge processing">Processing</span>`, "is registered"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the list after registering lacks %q\n%s", want, p.body)
		}
	}
	// The page watches the new asset until the asset jobs have processed it.
	if p := b.get(status); p.status != http.StatusOK || strings.TrimSpace(p.body) != `{"id":"`+id+`","status":"Processing","terminal":false}` {
		t.Fatalf("status while processing: %d %s", p.status, p.body)
	}
	ctx := context.Background()
	if err := e.st.Transact(ctx, func(tx store.Tx) error {
		return tx.FinishAsset(ctx, store.AssetOutcome{ID: id, Status: store.AssetFailed, FailureCode: asset.FailSourceUnreachable,
			FailureReason: "The URL could not be fetched.", Attempts: 1})
	}); err != nil {
		t.Fatal(err)
	}
	if p := b.get(status); p.status != http.StatusOK || !strings.Contains(p.body, `"status":"Failed","terminal":true`) {
		t.Fatalf("status after processing: %d %s", p.status, p.body)
	}
	p = b.get(loc.RequestURI())
	if strings.Contains(p.body, "data-poll") || !strings.Contains(p.body, `<span class="badge failed">Failed</span>`) ||
		!strings.Contains(p.body, "The URL could not be fetched.") {
		t.Errorf("the list after processing\n%s", p.body)
	}
	if p := b.get("/console/assets/" + id + "/status?lib=real-human"); p.status != http.StatusNotFound {
		t.Errorf("status in the other library: %d", p.status)
	}
}

func TestCreatingAGroupFromTheConsoleUsesTheAPIsRules(t *testing.T) {
	e := newTenantEnv(t, withAssets)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	p := b.get("/console/assets")
	if !strings.Contains(p.body, "Create a group first") {
		t.Errorf("an empty library does not say to create a group\n%s", p.body)
	}
	token := b.csrf("/console/assets")
	p = b.post("/console/assets/groups", url.Values{"csrf": {token}, "name": {"   "}, "description": {"kept"}})
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, `id="group-name-error" role="alert">Name must not be empty or only white space.</p>`) ||
		!strings.Contains(p.body, `value="kept"`) {
		t.Fatalf("blank name: %d\n%s", p.status, p.body)
	}
	if _, n, _ := e.st.AssetGroups(context.Background(), store.AssetGroupQuery{TenantID: "demo"}); n != 0 {
		t.Fatalf("%d groups written", n)
	}
	p = b.post("/console/assets/groups", url.Values{"csrf": {token}, "name": {"Brand"}, "description": {"Logos"}})
	loc, _ := url.Parse(p.header.Get("Location"))
	if p.status != http.StatusSeeOther || loc == nil || loc.Query().Get("newgroup") == "" {
		t.Fatalf("create group: %d %q\n%s", p.status, p.header.Get("Location"), p.body)
	}
	p = b.get(loc.RequestURI())
	if !strings.Contains(p.body, "Logos") || !strings.Contains(p.body, `<option value="`+loc.Query().Get("newgroup")+`" selected>Brand</option>`) {
		t.Errorf("the new group is not listed and chosen\n%s", p.body)
	}
}

func TestAssetsPagePagesThroughTheList(t *testing.T) {
	e := newTenantEnv(t, withAssets)
	seedGroup(t, e, "grp_brand", "demo", store.LibraryVirtual, store.GroupOriginTenant, "Brand")
	for i := range PageSize + 1 {
		seedAsset(t, e, fmt.Sprintf("asset_%03d", i), "demo", "grp_brand", store.LibraryVirtual, asset.TypeAudio, fmt.Sprintf("a%03d.mp3", i), false)
		e.clock.Advance(time.Second)
	}
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	p := b.get("/console/assets")
	if n := strings.Count(p.body, `<tr id="asset-`); n != PageSize {
		t.Errorf("first page: %d rows; want %d", n, PageSize)
	}
	next := `href="/console/assets?lib=virtual&amp;page=2" rel="next"`
	if !strings.Contains(p.body, next) || strings.Contains(p.body, "a000.mp3") {
		t.Fatalf("first page: no link to the next, or shows the oldest\n%s", p.body)
	}
	p = b.get("/console/assets?lib=virtual&page=2")
	if n := strings.Count(p.body, `<tr id="asset-`); n != 1 || !strings.Contains(p.body, "a000.mp3") || strings.Contains(p.body, `rel="next"`) ||
		!strings.Contains(p.body, `rel="prev"`) {
		t.Errorf("second page: %d rows\n%s", n, p.body)
	}
	if p := b.get("/console/assets?page=0"); p.status != http.StatusBadRequest {
		t.Errorf("page=0: %d", p.status)
	}
}

func TestAssetsPageSaysTheLibraryIsOffWithoutTheService(t *testing.T) {
	e := newTenantEnv(t)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	if p := b.get("/console/assets"); p.status != http.StatusOK || !strings.Contains(p.body, "asset library is not enabled") {
		t.Fatalf("no asset service: %d\n%s", p.status, p.body)
	}
	p := b.post("/console/assets", url.Values{"csrf": {b.csrf("/console/")}, "url": {"https://cdn.example.com/a.png"}})
	if p.status != http.StatusServiceUnavailable || !strings.Contains(p.body, "asset library is not enabled") {
		t.Fatalf("post without an asset service: %d\n%s", p.status, p.body)
	}
}

// callerOf is the env key's caller, as a session has it.
func callerOf(t *testing.T, e *tenantEnv) keys.Caller {
	t.Helper()
	var s Session
	if err := e.con.authenticate(context.Background(), keys.Hash(e.key), &s); err != nil {
		t.Fatal(err)
	}
	return s.Caller
}

func errMessage(err error) string { return apierr.As(err).Message }

func TestRegisteringAnAssetIsRefusedWithoutTheFormTokenOrOverTheKeysLimits(t *testing.T) {
	limited := func(t *testing.T, e *tenantEnv, c *TenantConfig) {
		c.Admit = func(keys.Caller) (func(), error) {
			return nil, &apierr.Error{Kind: apierr.KindRateLimit, Code: "rate_limit_exceeded", Message: "Too many requests for this key; slow down."}
		}
	}
	form := func(token string) url.Values {
		return url.Values{"csrf": {token}, "lib": {"virtual"}, "group": {"grp_brand"}, "url": {"https://cdn.example.com/logo.png"}, "type": {"Image"}}
	}
	t.Run("no token", func(t *testing.T) {
		e := newTenantEnv(t, withAssets)
		seedGroup(t, e, "grp_brand", "demo", store.LibraryVirtual, store.GroupOriginTenant, "Brand")
		b := newBrowser(t, e.ts.URL)
		b.signIn(e.key)
		if p := b.post("/console/assets", form("")); p.status != http.StatusForbidden {
			t.Errorf("post without the form token: %d", p.status)
		}
		if n := tenantAssets(t, e); n != 0 {
			t.Errorf("%d assets written", n)
		}
	})
	t.Run("over the limits", func(t *testing.T) {
		e := newTenantEnv(t, withAssets, limited)
		seedGroup(t, e, "grp_brand", "demo", store.LibraryVirtual, store.GroupOriginTenant, "Brand")
		b := newBrowser(t, e.ts.URL)
		b.signIn(e.key)
		p := b.post("/console/assets", form(b.csrf("/console/assets")))
		if p.status != http.StatusTooManyRequests || !strings.Contains(p.body, "Too many requests for this key; slow down.") ||
			!strings.Contains(p.body, `value="https://cdn.example.com/logo.png"`) {
			t.Errorf("post over the limits: %d\n%s", p.status, p.body)
		}
		if n := tenantAssets(t, e); n != 0 {
			t.Errorf("%d assets written", n)
		}
	})
}
