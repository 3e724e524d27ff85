package arkassets_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"mediagen/internal/provider"
	"mediagen/internal/provider/arkassets"
	"mediagen/internal/provider/arkassets/arkassetsfake"
)

const (
	ak     = "AKLTfakeaccess"
	sk     = "fakesecretkey=="
	region = "cn-beijing"
)

func start(t *testing.T, cfg arkassetsfake.Config) (*arkassetsfake.Server, *arkassets.Client) {
	t.Helper()
	cfg.AccessKey, cfg.SecretKey, cfg.Region = ak, sk, region
	f := arkassetsfake.Start(cfg)
	t.Cleanup(f.Close)
	c, err := arkassets.New(arkassets.Config{BaseURL: f.Base(), Region: region, AccessKey: ak, SecretKey: sk,
		HTTP: &http.Client{Transport: &http.Transport{TLSClientConfig: f.TLS()}}})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

func noViolations(t *testing.T, f *arkassetsfake.Server) {
	t.Helper()
	if v := f.Violations(); len(v) > 0 {
		t.Fatalf("wire format violations: %q", v)
	}
}

func TestVirtualAssetBecomesActiveAfterPolls(t *testing.T) {
	ctx := context.Background()
	f, c := start(t, arkassetsfake.Config{Polls: 2})
	g, err := c.CreateAssetGroup(ctx, "grp_1", "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.CreateAsset(ctx, g, "https://media.example/a.png", "Image", "asset_1")
	if err != nil {
		t.Fatal(err)
	}
	var statuses []string
	for range 3 {
		a, err := c.GetAsset(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, a.Status)
	}
	if got := strings.Join(statuses, ","); got != "Processing,Processing,Active" {
		t.Fatalf("statuses %s", got)
	}
	if !f.Known(id) {
		t.Fatal("the fake does not know the asset as Active")
	}
	noViolations(t, f)
}

func TestLostCreatesAreFoundByName(t *testing.T) {
	ctx := context.Background()
	f, c := start(t, arkassetsfake.Config{LoseCreates: 2})
	if _, err := c.CreateAssetGroup(ctx, "grp_lost", ""); !errors.Is(err, provider.ErrTransient) {
		t.Fatalf("lost group create: %v, want transient", err)
	}
	g, found, err := c.FindAssetGroup(ctx, "grp_lost")
	if err != nil || !found {
		t.Fatalf("find group: %v %v", found, err)
	}
	if _, err := c.CreateAsset(ctx, g, "https://media.example/a.png", "Image", "asset_lost"); !errors.Is(err, provider.ErrTransient) {
		t.Fatalf("lost asset create: %v, want transient", err)
	}
	a, found, err := c.FindAsset(ctx, g, "asset_lost")
	if err != nil || !found || a.GroupID != g {
		t.Fatalf("find asset: %+v %v %v", a, found, err)
	}
	if f.Groups() != 1 || f.Assets() != 1 {
		t.Fatalf("groups %d assets %d, want one each", f.Groups(), f.Assets())
	}
	noViolations(t, f)
}

func TestFaultsMapToProviderErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     arkassetsfake.Config
		want    error
		retryIn bool
	}{
		{"401 refuses the account", arkassetsfake.Config{Status: 401}, provider.ErrAccount, false},
		{"403 refuses the account", arkassetsfake.Config{Status: 403}, provider.ErrAccount, false},
		{"429 is transient with its Retry-After", arkassetsfake.Config{Status: 429}, provider.ErrTransient, true},
		{"500 is transient", arkassetsfake.Config{Status: 500}, provider.ErrTransient, false},
		{"503 is transient", arkassetsfake.Config{Status: 503}, provider.ErrTransient, false},
		{"garbage is transient", arkassetsfake.Config{Garbage: true}, provider.ErrTransient, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := start(t, tc.cfg)
			_, err := c.CreateAssetGroup(context.Background(), "grp", "")
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if tc.retryIn && provider.RetryDelay(err) <= 0 {
				t.Fatalf("no Retry-After in %v", err)
			}
			if strings.Contains(err.Error(), sk) {
				t.Fatal("the secret key is in an error text")
			}
		})
	}
}

func TestWrongSecretIsARefusedAccount(t *testing.T) {
	f := arkassetsfake.Start(arkassetsfake.Config{AccessKey: ak, SecretKey: sk, Region: region})
	defer f.Close()
	c, err := arkassets.New(arkassets.Config{BaseURL: f.Base(), Region: region, AccessKey: ak, SecretKey: "not-the-secret",
		HTTP: &http.Client{Transport: &http.Transport{TLSClientConfig: f.TLS()}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(context.Background()); !errors.Is(err, provider.ErrAccount) {
		t.Fatalf("check with a wrong secret: %v, want a refused account", err)
	}
	if len(f.Violations()) == 0 {
		t.Fatal("the fake did not notice the bad signature")
	}
}

func TestRefusedAssetIsFailed(t *testing.T) {
	ctx := context.Background()
	f, c := start(t, arkassetsfake.Config{Refuse: func(u string) bool { return strings.Contains(u, "face") }})
	g, _ := c.CreateAssetGroup(ctx, "grp", "")
	id, err := c.CreateAsset(ctx, g, "https://media.example/face.png", "Image", "a")
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.GetAsset(ctx, id)
	if err != nil || a.Status != arkassets.StatusFailed {
		t.Fatalf("asset %+v %v, want Failed", a, err)
	}
	noViolations(t, f)
}

func TestVisualValidationYieldsGroupAfterPass(t *testing.T) {
	ctx := context.Background()
	f, c := start(t, arkassetsfake.Config{})
	s, err := c.CreateVisualValidateSession(ctx, "https://tenant.example/cb")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetVisualValidateResult(ctx, s.Token); !errors.Is(err, arkassets.ErrPending) {
		t.Fatalf("before the pass: %v, want pending", err)
	}
	hc := f.Client()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := hc.Post(strings.Replace(s.H5Link, "?", "/pass?", 1), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if loc := res.Header.Get("Location"); !strings.Contains(loc, "resultCode=10000") || !strings.HasPrefix(loc, "https://tenant.example/cb") {
		t.Fatalf("redirect %q", loc)
	}
	g, err := c.GetVisualValidateResult(ctx, s.Token)
	if err != nil || g == "" {
		t.Fatalf("group %q %v", g, err)
	}
	noViolations(t, f)
}
