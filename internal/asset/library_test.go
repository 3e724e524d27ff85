package asset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/blob"
	"mediagen/internal/keys"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
)

// quickCheck lets a verification be confirmed as soon as it starts.
func quickCheck(c *Config) { c.MinCheck = -1 }

// realHumanGroup passes a verification for c and returns the real-human group it made.
func (e *env) realHumanGroup(c keys.Caller) string {
	e.t.Helper()
	ctx := context.Background()
	token, _ := e.must(c, RealHumanPrefix+"/validate-session/create", `{}`)["VerifyToken"].(string)
	if _, err := e.svc.Act(ctx, token, ActionStart); err != nil {
		e.t.Fatalf("start: %v", err)
	}
	e.clock.Advance(e.svc.cfg.MinCheck) // the liveness check's shortest duration
	if st, err := e.svc.Act(ctx, token, ActionConfirm); err != nil || st.State != PagePassed {
		e.t.Fatalf("confirm: %+v %v", st, err)
	}
	gid, _ := e.must(c, RealHumanPrefix+"/validate-result/get", `{"VerifyToken":"`+token+`"}`)["GroupId"].(string)
	if gid == "" {
		e.t.Fatal("a passed verification returned no GroupId")
	}
	return gid
}

// createIn creates an asset with assets/create of the library at prefix.
func (e *env) createIn(c keys.Caller, prefix, group, url, typ string) string {
	e.t.Helper()
	m := e.must(c, prefix+"/assets/create", fmt.Sprintf(`{"GroupId":%q,"URL":%q,"AssetType":%q}`, group, url, typ))
	if m["Status"] != "Processing" {
		e.t.Fatalf("create answered %v", m)
	}
	return m["Id"].(string)
}

// waitIn polls assets/get of the library at prefix until the asset leaves Processing.
func (e *env) waitIn(c keys.Caller, prefix, id string) map[string]any {
	e.t.Helper()
	var m map[string]any
	testkit.WaitEvery(e.t, 20*time.Millisecond, 30*time.Second, fmt.Sprintf("asset %s still Processing", id), func() bool {
		m = e.must(c, prefix+"/assets/get", fmt.Sprintf(`{"Id":%q}`, id))
		return m["Status"] != "Processing"
	})
	return m
}

// records is every group and asset in the store, of every tenant and library: equal records
// before and after a refused operation show that it changed nothing.
type records struct {
	groups []store.AssetGroup
	assets []store.Asset
}

func (e *env) records() records {
	e.t.Helper()
	ctx := context.Background()
	groups, _, err := e.db.AssetGroups(ctx, store.AssetGroupQuery{})
	if err != nil {
		e.t.Fatal(err)
	}
	assets, _, err := e.db.Assets(ctx, store.AssetQuery{})
	if err != nil {
		e.t.Fatal(err)
	}
	return records{groups, assets}
}

// wantAPIError fails unless err is an API error of this kind, code and param.
func wantAPIError(t *testing.T, err error, kind apierr.Kind, code, param string) *apierr.Error {
	t.Helper()
	var ae *apierr.Error
	if !errors.As(err, &ae) {
		t.Fatalf("got %v, want %v %s on %s", err, kind, code, param)
	}
	if ae.Kind != kind || ae.Code != code || ae.Param != param {
		t.Errorf("got %v %s on %q (%s), want %v %s on %q", ae.Kind, ae.CodeOrDefault(), ae.Param, ae.Message, kind, code, param)
	}
	return ae
}

func itemIDs(t *testing.T, m map[string]any) []string {
	t.Helper()
	items, ok := m["Items"].([]any)
	if !ok {
		t.Fatalf("no Items array in %v", m)
	}
	ids := []string{}
	for _, it := range items {
		ids = append(ids, it.(map[string]any)["Id"].(string))
	}
	return ids
}

// Another tenant's real-human group and asset answer 404 on every real-human operation,
// exactly like unknown ids (a group that holds assets too: its delete does not say "not
// empty"), and nothing changes.
func TestRealHumanOtherTenantIdsAreNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noRun: true, mutate: quickCheck})
	H := RealHumanPrefix
	full := e.realHumanGroup(acme)
	empty := e.realHumanGroup(acme)
	ha := e.createIn(acme, H, full, "https://media.example.com/me.mp4", "Video")
	own := e.realHumanGroup(rival) // rival is verified too: its own group does not help it

	cases := []struct {
		name, path, body, code, param string
	}{
		{"group update", H + "/asset-groups/update", `{"Id":"` + full + `","Name":"taken"}`, CodeGroupNotFound, "Id"},
		{"group description update", H + "/asset-groups/update", `{"Id":"` + empty + `","Description":""}`, CodeGroupNotFound, "Id"},
		{"empty group delete", H + "/asset-groups/delete", `{"Id":"` + empty + `"}`, CodeGroupNotFound, "Id"},
		{"non-empty group delete", H + "/asset-groups/delete", `{"Id":"` + full + `"}`, CodeGroupNotFound, "Id"},
		{"asset create in the group", H + "/assets/create", `{"GroupId":"` + full + `","URL":"https://media.example.com/x.mp4","AssetType":"Video"}`, CodeGroupNotFound, "GroupId"},
		{"asset list by the group", H + "/assets/list", `{"GroupId":"` + full + `"}`, CodeGroupNotFound, "GroupId"},
		{"asset list by the empty group", H + "/assets/list", `{"GroupId":"` + empty + `","PageSize":1}`, CodeGroupNotFound, "GroupId"},
		{"asset update", H + "/assets/update", `{"Id":"` + ha + `","Name":"taken"}`, CodeAssetNotFound, "Id"},
		{"asset delete", H + "/assets/delete", `{"Id":"` + ha + `"}`, CodeAssetNotFound, "Id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.records()
			_, err := e.op(rival, c.path, c.body)
			wantAPIError(t, err, apierr.KindNotFound, c.code, c.param)
			if after := e.records(); !reflect.DeepEqual(before, after) {
				t.Errorf("the refused request changed the store:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
	// The owner still has everything, unchanged; rival sees only its own group.
	if m := e.must(acme, H+"/assets/get", `{"Id":"`+ha+`"}`); m["Name"] != "me.mp4" || m["GroupId"] != full {
		t.Errorf("acme's asset %v", m)
	}
	for _, id := range []string{full, empty} {
		if m := e.must(acme, H+"/asset-groups/get", `{"Id":"`+id+`"}`); !strings.HasPrefix(m["Name"].(string), "Verified person ") {
			t.Errorf("acme's group %v", m)
		}
	}
	if m := e.must(rival, H+"/asset-groups/list", `{}`); fmt.Sprint(itemIDs(t, m)) != fmt.Sprint([]string{own}) || m["TotalCount"] != 1.0 {
		t.Errorf("rival's groups %v", m)
	}
	if m := e.must(rival, H+"/assets/list", `{}`); m["TotalCount"] != 0.0 {
		t.Errorf("rival's assets %v", m)
	}
}

// A virtual id on a real-human path, and the reverse, answers 404 like an unknown id and
// changes nothing: the groups to delete are empty, so a missing library check would delete
// them, and the non-empty ones must not answer "not empty".
func TestLibraryMixUpsAreNotFoundAndChangeNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noRun: true, mutate: quickCheck})
	V, H := VirtualPrefix, RealHumanPrefix
	vg, vEmpty := e.virtualGroup(acme), e.virtualGroup(acme)
	va := e.createIn(acme, V, vg, "https://media.example.com/logo.png", "Image")
	hg, hEmpty := e.realHumanGroup(acme), e.realHumanGroup(acme)
	ha := e.createIn(acme, H, hg, "https://media.example.com/me.mp4", "Video")

	cases := []struct {
		name, path, body, code, param string
	}{
		{"virtual asset renamed on the real-human path", H + "/assets/update", `{"Id":"` + va + `","Name":"x"}`, CodeAssetNotFound, "Id"},
		{"real-human asset renamed on the virtual path", V + "/assets/update", `{"Id":"` + ha + `","Name":"x"}`, CodeAssetNotFound, "Id"},
		{"virtual asset deleted on the real-human path", H + "/assets/delete", `{"Id":"` + va + `"}`, CodeAssetNotFound, "Id"},
		{"real-human asset deleted on the virtual path", V + "/assets/delete", `{"Id":"` + ha + `"}`, CodeAssetNotFound, "Id"},
		{"empty virtual group deleted on the real-human path", H + "/asset-groups/delete", `{"Id":"` + vEmpty + `"}`, CodeGroupNotFound, "Id"},
		{"empty real-human group deleted on the virtual path", V + "/asset-groups/delete", `{"Id":"` + hEmpty + `"}`, CodeGroupNotFound, "Id"},
		{"non-empty virtual group deleted on the real-human path", H + "/asset-groups/delete", `{"Id":"` + vg + `"}`, CodeGroupNotFound, "Id"},
		{"non-empty real-human group deleted on the virtual path", V + "/asset-groups/delete", `{"Id":"` + hg + `"}`, CodeGroupNotFound, "Id"},
		{"virtual group renamed on the real-human path", H + "/asset-groups/update", `{"Id":"` + vg + `","Name":"x"}`, CodeGroupNotFound, "Id"},
		{"real-human group renamed on the virtual path", V + "/asset-groups/update", `{"Id":"` + hg + `","Name":"x"}`, CodeGroupNotFound, "Id"},
		{"virtual group listed on the real-human path", H + "/assets/list", `{"GroupId":"` + vg + `"}`, CodeGroupNotFound, "GroupId"},
		{"real-human group listed on the virtual path", V + "/assets/list", `{"GroupId":"` + hg + `"}`, CodeGroupNotFound, "GroupId"},
		{"asset created in a virtual group on the real-human path", H + "/assets/create", `{"GroupId":"` + vg + `","URL":"https://media.example.com/a.png","AssetType":"Image"}`, CodeGroupNotFound, "GroupId"},
		{"asset created in a real-human group on the virtual path", V + "/assets/create", `{"GroupId":"` + hg + `","URL":"https://media.example.com/a.png","AssetType":"Image"}`, CodeGroupNotFound, "GroupId"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.records()
			_, err := e.op(acme, c.path, c.body)
			wantAPIError(t, err, apierr.KindNotFound, c.code, c.param)
			if after := e.records(); !reflect.DeepEqual(before, after) {
				t.Errorf("the refused request changed the store:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
	// Each record is still there on its own path, with its name.
	for _, c := range []struct{ path, id, name string }{
		{V + "/assets/get", va, "logo.png"}, {H + "/assets/get", ha, "me.mp4"},
		{V + "/asset-groups/get", vg, "g"}, {V + "/asset-groups/get", vEmpty, "g"},
	} {
		if m := e.must(acme, c.path, `{"Id":"`+c.id+`"}`); m["Name"] != c.name {
			t.Errorf("%s %s: %v", c.path, c.id, m)
		}
	}
	for _, id := range []string{hg, hEmpty} {
		if m := e.must(acme, H+"/asset-groups/get", `{"Id":"`+id+`"}`); !strings.HasPrefix(m["Name"].(string), "Verified person ") {
			t.Errorf("real-human group %v", m)
		}
	}
	if m := e.must(acme, V+"/assets/list", `{"GroupId":"`+vg+`"}`); fmt.Sprint(itemIDs(t, m)) != fmt.Sprint([]string{va}) {
		t.Errorf("virtual list %v", m)
	}
	if m := e.must(acme, H+"/assets/list", `{"GroupId":"`+hg+`"}`); fmt.Sprint(itemIDs(t, m)) != fmt.Sprint([]string{ha}) {
		t.Errorf("real-human list %v", m)
	}
}

// Real-human update and delete answer with the record: updates return the whole changed group
// or asset (an Active asset with a fresh link and its measured size), deletes {Id, Deleted}, and
// a deleted asset's copy is gone.
func TestRealHumanUpdateAndDeleteReturnTheRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{mutate: quickCheck})
	ctx := t.Context()
	H := RealHumanPrefix
	gid := e.realHumanGroup(acme)
	g0 := e.must(acme, H+"/asset-groups/get", `{"Id":"`+gid+`"}`)
	aid := e.createIn(acme, H, gid, e.write("me.png", pngBytes(t, 64, 48)), "Image")
	a0 := e.waitIn(acme, H, aid)
	if a0["Status"] != "Active" {
		t.Fatalf("asset %v", a0)
	}
	e.clock.Advance(5 * time.Second)

	g := e.must(acme, H+"/asset-groups/update", `{"Id":"`+gid+`","Name":"  Jane Doe ","Description":"Consent form 42"}`)
	want := map[string]any{"Id": gid, "Name": "Jane Doe", "Description": "Consent form 42", "Origin": "Verification",
		"Status": "Active", "AssetCount": 1.0, "CreatedAt": g0["CreatedAt"], "UpdatedAt": g["UpdatedAt"]}
	if !reflect.DeepEqual(g, want) {
		t.Errorf("group update answered\n%v, want\n%v", g, want)
	}
	if g["UpdatedAt"].(float64) < g0["UpdatedAt"].(float64)+5 {
		t.Errorf("UpdatedAt %v not moved on from %v", g["UpdatedAt"], g0["UpdatedAt"])
	}
	if got := e.must(acme, H+"/asset-groups/get", `{"Id":"`+gid+`"}`); !reflect.DeepEqual(got, g) {
		t.Errorf("get after update %v, update answered %v", got, g)
	}
	g = e.must(acme, H+"/asset-groups/update", `{"Id":"`+gid+`","Description":""}`)
	if _, has := g["Description"]; has || g["Name"] != "Jane Doe" || g["Id"] != gid || g["Origin"] != "Verification" {
		t.Errorf("clearing Description answered %v", g)
	}

	a := e.must(acme, H+"/assets/update", `{"Id":"`+aid+`","Name":"portrait"}`)
	link, _ := a["URL"].(string)
	if !strings.HasPrefix(link, "http://127.0.0.1:9/v1/files/assets/"+aid+"/") || !strings.Contains(link, "sig=") {
		t.Errorf("updated asset URL %q", link)
	}
	if exp, _ := a["URLExpiresAt"].(float64); int64(exp) <= e.clock.Now().Unix() {
		t.Errorf("URLExpiresAt %v", a["URLExpiresAt"])
	}
	want = map[string]any{"Id": aid, "GroupId": gid, "AssetType": "Image", "Name": "portrait", "Status": "Active",
		"URL": a["URL"], "URLExpiresAt": a["URLExpiresAt"], "Width": 64.0, "Height": 48.0,
		"CreatedAt": a0["CreatedAt"], "UpdatedAt": a["UpdatedAt"]}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("asset update answered\n%v, want\n%v", a, want)
	}
	if a["UpdatedAt"].(float64) < a0["UpdatedAt"].(float64)+5 {
		t.Errorf("UpdatedAt %v not moved on from %v", a["UpdatedAt"], a0["UpdatedAt"])
	}
	if got := e.must(acme, H+"/assets/get", `{"Id":"`+aid+`"}`); got["Name"] != "portrait" || got["UpdatedAt"] != a["UpdatedAt"] {
		t.Errorf("get after update %v", got)
	}

	stored, err := e.db.Asset(ctx, aid)
	if err != nil || stored.BlobKey == "" {
		t.Fatalf("stored asset %+v %v", stored, err)
	}
	if d := e.must(acme, H+"/assets/delete", `{"Id":"`+aid+`"}`); !reflect.DeepEqual(d, map[string]any{"Id": aid, "Deleted": true}) {
		t.Errorf("asset delete answered %v", d)
	}
	if _, err := e.op(acme, H+"/assets/get", `{"Id":"`+aid+`"}`); apiCode(err) != CodeAssetNotFound {
		t.Errorf("get after delete: %v", err)
	}
	if obj, err := e.blobs.Open(ctx, stored.BlobKey); !errors.Is(err, blob.ErrNotFound) {
		if err == nil {
			obj.Close()
		}
		t.Errorf("the copy %s survived the delete: %v", stored.BlobKey, err)
	}
	if m := e.must(acme, H+"/asset-groups/get", `{"Id":"`+gid+`"}`); m["AssetCount"] != 0.0 {
		t.Errorf("group after the asset's delete %v", m)
	}

	if d := e.must(acme, H+"/asset-groups/delete", `{"Id":"`+gid+`"}`); !reflect.DeepEqual(d, map[string]any{"Id": gid, "Deleted": true}) {
		t.Errorf("group delete answered %v", d)
	}
	if _, err := e.op(acme, H+"/asset-groups/get", `{"Id":"`+gid+`"}`); apiCode(err) != CodeGroupNotFound {
		t.Errorf("get after delete: %v", err)
	}
	if m := e.must(acme, H+"/asset-groups/list", `{}`); m["TotalCount"] != 0.0 || len(itemIDs(t, m)) != 0 {
		t.Errorf("groups after delete %v", m)
	}
}

// asset-groups/list pages: newest first, pages of PageSize that neither overlap nor skip,
// TotalCount of every group of the caller in the library (none of another tenant or the other
// library), and Items: [] past the end.
func TestGroupListPagesNewestFirstWithoutOverlap(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, prefix, origin string
		n, size              int
		mine, other          func(*env, keys.Caller) string // a group of this library, and of the other one
	}{
		{"virtual", VirtualPrefix, "Tenant", 7, 3, (*env).virtualGroup, (*env).realHumanGroup},
		{"real-human", RealHumanPrefix, "Verification", 5, 2, (*env).realHumanGroup, (*env).virtualGroup},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, envOpts{noRun: true, mutate: quickCheck})
			var newestFirst []string
			for i := 0; i < c.n; i++ {
				newestFirst = append([]string{c.mine(e, acme)}, newestFirst...)
				e.clock.Advance(time.Second)
				if i == c.n/2 { // others' groups in between must not show or count
					c.mine(e, rival)
					c.other(e, acme)
					e.clock.Advance(time.Second)
				}
			}
			pages := (c.n + c.size - 1) / c.size
			var seen []string
			for p := 1; p <= pages+1; p++ {
				m := e.must(acme, c.prefix+"/asset-groups/list", fmt.Sprintf(`{"PageNumber":%d,"PageSize":%d}`, p, c.size))
				if m["PageNumber"] != float64(p) || m["PageSize"] != float64(c.size) || m["TotalCount"] != float64(c.n) {
					t.Errorf("page %d: PageNumber %v PageSize %v TotalCount %v, want %d %d %d",
						p, m["PageNumber"], m["PageSize"], m["TotalCount"], p, c.size, c.n)
				}
				got := itemIDs(t, m)
				want := newestFirst[min((p-1)*c.size, c.n):min(p*c.size, c.n)]
				if !slices.Equal(got, want) {
					t.Errorf("page %d: %v, want %v", p, got, want)
				}
				for _, id := range got {
					if slices.Contains(seen, id) {
						t.Errorf("page %d repeats %s", p, id)
					}
				}
				seen = append(seen, got...)
				for _, it := range m["Items"].([]any) {
					if o := it.(map[string]any)["Origin"]; o != c.origin {
						t.Errorf("page %d: Origin %v, want %s", p, o, c.origin)
					}
				}
			}
			if !slices.Equal(seen, newestFirst) {
				t.Errorf("the pages together hold %v, want %v", seen, newestFirst)
			}
			all := e.must(acme, c.prefix+"/asset-groups/list", `{}`)
			if !slices.Equal(itemIDs(t, all), newestFirst) || all["PageNumber"] != 1.0 || all["PageSize"] != 20.0 {
				t.Errorf("default page %v", all)
			}
			one := e.must(acme, c.prefix+"/asset-groups/list", fmt.Sprintf(`{"PageNumber":%d,"PageSize":1}`, c.n))
			if !slices.Equal(itemIDs(t, one), newestFirst[c.n-1:]) {
				t.Errorf("last page of size 1 %v, want the oldest group %s", one, newestFirst[c.n-1])
			}
		})
	}
}

// selfFileLink: the service's host (any scheme, port, case, trailing dot) with a /v1/files/
// path after decoding and cleaning is a self-link; other hosts and other paths are not.
func TestSelfFileLinkRule(t *testing.T) {
	t.Parallel()
	const pub = "https://mediagen.example.com"
	cases := []struct {
		name, public, src string
		want              bool
	}{
		{"signed asset link", pub, pub + "/v1/files/assets/asset_1/1.png?expires=1&sig=ab", true},
		{"task result link", pub, pub + "/v1/files/results/task_1/out.mp4?expires=1&sig=ab", true},
		{"the file route itself", pub, pub + "/v1/files", true},
		{"host in another case", pub, "https://MediaGen.Example.COM/v1/files/assets/a/1.png", true},
		{"host with a trailing dot", pub, "https://mediagen.example.com./v1/files/assets/a/1.png", true},
		{"explicit default port", pub, "https://mediagen.example.com:443/v1/files/assets/a/1.png", true},
		{"another port of the host", pub, "https://mediagen.example.com:8443/v1/files/assets/a/1.png", true},
		{"https link to an http public URL", "http://127.0.0.1:9", "https://127.0.0.1/v1/files/assets/a/1.png", true},
		{"dot segments", pub, pub + "/media/../v1/./files/assets/a/1.png", true},
		{"doubled slashes", pub, pub + "//v1//files/assets/a/1.png", true},
		{"percent-encoded path", pub, pub + "/v1/%66iles/assets/a/1.png", true},
		{"path in another case", pub, pub + "/V1/Files/assets/a/1.png", true},
		{"public URL with a base path", "https://example.com/mediagen", "https://example.com/mediagen/v1/files/assets/a/1.png", true},
		{"IPv6 host", "https://[2001:db8::1]:8443", "https://[2001:db8::1]/v1/files/assets/a/1.png", true},
		{"same host, another path", pub, pub + "/media/cat.png", false},
		{"same host, a path only starting like the route", pub, pub + "/v1/filesystem/cat.png", false},
		{"same host, the verification page", pub, pub + "/verify/vt_x", false},
		{"another host, same path", pub, "https://cdn.example.com/v1/files/assets/a/1.png", false},
		{"a subdomain of the host", pub, "https://files.mediagen.example.com/v1/files/assets/a/1.png", false},
		{"the host only in the query", pub, "https://cdn.example.com/x.png?from=" + pub + "/v1/files/a", false},
		{"no public URL", "", pub + "/v1/files/assets/a/1.png", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := selfFileLink(c.public, c.src); got != c.want {
				t.Errorf("selfFileLink(%q, %q) = %v, want %v", c.public, c.src, got, c.want)
			}
		})
	}
}

// assets/create in either library refuses the service's own file links with 400
// invalid_source_url on URL; other paths of the host and other hosts are accepted.
func TestCreateRefusesServiceFileLinks(t *testing.T) {
	t.Parallel()
	const pub = "https://mediagen.example.com"
	e := newEnv(t, envOpts{noRun: true, mutate: func(c *Config) { c.PublicURL = pub; c.MinCheck = -1 }})
	libraries := []struct{ name, prefix, group string }{
		{"virtual", VirtualPrefix, e.virtualGroup(acme)},
		{"real-human", RealHumanPrefix, e.realHumanGroup(acme)},
	}
	cases := []struct {
		name, url string
		refused   bool
	}{
		{"signed asset link", pub + "/v1/files/assets/asset_1/1.png?expires=1999999999&sig=00ff", true},
		{"task result link", pub + "/v1/files/results/task_1/out.mp4?expires=1999999999&sig=00ff", true},
		{"another port of the host", "https://mediagen.example.com:8443/v1/files/assets/asset_1/1.png", true},
		{"host in another case", "https://MEDIAGEN.example.com/v1/files/assets/asset_1/1.png", true},
		{"dot segments", pub + "/x/../v1/files/assets/asset_1/1.png", true},
		{"same host, another path", pub + "/media/cat.png", false},
		{"another host, same path", "https://cdn.example.com/v1/files/assets/asset_1/1.png", false},
	}
	created := 0
	for _, lib := range libraries {
		for _, c := range cases {
			t.Run(lib.name+"/"+c.name, func(t *testing.T) {
				m, err := e.op(acme, lib.prefix+"/assets/create", fmt.Sprintf(`{"GroupId":%q,"URL":%q,"AssetType":"Image"}`, lib.group, c.url))
				if !c.refused {
					if err != nil || m["Status"] != "Processing" {
						t.Fatalf("refused: %v %v", m, err)
					}
					created++
					return
				}
				ae := wantAPIError(t, err, apierr.KindInvalid, CodeInvalidSourceURL, "URL")
				if !strings.Contains(ae.Message, "this service's own files") || !strings.Contains(ae.Message, "asset://<Id>") {
					t.Errorf("message %q", ae.Message)
				}
				if ae.Type() != "invalid_request_error" || ae.Status() != 400 {
					t.Errorf("type %q status %d", ae.Type(), ae.Status())
				}
			})
		}
	}
	if all := e.records(); len(all.assets) != created || created != 4 {
		t.Errorf("%d assets stored, %d accepted, want 4", len(all.assets), created)
	}
}

// The loophole the contract forbids: the signed URL that real-human assets/get returns cannot
// be given to assets/create to copy a verified person's media into the virtual library (nor
// into another real-human group). The refused URL is never fetched.
func TestRealHumanAssetLinkCannotSeedAnotherAsset(t *testing.T) {
	t.Parallel()
	const pub = "https://mediagen.example.com"
	e := newEnv(t, envOpts{mutate: func(c *Config) {
		b, err := blob.NewFS(filepath.Join(t.TempDir(), "assets"), bytes.Repeat([]byte("k"), 32), pub)
		if err != nil {
			t.Fatal(err)
		}
		c.Blobs, c.PublicURL, c.MinCheck = b, pub, -1
	}})
	V, H := VirtualPrefix, RealHumanPrefix
	hg := e.realHumanGroup(acme)
	ha := e.createIn(acme, H, hg, e.write("me.png", pngBytes(t, 32, 32)), "Image")
	got := e.waitIn(acme, H, ha)
	link, _ := got["URL"].(string)
	if got["Status"] != "Active" || !strings.HasPrefix(link, pub+"/v1/files/assets/"+ha+"/") {
		t.Fatalf("real-human asset %v", got)
	}
	vg := e.virtualGroup(acme)
	other := e.realHumanGroup(acme)
	for _, target := range []struct{ prefix, group string }{{V, vg}, {H, other}, {H, hg}} {
		_, err := e.op(acme, target.prefix+"/assets/create", fmt.Sprintf(`{"GroupId":%q,"URL":%q,"AssetType":"Image"}`, target.group, link))
		wantAPIError(t, err, apierr.KindInvalid, CodeInvalidSourceURL, "URL")
	}
	if m := e.must(acme, V+"/assets/list", `{}`); m["TotalCount"] != 0.0 {
		t.Errorf("virtual assets %v", m)
	}
	if m := e.must(acme, H+"/assets/list", `{}`); !slices.Equal(itemIDs(t, m), []string{ha}) {
		t.Errorf("real-human assets %v", m)
	}
}
