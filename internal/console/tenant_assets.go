package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/asset"
	"mediagen/internal/contract"
	"mediagen/internal/keys"
	"mediagen/internal/store"
)

// assetLibrary is one of the two asset libraries as the console names it.
type assetLibrary struct {
	Param  string // the lib query value
	Name   string
	prefix string // the API's path prefix: the console runs the same operations
	// CanCreateGroups: tenants create virtual groups; real-human groups come from a passed
	// verification only.
	CanCreateGroups bool
}

var assetLibraries = []assetLibrary{
	{Param: "virtual", Name: "Virtual", prefix: asset.VirtualPrefix, CanCreateGroups: true},
	{Param: "real-human", Name: "Real-human", prefix: asset.RealHumanPrefix},
}

func findLibrary(param string) (assetLibrary, bool) {
	if param == "" {
		return assetLibraries[0], true
	}
	for _, l := range assetLibraries {
		if l.Param == param {
			return l, true
		}
	}
	return assetLibrary{}, false
}

// Groups the page loads for its filter and forms: the API's largest page. A tenant with more
// is told so; the filter by id in the URL still works for any group.
const assetGroupsShown = asset.MaxPageSize

// assetTypes are the AssetType values of assets/create, for the form's choice.
var assetTypes = []string{asset.TypeImage, asset.TypeVideo, asset.TypeAudio}

// assetsPage is the data of tenant_assets.html.
type assetsPage struct {
	Disabled    bool
	Libraries   []assetLibrary
	Lib         assetLibrary
	Groups      []groupRow
	GroupsTotal int
	Group       string // the group filter ("" for every group)
	Assets      []assetRow
	AssetsTotal int
	Page        int
	Prev, Next  string
	Created     string // the asset just registered
	NewGroup    string // the group just created
	Types       []string
	Form        assetForm
	GroupForm   groupForm
}

// assetForm is the register-by-URL form: its values and the messages next to its fields.
type assetForm struct {
	Group, URL, Type, Name                      string
	GroupErr, URLErr, TypeErr, NameErr, Problem string
}

// groupForm is the create-group form.
type groupForm struct {
	Name, Description                string
	NameErr, DescriptionErr, Problem string
}

// assetRow is one asset of the list.
type assetRow struct {
	contract.Asset
	GroupName string
}

// Badge is the status badge's class.
func (a assetRow) Badge() string { return strings.ToLower(a.Status) }

// Thumb tells whether the asset has an image to show: an Active image's link.
func (a assetRow) Thumb() bool { return a.AssetType == asset.TypeImage && a.URL != "" }

// Created is when the asset was registered.
func (a assetRow) Created() time.Time { return time.Unix(a.CreatedAt, 0) }

// Active groups can take new assets.
func (p assetsPage) ActiveGroups() []groupRow {
	var out []groupRow
	for _, g := range p.Groups {
		if g.Status == store.GroupActive {
			out = append(out, g)
		}
	}
	return out
}

// MoreGroups tells that the tenant has more groups than the page loaded.
func (p assetsPage) MoreGroups() bool { return p.GroupsTotal > len(p.Groups) }

// GroupName names the filtered group.
func (p assetsPage) GroupName() string {
	for _, g := range p.Groups {
		if g.ID == p.Group {
			return g.Name
		}
	}
	return p.Group
}

// Pages is the number of pages of the list.
func (p assetsPage) Pages() int { return max(1, (p.AssetsTotal+PageSize-1)/PageSize) }

// groupRow is one asset group.
type groupRow struct{ contract.AssetGroup }

// Badge is the status badge's class.
func (g groupRow) Badge() string { return strings.ToLower(g.Status) }

// runAsset runs the asset API's operation at path for the caller with body as its JSON: the
// console goes through the same use case, validation and messages as the API.
func runAsset[T any](ctx context.Context, svc *asset.Service, c keys.Caller, path string, body any) (T, error) {
	var zero T
	raw, err := json.Marshal(body)
	if err != nil {
		return zero, fmt.Errorf("console: asset request: %w", err)
	}
	for _, op := range svc.Operations() {
		if op.Path != path {
			continue
		}
		out, err := op.Run(ctx, c, raw)
		if err != nil {
			return zero, err
		}
		v, ok := out.(T)
		if !ok {
			return zero, fmt.Errorf("console: asset operation %s answered %T", path, out)
		}
		return v, nil
	}
	return zero, fmt.Errorf("console: no asset operation %s", path)
}

// assetsQuery is what the page shows: library, group filter, page.
type assetsQuery struct {
	lib     assetLibrary
	group   string
	page    int
	created string
	newGrp  string
}

func parseAssetsQuery(v url.Values) (assetsQuery, error) {
	lib, ok := findLibrary(v.Get("lib"))
	if !ok {
		return assetsQuery{}, apierr.Invalid("lib", "Choose the virtual or the real-human library.")
	}
	q := assetsQuery{lib: lib, group: v.Get("group"), page: 1, created: v.Get("created"), newGrp: v.Get("newgroup")}
	if s := v.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return assetsQuery{}, apierr.Invalid("page", "The page number must be a whole number from 1.")
		}
		q.page = n
	}
	return q, nil
}

// assetsURL is the page's address for a library, group and page.
func assetsURL(lib assetLibrary, group string, page int) string {
	v := url.Values{"lib": {lib.Param}}
	if group != "" {
		v.Set("group", group)
	}
	if page > 1 {
		v.Set("page", strconv.Itoa(page))
	}
	return "/console/assets?" + v.Encode()
}

// loadAssets reads the library's groups and one page of its assets through the asset API's
// list operations.
func (t *Tenant) loadAssets(ctx context.Context, c keys.Caller, q assetsQuery) (assetsPage, error) {
	p := assetsPage{Libraries: assetLibraries, Lib: q.lib, Group: q.group, Page: q.page, Types: assetTypes,
		Created: q.created, NewGroup: q.newGrp}
	groups, err := runAsset[contract.AssetGroupList](ctx, t.cfg.Assets, c, q.lib.prefix+"/asset-groups/list",
		map[string]any{"PageNumber": 1, "PageSize": assetGroupsShown})
	if err != nil {
		return p, err
	}
	for _, g := range groups.Items {
		p.Groups = append(p.Groups, groupRow{g})
	}
	p.GroupsTotal = groups.TotalCount
	req := map[string]any{"PageNumber": q.page, "PageSize": PageSize}
	if q.group != "" {
		req["GroupId"] = q.group
	}
	assets, err := runAsset[contract.AssetList](ctx, t.cfg.Assets, c, q.lib.prefix+"/assets/list", req)
	if err != nil {
		return p, err
	}
	names := map[string]string{}
	for _, g := range p.Groups {
		names[g.ID] = g.Name
	}
	for _, a := range assets.Items {
		p.Assets = append(p.Assets, assetRow{Asset: a, GroupName: names[a.GroupID]})
	}
	p.AssetsTotal = assets.TotalCount
	if q.page > 1 {
		p.Prev = assetsURL(q.lib, q.group, q.page-1)
	}
	if q.page*PageSize < assets.TotalCount {
		p.Next = assetsURL(q.lib, q.group, q.page+1)
	}
	p.Form.Group = q.group
	return p, nil
}

// assets answers GET /console/assets: the tenant's groups and assets of one library.
func (t *Tenant) assets(w http.ResponseWriter, r *http.Request, s *Session) error {
	if t.cfg.Assets == nil {
		t.Render(w, r, s, "tenant_assets", "Assets", assetsPage{Disabled: true})
		return nil
	}
	q, err := parseAssetsQuery(r.URL.Query())
	if err != nil {
		return err
	}
	p, err := t.loadAssets(r.Context(), s.Caller, q)
	if err != nil {
		return err
	}
	t.Render(w, r, s, "tenant_assets", "Assets", p)
	return nil
}

// admit applies the public API's limits to a console write.
func (t *Tenant) admit(c keys.Caller) (func(), error) {
	if t.cfg.Admit == nil {
		return func() {}, nil
	}
	return t.cfg.Admit(c)
}

// shownOnForm tells whether an error of a write is the person's to fix (shown on the form)
// rather than the service's (the error page).
func shownOnForm(err error) (*apierr.Error, bool) {
	e := apierr.As(err)
	return e, e.Kind != apierr.KindInternal && e.Kind != apierr.KindUnavailable
}

// registerAsset answers POST /console/assets: assets/create of the chosen group's library,
// then back to the list with the new asset in it (Processing until the asset jobs copy it).
func (t *Tenant) registerAsset(w http.ResponseWriter, r *http.Request, s *Session) error {
	if t.cfg.Assets == nil {
		t.render(w, r, s, http.StatusServiceUnavailable, "tenant_assets", "Assets", assetsPage{Disabled: true})
		return nil
	}
	f := r.PostForm
	q, err := parseAssetsQuery(url.Values{"lib": {f.Get("lib")}, "group": {f.Get("filter")}})
	if err != nil {
		return err
	}
	form := assetForm{Group: f.Get("group"), URL: strings.TrimSpace(f.Get("url")), Type: f.Get("type"), Name: f.Get("name")}
	req := map[string]any{"GroupId": form.Group, "URL": form.URL, "AssetType": form.Type}
	if strings.TrimSpace(form.Name) != "" {
		req["Name"] = form.Name
	}
	end, err := t.admit(s.Caller)
	if err == nil {
		var made contract.AssetCreated
		made, err = runAsset[contract.AssetCreated](r.Context(), t.cfg.Assets, s.Caller, q.lib.prefix+"/assets/create", req)
		end()
		if err == nil {
			v := url.Values{"lib": {q.lib.Param}, "group": {form.Group}, "created": {made.ID}}
			http.Redirect(w, r, "/console/assets?"+v.Encode(), http.StatusSeeOther)
			return nil
		}
	}
	e, ok := shownOnForm(err)
	if !ok {
		return err
	}
	switch e.Param {
	case "GroupId":
		form.GroupErr = e.Message
	case "URL":
		form.URLErr = e.Message
	case "AssetType":
		form.TypeErr = e.Message
	case "Name":
		form.NameErr = e.Message
	default:
		form.Problem = e.Message
	}
	p, lerr := t.loadAssets(r.Context(), s.Caller, q)
	if lerr != nil {
		return lerr
	}
	p.Form = form
	t.render(w, r, s, e.Status(), "tenant_assets", "Assets", p)
	return nil
}

// createGroup answers POST /console/assets/groups: asset-groups/create (virtual library).
func (t *Tenant) createAssetGroup(w http.ResponseWriter, r *http.Request, s *Session) error {
	if t.cfg.Assets == nil {
		t.render(w, r, s, http.StatusServiceUnavailable, "tenant_assets", "Assets", assetsPage{Disabled: true})
		return nil
	}
	f := r.PostForm
	form := groupForm{Name: f.Get("name"), Description: f.Get("description")}
	req := map[string]any{"Name": form.Name}
	if strings.TrimSpace(form.Description) != "" {
		req["Description"] = form.Description
	}
	lib := assetLibraries[0]
	end, err := t.admit(s.Caller)
	if err == nil {
		var made contract.AssetGroup
		made, err = runAsset[contract.AssetGroup](r.Context(), t.cfg.Assets, s.Caller, lib.prefix+"/asset-groups/create", req)
		end()
		if err == nil {
			v := url.Values{"lib": {lib.Param}, "group": {made.ID}, "newgroup": {made.ID}}
			http.Redirect(w, r, "/console/assets?"+v.Encode(), http.StatusSeeOther)
			return nil
		}
	}
	e, ok := shownOnForm(err)
	if !ok {
		return err
	}
	switch e.Param {
	case "Name":
		form.NameErr = e.Message
	case "Description":
		form.DescriptionErr = e.Message
	default:
		form.Problem = e.Message
	}
	p, lerr := t.loadAssets(r.Context(), s.Caller, assetsQuery{lib: lib, page: 1})
	if lerr != nil {
		return lerr
	}
	p.GroupForm = form
	t.render(w, r, s, e.Status(), "tenant_assets", "Assets", p)
	return nil
}

// assetStatus is the JSON of GET /console/assets/{id}/status, polled by console.js for the
// asset just registered: the page reloads when processing has ended.
type assetStatus struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Terminal bool   `json:"terminal"`
}

// Poll is the status URL of an asset still being processed that the page watches ("" for
// none): only the one just registered, so a page of Processing assets is not a burst of polls.
func (p assetsPage) Poll(a assetRow) string {
	if a.ID != p.Created || a.Status != store.AssetProcessing {
		return ""
	}
	return "/console/assets/" + url.PathEscape(a.ID) + "/status?lib=" + p.Lib.Param
}

// assetStatus answers GET /console/assets/{id}/status through assets/get.
func (t *Tenant) assetStatus(w http.ResponseWriter, r *http.Request, s *Session) error {
	if t.cfg.Assets == nil {
		return apierr.New(apierr.KindNotFound, "The asset library is not enabled on this server.")
	}
	q, err := parseAssetsQuery(url.Values{"lib": {r.URL.Query().Get("lib")}})
	if err != nil {
		return err
	}
	a, err := runAsset[contract.Asset](r.Context(), t.cfg.Assets, s.Caller, q.lib.prefix+"/assets/get", map[string]any{"Id": r.PathValue("id")})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(assetStatus{ID: a.ID, Status: a.Status, Terminal: a.Status != store.AssetProcessing})
}
