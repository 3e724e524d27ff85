package contract

import (
	"net/url"
	"strconv"
	"strings"

	"mediagen/internal/apierr"
)

// Limits on metadata.content, from the contract's Limits table.
const (
	MaxContentItems    = 50
	MaxReferenceImages = 30
	MaxReferenceVideos = 10
	MaxReferenceAudios = 10
	MaxURLBytes        = 4096 // not in the contract; bounds what is stored and forwarded
	MaxAssetIDBytes    = 128  // not in the contract; ids are opaque and short
)

// Edit mode needs a reference video of this many seconds. The length is measured by the
// service (media probe), not declared by the client, so it is checked outside this package.
const (
	EditReferenceMinSeconds = 4
	EditReferenceMaxSeconds = 30
)

// roleType is the only content type each role may have.
var roleType = map[ContentRole]ContentType{
	RoleReferenceImage: TypeImage,
	RoleFirstFrame:     TypeImage,
	RoleLastFrame:      TypeImage,
	RoleReferenceVideo: TypeVideo,
	RoleReferenceAudio: TypeAudio,
}

var (
	contentTypes = []string{string(TypeImage), string(TypeVideo), string(TypeAudio)}
	contentRoles = []string{string(RoleReferenceImage), string(RoleReferenceVideo), string(RoleReferenceAudio), string(RoleFirstFrame), string(RoleLastFrame)}
	itemFields   = []string{"type", "role", "image_url", "video_url", "audio_url"}
)

// decodeContent reads metadata.content: items in order, each with a consistent type and role
// and exactly the media object of its type, within the per-role and total limits.
func decodeContent(meta object) ([]ContentItem, *apierr.Error) {
	v, err := meta.expect("content", '[', "an array")
	if v == nil {
		return nil, err
	}
	param := meta.param("content")
	if len(v.elems) > MaxContentItems {
		return nil, invalidf(param, "%s has %d items; at most %d are allowed.", param, len(v.elems), MaxContentItems)
	}
	items := make([]ContentItem, 0, len(v.elems))
	counts := map[ContentRole]int{}
	for i, e := range v.elems {
		ip := joinIndex(param, i)
		if e.kind != '{' {
			return nil, invalidf(ip, "%s must be an object, not %s.", ip, KindName(byte(e.kind)))
		}
		it, err := decodeItem(object{path: ip, n: e})
		if err != nil {
			return nil, err
		}
		counts[it.Role]++
		if err := checkRoleCount(it.Role, counts[it.Role], ip); err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	labelItems(items)
	return items, nil
}

func checkRoleCount(r ContentRole, n int, ip string) *apierr.Error {
	limit := map[ContentRole]int{
		RoleReferenceImage: MaxReferenceImages,
		RoleReferenceVideo: MaxReferenceVideos,
		RoleReferenceAudio: MaxReferenceAudios,
		RoleFirstFrame:     1,
		RoleLastFrame:      1,
	}[r]
	if n <= limit {
		return nil
	}
	if limit == 1 {
		return invalidf(ip+".role", "Only one %s item is allowed in metadata.content.", r)
	}
	return invalidf(ip, "At most %d %s items are allowed in metadata.content.", limit, r)
}

func decodeItem(o object) (ContentItem, *apierr.Error) {
	var it ContentItem
	if err := o.checkFields(itemFields, "a content item", func(name string) string { return itemHint(name, o.param(name)) }); err != nil {
		return it, err
	}
	typ, ok, err := o.enum("type", contentTypes...)
	if err != nil {
		return it, err
	}
	if !ok {
		return it, invalidf(o.param("type"), "%s is required: one of %s.", o.param("type"), OrList(contentTypes))
	}
	role, ok, err := o.enum("role", contentRoles...)
	if err != nil {
		return it, err
	}
	if !ok {
		return it, invalidf(o.param("role"), "%s is required: one of %s.", o.param("role"), OrList(contentRoles))
	}
	it.Type, it.Role = ContentType(typ), ContentRole(role)
	if want := roleType[it.Role]; want != it.Type {
		return it, invalidf(o.param("role"), "Role %s requires type %s, but the item has type %s.", role, want, typ)
	}
	// The object matching the type carries the URL; the other two must be absent so that an
	// item can never be read two ways.
	for _, t := range contentTypes {
		if t != typ && o.has(t) {
			return it, invalidf(o.param(t), "%s must not be present on an item of type %s.", o.param(t), typ)
		}
	}
	media, ok, err := o.obj(typ)
	if err != nil {
		return it, err
	}
	if !ok {
		return it, invalidf(o.param(typ), "%s is required for type %s: { \"url\": \"https://…\" }.", o.param(typ), typ)
	}
	if err := media.checkFields([]string{"url"}, "a media object", func(name string) string { return itemHint(name, media.param(name)) }); err != nil {
		return it, err
	}
	u, ok, err := media.str("url")
	if err != nil {
		return it, err
	}
	if !ok {
		return it, invalidf(media.param("url"), "%s is required.", media.param("url"))
	}
	it.URL = u
	it.IsAsset, it.AssetID, err = checkReferenceURL(media.param("url"), u)
	return it, err
}

// labelItems numbers items by type in request order, the names prompts use (@Image1…).
func labelItems(items []ContentItem) {
	var img, vid, aud int
	for i := range items {
		switch items[i].Type {
		case TypeImage:
			img++
			items[i].Label = "@Image" + strconv.Itoa(img)
		case TypeVideo:
			vid++
			items[i].Label = "@Video" + strconv.Itoa(vid)
		case TypeAudio:
			aud++
			items[i].Label = "@Audio" + strconv.Itoa(aud)
		}
	}
}

// Labels returns the prompt names of items (@Image1, @Video1, @Audio1, …), numbered by order
// within each type. Frame items are images and share the image numbering.
func Labels(items []ContentItem) []string {
	c := append([]ContentItem(nil), items...)
	labelItems(c)
	out := make([]string, len(c))
	for i := range c {
		out[i] = c[i].Label
	}
	return out
}

const assetScheme = "asset://"

// checkReferenceURL accepts an absolute https URL with a host, or asset://<id>. Whether the
// host is reachable and public, and whether the asset exists and is Active, is for the caller.
func checkReferenceURL(param, s string) (isAsset bool, assetID string, err *apierr.Error) {
	if err := checkURLText(param, s); err != nil {
		return false, "", err
	}
	if len(s) >= len(assetScheme) && strings.EqualFold(s[:len(assetScheme)], assetScheme) {
		id := s[len(assetScheme):]
		if !validAssetID(id) {
			return false, "", invalidf(param, "%s must be asset://<asset_id> where the id is 1 to %d letters, digits, '.', '_' or '-', starting with a letter or digit.", param, MaxAssetIDBytes)
		}
		return true, id, nil
	}
	u, perr := url.Parse(s)
	if perr != nil || u.Scheme == "" {
		return false, "", invalidf(param, "%s must be an absolute https URL or asset://<asset_id>; inline data and Base64 are not supported.", param)
	}
	switch u.Scheme {
	case "https":
	case "http":
		return false, "", invalidf(param, "%s must use https; plain http is not accepted for reference media.", param)
	default:
		return false, "", invalidf(param, "%s must be an https URL or asset://<asset_id>; the %s scheme is not supported.", param, u.Scheme)
	}
	if err := checkHost(param, u); err != nil {
		return false, "", err
	}
	return false, "", nil
}

// checkVideoSourceURL is the enhancement source rule: direct http(s), never asset:// or data:.
func checkVideoSourceURL(param, s string) *apierr.Error {
	if err := checkURLText(param, s); err != nil {
		return err
	}
	if len(s) >= len(assetScheme) && strings.EqualFold(s[:len(assetScheme)], assetScheme) {
		return invalidf(param, "%s does not accept asset:// URIs; pass a public direct http(s) URL of the source video.", param)
	}
	u, perr := url.Parse(s)
	if perr != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return invalidf(param, "%s must be an absolute http(s) URL of the source video.", param)
	}
	return checkHost(param, u)
}

// checkURLText rejects what is never a usable URL before parsing: empty, oversized, data:,
// whitespace or control characters (url.Parse tolerates some of these in paths).
func checkURLText(param, s string) *apierr.Error {
	if s == "" {
		return invalidf(param, "%s must not be empty.", param)
	}
	if len(s) > MaxURLBytes {
		return invalidf(param, "%s is longer than %d bytes.", param, MaxURLBytes)
	}
	if len(s) >= 5 && strings.EqualFold(s[:5], "data:") {
		return invalidf(param, "%s must not be a data: URL; inline data and Base64 are not supported.", param)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return invalidf(param, "%s must not contain spaces or control characters.", param)
		}
	}
	return nil
}

func checkHost(param string, u *url.URL) *apierr.Error {
	if u.Hostname() == "" || u.Opaque != "" {
		return invalidf(param, "%s must be an absolute URL with a host.", param)
	}
	if u.User != nil {
		return invalidf(param, "%s must not contain user credentials.", param)
	}
	return nil
}

func validAssetID(id string) bool {
	// A leading letter or digit keeps ids such as "." and ".." out of storage keys and paths.
	if id == "" || len(id) > MaxAssetIDBytes || !isAlnum(id[0]) {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
