package asset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/apierr"
	"mediagen/internal/catalog"
	"mediagen/internal/keys"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
)

func apiParam(err error) string {
	var e *apierr.Error
	if errors.As(err, &e) {
		return e.Param
	}
	return ""
}

// Every operation decodes strictly: the first problem is reported with the PascalCase field
// it is about.
func TestStrictDecoding(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noRun: true})
	g := e.virtualGroup(acme)
	V, H := VirtualPrefix, RealHumanPrefix
	long := strings.Repeat("x", 129)
	cases := []struct {
		path, body, param, code, msg string
	}{
		{V + "/asset-groups/create", ``, "", "", "empty"},
		{V + "/asset-groups/create", `[]`, "", "", "JSON object"},
		{V + "/asset-groups/create", `{"Name":"a"} {}`, "", "", "after the JSON object"},
		{V + "/asset-groups/create", `{"Name":"a"`, "", "", "ends before"},
		{V + "/asset-groups/create", `{"Name":"a",}`, "", "", "not valid JSON"},
		{V + "/asset-groups/create", `{}`, "Name", "", "Name is required"},
		{V + "/asset-groups/create", `{"Name":" "}`, "Name", "", "must not be empty"},
		{V + "/asset-groups/create", `{"Name":"` + long + `"}`, "Name", "", "longer than 128"},
		{V + "/asset-groups/create", `{"Name":"a\u0007"}`, "Name", "", "control characters"},
		{V + "/asset-groups/create", `{"Name":1}`, "Name", "", "must be a string, not a number"},
		{V + "/asset-groups/create", `{"Name":null}`, "Name", "", "must not be null"},
		{V + "/asset-groups/create", `{"Name":"a","Name":"b"}`, "Name", "", "more than once"},
		{V + "/asset-groups/create", `{"name":"a"}`, "name", "", "case-sensitive, use Name"},
		{V + "/asset-groups/create", `{"Name":"a","Model":"m"}`, "Model", "", "no model field"},
		{V + "/asset-groups/create", `{"Name":"a","model":"m"}`, "model", "", "no model field"},
		{V + "/asset-groups/create", `{"Name":"a","ProjectName":"p"}`, "ProjectName", "", "project, routing"},
		{V + "/asset-groups/create", `{"Name":"a","project_id":"p"}`, "project_id", "", "project, routing"},
		{V + "/asset-groups/create", `{"Name":"a","Region":"cn"}`, "Region", "", "project, routing"},
		{V + "/asset-groups/create", `{"Name":"a","AccessKey":"k"}`, "AccessKey", "", "credentials"},
		{V + "/asset-groups/create", `{"Name":"a","Signature":"s"}`, "Signature", "", "credentials"},
		{V + "/asset-groups/create", `{"Name":"a","Color":"red"}`, "Color", "", "the fields are Name or Description"},
		{V + "/asset-groups/create", `{"Name":"a","Extra":{"x":[1,2]}}`, "Extra", "", "not a supported field"},
		{V + "/asset-groups/list", `{"PageSize":0}`, "PageSize", "", "from 1 to 100"},
		{V + "/asset-groups/list", `{"PageSize":101}`, "PageSize", "", "from 1 to 100"},
		{V + "/asset-groups/list", `{"PageNumber":0}`, "PageNumber", "", "from 1"},
		{V + "/asset-groups/list", `{"PageNumber":1.5}`, "PageNumber", "", "integer"},
		{V + "/asset-groups/list", `{"PageNumber":"1"}`, "PageNumber", "", "must be an integer, not a string"},
		{V + "/asset-groups/list", `{"PageNumber":1e1}`, "PageNumber", "", "without a decimal point"},
		{V + "/asset-groups/list", `{"PageNumber":99999999999999999999}`, "PageNumber", "", "out of range"},
		{V + "/asset-groups/get", `{}`, "Id", "", "Id is required"},
		{V + "/asset-groups/get", `{"Id":""}`, "Id", "", "must not be empty"},
		{V + "/asset-groups/get", `{"Id":"` + long + `"}`, "Id", "", "longer than 128 bytes"},
		{V + "/asset-groups/get", `{"id":"x"}`, "id", "", "use Id"},
		{V + "/asset-groups/get", `{"Id":true}`, "Id", "", "not a boolean"},
		{V + "/asset-groups/update", `{"Id":"` + g + `"}`, "", "", "Send Name, Description"},
		{V + "/asset-groups/update", `{"Id":"` + g + `","Description":"` + strings.Repeat("d", 1025) + `"}`, "Description", "", "1024"},
		{V + "/asset-groups/delete", `{"Id":["x"]}`, "Id", "", "not an array"},
		{V + "/assets/create", `{"URL":"https://a.example.com/x.png","AssetType":"Image"}`, "GroupId", "", "GroupId is required"},
		{V + "/assets/create", `{"GroupId":"` + g + `","AssetType":"Image"}`, "URL", "", "URL is required"},
		{V + "/assets/create", `{"GroupId":"` + g + `","URL":"https://a.example.com/x.png"}`, "AssetType", "", "AssetType is required"},
		{V + "/assets/create", `{"GroupId":"` + g + `","URL":"https://a.example.com/x.png","AssetType":"image"}`, "AssetType", "", "Image, Video or Audio"},
		{V + "/assets/create", `{"GroupId":"` + g + `","URL":"https://a.example.com/x.png","AssetType":"Document"}`, "AssetType", "", "Image, Video or Audio"},
		{V + "/assets/create", `{"GroupId":"` + g + `","URL":"data:image/png;base64,iVBORw0KGgo=","AssetType":"Image"}`, "URL", CodeInvalidSourceURL, "data: URL"},
		{V + "/assets/create", `{"GroupId":"` + g + `","URL":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==","AssetType":"Image"}`, "URL", CodeInvalidSourceURL, "Base64"},
		{V + "/assets/create", `{"GroupId":"` + g + `","URL":"asset://asset_x","AssetType":"Image"}`, "URL", CodeInvalidSourceURL, "another asset"},
		{V + "/assets/create", `{"GroupId":"` + g + `","URL":"file:///etc/passwd","AssetType":"Image"}`, "URL", CodeInvalidSourceURL, "file://"},
		{V + "/assets/create", `{"GroupId":"` + g + `","URL":"http://a.example.com/x.png","AssetType":"Image"}`, "URL", CodeInvalidSourceURL, "https"},
		{V + "/assets/create", `{"GroupId":"` + g + `","URL":"https://a.example.com/a b.png","AssetType":"Image"}`, "URL", CodeInvalidSourceURL, "spaces"},
		{V + "/assets/create", `{"GroupId":"` + g + `","URL":"https://user:pw@a.example.com/x.png","AssetType":"Image"}`, "URL", CodeInvalidSourceURL, "cannot be fetched"},
		{V + "/assets/create", `{"GroupId":"` + g + `","URL":"https://a.example.com/x.png","AssetType":"Image","Base64":"AAAA"}`, "Base64", "", "Base64 and inline upload"},
		{V + "/assets/create", `{"GroupId":"` + g + `","URL":"https://a.example.com/x.png","AssetType":"Image","ProjectName":"p"}`, "ProjectName", "", "project, routing"},
		{V + "/assets/create", `{"GroupId":"` + g + `","URL":"https://a.example.com/x.png","AssetType":"Image","Model":"m"}`, "Model", "", "no model field"},
		{V + "/assets/create", `{"GroupId":"` + g + `","Url":"https://a.example.com/x.png","AssetType":"Image"}`, "Url", "", "use URL"},
		{V + "/assets/create", `{"GroupId":"` + g + `","URL":"https://a.example.com/x.png","AssetType":"Image","Name":""}`, "Name", "", "must not be empty"},
		{V + "/assets/list", `{"AssetType":"Movie"}`, "AssetType", "", "Image, Video or Audio"},
		{V + "/assets/list", `{"Status":"active"}`, "Status", "", "Processing, Active or Failed"},
		{V + "/assets/list", `{"GroupId":""}`, "GroupId", "", "must not be empty"},
		{V + "/assets/update", `{"Id":"asset_x"}`, "Name", "", "Name is required"},
		{V + "/assets/update", `{"Id":"asset_x","Name":"n","GroupId":"` + g + `"}`, "GroupId", CodeMoveNotSupported, "never moved"},
		{V + "/assets/update", `{"Id":"asset_x","Name":"n","URL":"https://a.example.com/y.png"}`, "URL", "", "only Name"},
		{V + "/assets/update", `{"Id":"asset_x","Name":"n","AssetType":"Video"}`, "AssetType", "", "only Name"},
		{H + "/assets/update", `{"Id":"asset_x","Name":"n","GroupId":"` + g + `"}`, "GroupId", CodeMoveNotSupported, "real-human asset cannot become a virtual one"},
		{H + "/validate-result/get", `{}`, "VerifyToken", "", "VerifyToken is required"},
		{H + "/validate-result/get", `{"VerifyToken":""}`, "VerifyToken", "", "must not be empty"},
		{H + "/validate-result/get", `{"VerifyToken":"t","Token":"x"}`, "Token", "", "credentials"},
		{H + "/validate-session/create", `{"CallbackURL":5}`, "CallbackURL", "", "must be a string"},
		{H + "/asset-groups/list", `{"Name":"x"}`, "Name", "", "PageNumber or PageSize"},
	}
	for i, c := range cases {
		_, err := e.op(acme, c.path, c.body)
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Kind != apierr.KindInvalid {
			t.Errorf("case %d %s %s: %v, want 400", i, c.path, c.body, err)
			continue
		}
		if ae.Param != c.param || !strings.Contains(ae.Message, c.msg) || (c.code != "" && ae.Code != c.code) {
			t.Errorf("case %d %s %s: param %q code %q msg %q; want param %q code %q msg containing %q",
				i, c.path, c.body, ae.Param, ae.CodeOrDefault(), ae.Message, c.param, c.code, c.msg)
		}
	}
	// Nothing was created by a rejected request.
	if n, _, _ := e.db.Assets(context.Background(), store.AssetQuery{}); len(n) != 0 {
		t.Errorf("rejected requests created %d assets", len(n))
	}
}

// Groups and assets are scoped to the tenant and to their library; anything else is 404.
func TestScopingAndLibraries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noRun: true})
	ctx := t.Context()
	V, H := VirtualPrefix, RealHumanPrefix
	g := e.virtualGroup(acme)
	a := e.createAsset(acme, g, "https://media.example.com/a.png", "Image")
	hg := store.AssetGroup{ID: "grp_human", TenantID: "acme", Library: store.LibraryRealHuman, Name: "p", Origin: store.GroupOriginVerification,
		Status: store.GroupActive, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := e.db.Transact(ctx, func(tx store.Tx) error { return tx.CreateAssetGroup(ctx, hg) }); err != nil {
		t.Fatal(err)
	}
	ha := e.must(acme, H+"/assets/create", `{"GroupId":"grp_human","URL":"https://media.example.com/me.mp4","AssetType":"Video","Name":"me"}`)["Id"].(string)

	notFound := []struct {
		c                keys.Caller
		path, body, code string
	}{
		// Another tenant's ids.
		{rival, V + "/asset-groups/get", `{"Id":"` + g + `"}`, CodeGroupNotFound},
		{rival, V + "/asset-groups/update", `{"Id":"` + g + `","Name":"x"}`, CodeGroupNotFound},
		{rival, V + "/asset-groups/delete", `{"Id":"` + g + `"}`, CodeGroupNotFound},
		{rival, V + "/assets/get", `{"Id":"` + a + `"}`, CodeAssetNotFound},
		{rival, V + "/assets/update", `{"Id":"` + a + `","Name":"x"}`, CodeAssetNotFound},
		{rival, V + "/assets/delete", `{"Id":"` + a + `"}`, CodeAssetNotFound},
		{rival, V + "/assets/create", `{"GroupId":"` + g + `","URL":"https://m.example.com/a.png","AssetType":"Image"}`, CodeGroupNotFound},
		{rival, V + "/assets/list", `{"GroupId":"` + g + `"}`, CodeGroupNotFound},
		{rival, H + "/assets/get", `{"Id":"` + ha + `"}`, CodeAssetNotFound},
		{rival, H + "/asset-groups/get", `{"Id":"grp_human"}`, CodeGroupNotFound},
		// The libraries are not interchangeable.
		{acme, V + "/assets/get", `{"Id":"` + ha + `"}`, CodeAssetNotFound},
		{acme, V + "/assets/update", `{"Id":"` + ha + `","Name":"x"}`, CodeAssetNotFound},
		{acme, V + "/assets/delete", `{"Id":"` + ha + `"}`, CodeAssetNotFound},
		{acme, V + "/asset-groups/get", `{"Id":"grp_human"}`, CodeGroupNotFound},
		{acme, V + "/asset-groups/delete", `{"Id":"grp_human"}`, CodeGroupNotFound},
		{acme, V + "/assets/create", `{"GroupId":"grp_human","URL":"https://m.example.com/a.png","AssetType":"Image"}`, CodeGroupNotFound},
		{acme, V + "/assets/list", `{"GroupId":"grp_human"}`, CodeGroupNotFound},
		{acme, H + "/assets/get", `{"Id":"` + a + `"}`, CodeAssetNotFound},
		{acme, H + "/asset-groups/get", `{"Id":"` + g + `"}`, CodeGroupNotFound},
		{acme, H + "/asset-groups/update", `{"Id":"` + g + `","Name":"x"}`, CodeGroupNotFound},
		{acme, H + "/assets/create", `{"GroupId":"` + g + `","URL":"https://m.example.com/a.png","AssetType":"Image"}`, CodeGroupNotFound},
		// Unknown ids.
		{acme, V + "/assets/get", `{"Id":"asset_nope"}`, CodeAssetNotFound},
		{acme, V + "/asset-groups/get", `{"Id":"grp_nope"}`, CodeGroupNotFound},
	}
	for i, c := range notFound {
		_, err := e.op(c.c, c.path, c.body)
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Kind != apierr.KindNotFound || ae.Code != c.code {
			t.Errorf("case %d %s %s: %v, want 404 %s", i, c.path, c.body, err, c.code)
		}
	}
	// Lists never show the other tenant's or the other library's records.
	if m := e.must(rival, V+"/assets/list", `{}`); m["TotalCount"] != 0.0 {
		t.Errorf("rival sees %v", m)
	}
	if m := e.must(acme, V+"/assets/list", `{}`); m["TotalCount"] != 1.0 {
		t.Errorf("virtual list %v", m)
	}
	if m := e.must(acme, H+"/assets/list", `{}`); m["TotalCount"] != 1.0 || m["Items"].([]any)[0].(map[string]any)["Id"] != ha {
		t.Errorf("real-human list %v", m)
	}
	if m := e.must(acme, H+"/asset-groups/list", `{}`); m["TotalCount"] != 1.0 {
		t.Errorf("real-human groups %v", m)
	}
	// Everything is still there after the refused attempts.
	if m := e.must(acme, V+"/assets/get", `{"Id":"`+a+`"}`); m["Name"] != "a.png" {
		t.Errorf("asset %v", m)
	}
}

func TestGroupAndAssetOperations(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noRun: true})
	V := VirtualPrefix
	g := e.must(acme, V+"/asset-groups/create", `{"Name":"  Brand kit ","Description":"Logos\nand colours"}`)
	gid := g["Id"].(string)
	if g["Name"] != "Brand kit" || g["Description"] != "Logos\nand colours" || g["Origin"] != "Tenant" || g["Status"] != "Active" || g["AssetCount"] != 0.0 {
		t.Fatalf("created %v", g)
	}
	u := e.must(acme, V+"/asset-groups/update", `{"Id":"`+gid+`","Name":"Kit"}`)
	if u["Name"] != "Kit" || u["Description"] != "Logos\nand colours" {
		t.Errorf("updated %v", u)
	}
	u = e.must(acme, V+"/asset-groups/update", `{"Id":"`+gid+`","Description":""}`)
	if u["Name"] != "Kit" || u["Description"] != nil {
		t.Errorf("description cleared %v", u)
	}
	var ids []string
	for i := 0; i < 5; i++ {
		typ := "Image"
		if i%2 == 1 {
			typ = "Video"
		}
		ids = append(ids, e.createAsset(acme, gid, fmt.Sprintf("https://media.example.com/%d.bin", i), typ))
		time.Sleep(2 * time.Millisecond) // fixed: a spacing so the creation times differ
	}
	if g := e.must(acme, V+"/asset-groups/get", `{"Id":"`+gid+`"}`); g["AssetCount"] != 5.0 {
		t.Errorf("count %v", g)
	}
	// Pages: newest first, TotalCount counts every match.
	p1 := e.must(acme, V+"/assets/list", `{"PageSize":2}`)
	p3 := e.must(acme, V+"/assets/list", `{"PageSize":2,"PageNumber":3}`)
	p4 := e.must(acme, V+"/assets/list", `{"PageSize":2,"PageNumber":4}`)
	items := func(m map[string]any) []string {
		var out []string
		for _, it := range m["Items"].([]any) {
			out = append(out, it.(map[string]any)["Id"].(string))
		}
		return out
	}
	if fmt.Sprint(items(p1)) != fmt.Sprint([]string{ids[4], ids[3]}) || p1["TotalCount"] != 5.0 || p1["PageNumber"] != 1.0 || p1["PageSize"] != 2.0 {
		t.Errorf("page 1 %v", p1)
	}
	if fmt.Sprint(items(p3)) != fmt.Sprint([]string{ids[0]}) || len(items(p4)) != 0 || p4["TotalCount"] != 5.0 {
		t.Errorf("pages 3/4 %v %v", p3, p4)
	}
	if p4["Items"] == nil {
		t.Error("an empty page must carry Items: []")
	}
	if m := e.must(acme, V+"/assets/list", `{"AssetType":"Video","GroupId":"`+gid+`"}`); m["TotalCount"] != 2.0 {
		t.Errorf("video filter %v", m)
	}
	if m := e.must(acme, V+"/assets/list", `{"Status":"Processing"}`); m["TotalCount"] != 5.0 {
		t.Errorf("status filter %v", m)
	}
	if m := e.must(acme, V+"/assets/list", `{"Status":"Active"}`); m["TotalCount"] != 0.0 {
		t.Errorf("status filter %v", m)
	}
	if m := e.must(acme, V+"/assets/list", `{}`); m["PageSize"] != 20.0 || m["PageNumber"] != 1.0 {
		t.Errorf("defaults %v", m)
	}
	a := e.must(acme, V+"/assets/update", `{"Id":"`+ids[0]+`","Name":"hero"}`)
	if a["Name"] != "hero" || a["GroupId"] != gid || a["AssetType"] != "Image" || a["Status"] != "Processing" || a["URL"] != nil {
		t.Errorf("updated asset %v", a)
	}
	if _, err := e.op(acme, V+"/asset-groups/delete", `{"Id":"`+gid+`"}`); apiCode(err) != CodeGroupNotEmpty {
		t.Errorf("delete non-empty group: %v", err)
	}
	for _, id := range ids {
		if d := e.must(acme, V+"/assets/delete", `{"Id":"`+id+`"}`); d["Deleted"] != true || d["Id"] != id {
			t.Errorf("delete %v", d)
		}
	}
	if _, err := e.op(acme, V+"/assets/delete", `{"Id":"`+ids[0]+`"}`); apiCode(err) != CodeAssetNotFound {
		t.Errorf("second delete: %v", err)
	}
	if d := e.must(acme, V+"/asset-groups/delete", `{"Id":"`+gid+`"}`); d["Deleted"] != true {
		t.Errorf("delete group %v", d)
	}
	if m := e.must(acme, V+"/asset-groups/list", `{}`); m["TotalCount"] != 0.0 {
		t.Errorf("groups left %v", m)
	}
}

// Operator-granted groups: the catalog grants and revokes, the admin commands grant and
// revoke; the tenant cannot change or delete them; assets cannot be added to a revoked group
// and its assets cannot be used.
func TestOperatorGroupsAndAuthorization(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noRun: true})
	ctx := t.Context()
	V := VirtualPrefix
	cat := func(groups string) *catalog.Catalog {
		c, err := catalog.Parse("c.yaml", []byte("tenants:\n  - id: acme\n    name: Acme\n    currency: USD\n    virtual_groups:\n"+groups+
			"  - id: rival\n    name: Rival\n    currency: USD\n"))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	two := "      - {id: brand-assets, name: Brand assets, description: From the operator}\n      - {id: stock, name: Stock}\n"
	if g, r, err := SyncCatalog(ctx, e.db, cat(two), time.Now()); err != nil || g != 2 || r != 0 {
		t.Fatalf("sync: %d %d %v", g, r, err)
	}
	if g, r, err := SyncCatalog(ctx, e.db, cat(two), time.Now()); err != nil || g != 0 || r != 0 {
		t.Fatalf("second sync is not idempotent: %d %d %v", g, r, err)
	}
	m := e.must(acme, V+"/asset-groups/get", `{"Id":"brand-assets"}`)
	if m["Origin"] != "Operator" || m["Status"] != "Active" || m["Description"] != "From the operator" {
		t.Fatalf("granted %v", m)
	}
	if _, err := e.op(rival, V+"/asset-groups/get", `{"Id":"brand-assets"}`); apiCode(err) != CodeGroupNotFound {
		t.Errorf("rival sees the grant: %v", err)
	}
	for _, body := range []string{`{"Id":"brand-assets","Name":"x"}`} {
		if _, err := e.op(acme, V+"/asset-groups/update", body); apiCode(err) != CodeGroupReadOnly {
			t.Errorf("update operator group: %v", err)
		}
	}
	if _, err := e.op(acme, V+"/asset-groups/delete", `{"Id":"stock"}`); apiCode(err) != CodeGroupReadOnly {
		t.Errorf("delete operator group: %v", err)
	}
	stockAsset := e.createAsset(acme, "stock", "https://media.example.com/a.png", "Image")
	// Removing a group from the catalog revokes it.
	if g, r, err := SyncCatalog(ctx, e.db, cat("      - {id: brand-assets, name: Brand assets}\n"), time.Now()); err != nil || g != 0 || r != 1 {
		t.Fatalf("sync after removal: %d %d %v", g, r, err)
	}
	if m := e.must(acme, V+"/asset-groups/get", `{"Id":"stock"}`); m["Status"] != "Revoked" {
		t.Errorf("removed group %v", m)
	}
	_, err := e.op(acme, V+"/assets/create", `{"GroupId":"stock","URL":"https://m.example.com/b.png","AssetType":"Image"}`)
	if apiCode(err) != CodeGroupNotAuthorized || apiParam(err) != "GroupId" {
		t.Errorf("create in revoked group: %v", err)
	}
	// Its assets can no longer be used in video requests.
	if _, err := e.svc.Resolve(ctx, "acme", stockAsset); apiCode(err) != CodeGroupNotAuthorized {
		t.Errorf("resolve in revoked group: %v", err)
	}
	// Catalog groups are revoked through the catalog, not the admin command.
	if _, err := Revoke(ctx, e.db, "brand-assets", time.Now()); err == nil || !strings.Contains(err.Error(), "catalog") {
		t.Errorf("admin revoke of a catalog group: %v", err)
	}
	// Admin grants: a new group, and re-authorization of a revoked tenant group.
	own := e.virtualGroup(acme)
	if _, err := Revoke(ctx, e.db, own, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.op(acme, V+"/assets/create", `{"GroupId":"`+own+`","URL":"https://m.example.com/b.png","AssetType":"Image"}`); apiCode(err) != CodeGroupNotAuthorized {
		t.Errorf("create in revoked own group: %v", err)
	}
	// As the operator plane grants (internal/admin): GrantIn inside its transaction.
	grant := func(tenantID, id, name string) (g store.AssetGroup, created bool, err error) {
		err = e.db.Transact(ctx, func(tx store.Tx) error {
			g, created, err = GrantIn(ctx, tx, tenantID, id, name, "", time.Now())
			return err
		})
		return g, created, err
	}
	if _, created, err := grant("acme", own, ""); err != nil || created {
		t.Fatalf("re-grant: %v %v", created, err)
	}
	e.createAsset(acme, own, "https://media.example.com/c.png", "Image")
	ng, created, err := grant("rival", "", "Rival stock")
	if err != nil || !created || ng.Origin != store.GroupOriginOperator {
		t.Fatalf("grant: %+v %v %v", ng, created, err)
	}
	if _, _, err := grant("rival", own, ""); err == nil {
		t.Error("granted another tenant's group")
	}
	if _, _, err := grant("acme", "new group!", "x"); err == nil {
		t.Error("accepted a malformed id")
	}
	// A catalog id taken by another group stops the sync.
	clash, _ := catalog.Parse("c.yaml", []byte("tenants:\n  - id: rival\n    name: R\n    currency: USD\n    virtual_groups:\n      - {id: "+own+", name: X}\n"))
	if _, _, err := SyncCatalog(ctx, e.db, clash, time.Now()); err == nil {
		t.Error("catalog took over another tenant's group")
	}
}

// Resolve is the video service's view of an asset:// reference.
func TestResolve(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	mp4, _ := clips(t)
	ctx := t.Context()
	g := e.virtualGroup(acme)
	vid := e.createAsset(acme, g, e.write("clip.mp4", mp4), "Video")
	e.wait(acme, vid)
	bad := e.createAsset(acme, g, e.write("x.txt", []byte("hello")), "Image")
	e.wait(acme, bad)

	a, err := e.svc.Resolve(ctx, "acme", vid)
	if err != nil || a.Status != "Active" || a.Type != "Video" || a.Duration < 1.4 || a.Duration > 1.6 {
		t.Fatalf("resolve %+v %v", a, err)
	}
	if !strings.Contains(a.AccessURL, "/v1/files/assets/"+vid+"/") || !strings.Contains(a.AccessURL, "sig=") || a.Path == "" {
		t.Errorf("access %q %q", a.AccessURL, a.Path)
	}
	// Fresh access on every resolve: links carry their expiry in whole seconds.
	testkit.NextSecond()
	if b, _ := e.svc.Resolve(ctx, "acme", vid); b.AccessURL == a.AccessURL {
		t.Error("access link not minted fresh")
	}
	if _, err := e.svc.Resolve(ctx, "rival", vid); !errors.Is(err, ErrNotFound) {
		t.Errorf("rival: %v", err)
	}
	if _, err := e.svc.Resolve(ctx, "acme", "asset_nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown: %v", err)
	}
	if f, err := e.svc.Resolve(ctx, "acme", bad); err != nil || f.Status != "Failed" || f.AccessURL != "" {
		t.Errorf("failed asset %+v %v", f, err)
	}
}

// The catalog refuses malformed and duplicated virtual groups at load.
func TestCatalogVirtualGroupsChecked(t *testing.T) {
	t.Parallel()
	head := "tenants:\n  - id: acme\n    name: A\n    currency: USD\n    virtual_groups:\n"
	for _, c := range []struct{ groups, want string }{
		{"      - {id: a, name: A}\n      - {id: a, name: B}\n", "already defined"},
		{"      - {id: 'bad id', name: A}\n", "must be 1-128"},
		{"      - {id: ok, name: ' '}\n", "needs a name"},
		{"      - {id: ok, name: A, colour: red}\n", "colour"},
	} {
		if _, err := catalog.Parse("c.yaml", []byte(head+c.groups)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.groups, err, c.want)
		}
	}
	if _, err := catalog.Parse("c.yaml", []byte(head+"      - {id: brand.assets-1, name: Brand, description: x}\n")); err != nil {
		t.Error(err)
	}
}

// Without Name, assets/create names the asset after the last segment of the URL's path,
// percent-decoded. That name obeys the rules of a Name the client sends: a decoded segment
// that does not (invalid UTF-8, control characters, only white space) is used as it is
// written in the URL (percent-encoded, so printable ASCII), and "asset" stands in when the
// path has no segment. assets/get and assets/list keep answering.
func TestDefaultNameFromURLObeysTheNameRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noRun: true})
	ctx := t.Context()
	V := VirtualPrefix
	g := e.virtualGroup(acme)
	long := strings.Repeat("é", 200)
	cases := []struct{ name, path, want string }{
		{"plain segment", "/clips/intro.mp4", "intro.mp4"},
		{"decoded UTF-8", "/caf%C3%A9.png", "café.png"},
		{"trimmed like a Name", "/%20logo.png%20", "logo.png"},
		{"cut to 128 characters", "/" + long, strings.Repeat("é", MaxNameChars)},
		{"invalid UTF-8 as written", "/%ff", "%ff"},
		{"Latin-1 byte as written", "/caf%E9.png", "caf%E9.png"},
		{"invalid UTF-8 past the cut as written", "/%ff" + strings.Repeat("a", 200), "%ff" + strings.Repeat("a", MaxNameChars-3)},
		{"NUL as written", "/%00", "%00"},
		{"newline as written", "/a%0Ab.png", "a%0Ab.png"},
		{"DEL as written", "/%7F", "%7F"},
		{"C1 control percent-encoded", "/%C2%85", "%C2%85"},
		{"C1 control sent raw", "/\u0085", "%C2%85"},
		{"only white space as written", "/%20%20", "%20%20"},
		{"no segment gets the default", "/", "asset"},
		{"no path gets the default", "", "asset"},
	}
	for _, c := range cases {
		body, _ := json.Marshal(map[string]string{"GroupId": g, "URL": "https://media.example.com" + c.path, "AssetType": "Image"})
		m, err := e.op(acme, V+"/assets/create", string(body))
		if err != nil {
			t.Errorf("%s: create: %v", c.name, err)
			continue
		}
		id := m["Id"].(string)
		a, err := e.db.Asset(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if a.Name != c.want {
			t.Errorf("%s: name %q, want %q", c.name, a.Name, c.want)
		}
		// The stored name passes the rules of a client's Name, so it could have been sent.
		if _, aerr := checkText("Name", a.Name, MaxNameChars, true, false); aerr != nil || strings.TrimSpace(a.Name) != a.Name {
			t.Errorf("%s: stored name %q breaks the Name rules: %v", c.name, a.Name, aerr)
		}
		if got := e.must(acme, V+"/assets/get", `{"Id":"`+id+`"}`); got["Name"] != c.want {
			t.Errorf("%s: assets/get name %v", c.name, got["Name"])
		}
	}
	if l := e.must(acme, V+"/assets/list", `{"PageSize":100}`); l["TotalCount"] != float64(len(cases)) {
		t.Errorf("assets/list %v", l)
	}
}
