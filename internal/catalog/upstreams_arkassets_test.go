package catalog

import (
	"strings"
	"testing"
)

// withArkAssets binds acme's asset library and its Seedance account to one ModelArk account.
const withArkAssets = `upstreams:
  - name: ark-lib
    kind: ark_assets
    base_url: https://open.volcengineapi.com
    region: cn-beijing
    access_key_env: VOLC_ACCESSKEY
    secret_key_env: VOLC_SECRETKEY
  - name: ark-main
    kind: ark
    base_url: https://ark.cn-beijing.volces.com/api/v3
    api_key_env: ARK_API_KEY
    asset_library: ark-lib
tenants:
  - id: acme
    name: Acme
    currency: EUR
    asset_library: ark-lib
    aliases:
      - alias: acme-seedance
        product: native
        family: fast-2.0
        upstream: ark-main
        model: doubao-seedance-2-0-260128
    rates:
      native:
        acme-seedance: 1.5
`

func TestArkAssetsBindsPerTenantAndPerArkAccount(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(withArkAssets))
	if err != nil {
		t.Fatal(err)
	}
	lib, ok := c.Library("acme")
	if !ok || lib.Name != "ark-lib" || lib.Kind != KindArkAssets {
		t.Fatalf("library of acme: %+v %v", lib, ok)
	}
	if _, ok := c.Library("nobody"); ok {
		t.Fatal("an unknown tenant has a library")
	}
	env := map[string]string{"VOLC_ACCESSKEY": "ak", "VOLC_SECRETKEY": "sk"}
	if a, s, err := lib.KlingKeys(func(k string) string { return env[k] }, nil); err != nil || a != "ak" || s != "sk" {
		t.Fatalf("keys %q %q %v", a, s, err)
	}
}

func TestArkAssetsCatalogRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"a library without a region", "    region: cn-beijing\n", "", "region must be"},
		{"a library with an API key", "    secret_key_env: VOLC_SECRETKEY\n", "    secret_key_env: VOLC_SECRETKEY\n    api_key_env: X\n", "signs its requests"},
		{"a tenant bound to an ark account", "    asset_library: ark-lib\n    aliases:", "    asset_library: ark-main\n    aliases:", `tenant "acme": asset_library "ark-main" is not an account of kind ark_assets`},
		{"an ark account naming a missing library", "    api_key_env: ARK_API_KEY\n    asset_library: ark-lib\n", "    api_key_env: ARK_API_KEY\n    asset_library: nope\n", `asset_library "nope" is not an account`},
		{"an alias bound to the library", "        upstream: ark-main\n", "        upstream: ark-lib\n", "ark-lib"},
		{"region on an ark account", "    asset_library: ark-lib\ntenants", "    asset_library: ark-lib\n    region: cn-beijing\ntenants", "apply to kind ark_assets only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			text := strings.Replace(withArkAssets, tc.from, tc.to, 1)
			if text == withArkAssets {
				t.Fatal("the edit did not apply")
			}
			_, err := Parse("c.yaml", []byte(text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
