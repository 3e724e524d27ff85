package httpapi

import (
	"bytes"
	"testing"

	"mediagen/internal/catalog"
	"mediagen/internal/money"
)

// sameAnswer fails unless got is the answer want is: the same status and the same body.
func sameAnswer(t *testing.T, what string, got, want response) {
	t.Helper()
	if got.status != want.status || !bytes.Equal(got.body, want.body) {
		t.Errorf("%s: %d %s\nwant the answer to an unknown id: %d %s", what, got.status, got.body, want.status, want.body)
	}
}

// An id no id of ours can be (a NUL, bytes that are not UTF-8) is not found, exactly as an
// unknown id: PostgreSQL refuses such text parameters with an error, which used to reach the
// client as a 500 while SQLite answered 404.
func TestIdsThatCannotBeOursAreNotFoundOnEveryStore(t *testing.T) {
	t.Parallel()
	for _, driver := range testDrivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			e := newTestEnvOn(t, driver, catalog.Demo(), nil, 1024)
			key, _ := e.newKey("demo", money.Micros(money.Scale), false)
			auth := map[string]string{"Authorization": "Bearer " + key}
			unknown := e.do("GET", "/v1/videos/video_23ocdhtbfy6sexic4bg6gnlh2s", auth, "")
			checkEnvelope(t, unknown, 404, "not_found_error", "not_found")
			for _, id := range []string{"%00", "%FF", "video_%00", "%C3%28", "a%0Ab", "%E2%80%8B", "a%20b", "a.b"} {
				sameAnswer(t, "GET /v1/videos/"+id, e.do("GET", "/v1/videos/"+id, auth, ""), unknown)
			}

			a := newAssetEnvOn(t, driver)
			gid := a.ok(a.acme, vPrefix+"/asset-groups/create", `{"Name":"g"}`, 200)["Id"].(string)
			src := `"URL":"https://cdn.example.com/a.png","AssetType":"Image"`
			for _, c := range []struct{ path, bad, unknown string }{
				{vPrefix + "/asset-groups/get", `{"Id":"\u0000"}`, `{"Id":"grp_nope"}`},
				{hPrefix + "/asset-groups/get", `{"Id":"grp_\u0000"}`, `{"Id":"grp_nope"}`},
				{vPrefix + "/asset-groups/update", `{"Id":"\u0000","Name":"x"}`, `{"Id":"grp_nope","Name":"x"}`},
				{vPrefix + "/asset-groups/delete", `{"Id":"\u0000"}`, `{"Id":"grp_nope"}`},
				{vPrefix + "/assets/get", `{"Id":"\u0000"}`, `{"Id":"asset_nope"}`},
				{hPrefix + "/assets/get", `{"Id":"a\u0000"}`, `{"Id":"asset_nope"}`},
				{vPrefix + "/assets/update", `{"Id":"\u0000","Name":"x"}`, `{"Id":"asset_nope","Name":"x"}`},
				{vPrefix + "/assets/delete", `{"Id":"\u0000"}`, `{"Id":"asset_nope"}`},
				{vPrefix + "/assets/create", `{"GroupId":"\u0000",` + src + `}`, `{"GroupId":"grp_nope",` + src + `}`},
				{hPrefix + "/assets/create", `{"GroupId":"` + gid + `\u0000",` + src + `}`, `{"GroupId":"grp_nope",` + src + `}`},
				{vPrefix + "/assets/list", `{"GroupId":"\u0000"}`, `{"GroupId":"grp_nope"}`},
				{vPrefix + "/assets/list", `{"GroupId":"\u00e9"}`, `{"GroupId":"grp_nope"}`},
				{hPrefix + "/validate-result/get", `{"VerifyToken":"vt_\u0000"}`, `{"VerifyToken":"vt_nope"}`},
			} {
				unknown := a.call(a.acme, c.path, c.unknown)
				if unknown.status != 404 {
					t.Fatalf("%s %s: %d %s, want 404", c.path, c.unknown, unknown.status, unknown.body)
				}
				sameAnswer(t, c.path+" "+c.bad, a.call(a.acme, c.path, c.bad), unknown)
			}
			if l := a.ok(a.acme, vPrefix+"/assets/list", `{}`, 200); l["TotalCount"] != 0.0 {
				t.Errorf("refused requests left assets: %v", l)
			}
		})
	}
}
