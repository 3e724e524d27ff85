package asset

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"

	"mediagen/internal/apierr"
	"mediagen/internal/blob"
	"mediagen/internal/contract"
	"mediagen/internal/idgen"
	"mediagen/internal/keys"
	"mediagen/internal/limits"
	"mediagen/internal/logctx"
	"mediagen/internal/store"
)

// Operation is one POST endpoint of the asset library: its path, the status of a success, and
// the use case behind it, which takes the raw JSON body.
type Operation struct {
	Path   string
	Status int
	Run    func(ctx context.Context, c keys.Caller, body []byte) (any, error)
}

// Path prefixes of the two libraries.
const (
	VirtualPrefix   = "/v1/vidgen/virtual"
	RealHumanPrefix = "/v1/vidgen/real-human"
)

// Operations lists the 21 endpoints of the contract.
func (s *Service) Operations() []Operation {
	v, h := store.LibraryVirtual, store.LibraryRealHuman
	ok, accepted := http.StatusOK, http.StatusAccepted
	return []Operation{
		{VirtualPrefix + "/asset-groups/create", ok, s.createGroup},
		{VirtualPrefix + "/asset-groups/list", ok, s.listGroups(v)},
		{VirtualPrefix + "/asset-groups/get", ok, s.getGroup(v)},
		{VirtualPrefix + "/asset-groups/update", ok, s.updateGroup(v)},
		{VirtualPrefix + "/asset-groups/delete", ok, s.deleteGroup(v)},
		{VirtualPrefix + "/assets/create", accepted, s.createAsset(v)},
		{VirtualPrefix + "/assets/list", ok, s.listAssets(v)},
		{VirtualPrefix + "/assets/get", ok, s.getAsset(v)},
		{VirtualPrefix + "/assets/update", ok, s.updateAsset(v)},
		{VirtualPrefix + "/assets/delete", ok, s.deleteAsset(v)},
		{RealHumanPrefix + "/validate-session/create", ok, s.createSession},
		{RealHumanPrefix + "/validate-result/get", ok, s.getResult},
		{RealHumanPrefix + "/asset-groups/list", ok, s.listGroups(h)},
		{RealHumanPrefix + "/asset-groups/get", ok, s.getGroup(h)},
		{RealHumanPrefix + "/asset-groups/update", ok, s.updateGroup(h)},
		{RealHumanPrefix + "/asset-groups/delete", ok, s.deleteGroup(h)},
		{RealHumanPrefix + "/assets/create", accepted, s.createAsset(h)},
		{RealHumanPrefix + "/assets/list", ok, s.listAssets(h)},
		{RealHumanPrefix + "/assets/get", ok, s.getAsset(h)},
		{RealHumanPrefix + "/assets/update", ok, s.updateAsset(h)},
		{RealHumanPrefix + "/assets/delete", ok, s.deleteAsset(h)},
	}
}

// ---------------------------------------------------------------------------------------------
// Groups
// ---------------------------------------------------------------------------------------------

// group reads a group of the caller in the library; anything else is not found, so ids of
// another tenant or of the other library cannot be told apart from unknown ones. Neither can
// an id that cannot be one of ours (idgen.Plausible), which is not looked up at all: on
// PostgreSQL a NUL or invalid UTF-8 in it would be an error rather than no row. The handlers
// that read a group under a lock (update, delete) make the same check first.
func (s *Service) group(ctx context.Context, c keys.Caller, library, id, param string) (store.AssetGroup, error) {
	if !idgen.Plausible(id) {
		return store.AssetGroup{}, notFoundGroup(param)
	}
	g, err := s.cfg.Store.AssetGroup(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (g.TenantID != c.Tenant.ID || g.Library != library)) {
		return store.AssetGroup{}, notFoundGroup(param)
	}
	return g, err
}

func (s *Service) createGroup(ctx context.Context, c keys.Caller, raw []byte) (any, error) {
	b, aerr := decode(raw, []field{reqStr("Name"), str("Description")}, nil)
	if aerr != nil {
		return nil, aerr
	}
	name, _, aerr := b.text("Name", MaxNameChars, true, false)
	if aerr != nil {
		return nil, aerr
	}
	desc, _, aerr := b.text("Description", MaxDescriptionChars, false, true)
	if aerr != nil {
		return nil, aerr
	}
	now := s.now()
	g := store.AssetGroup{ID: idgen.New("grp"), TenantID: c.Tenant.ID, Library: store.LibraryVirtual, Name: name,
		Description: desc, Origin: store.GroupOriginTenant, Status: store.GroupActive, CreatedAt: now, UpdatedAt: now}
	if err := s.cfg.Store.Transact(ctx, func(tx store.Tx) error { return tx.CreateAssetGroup(ctx, g) }); err != nil {
		return nil, err
	}
	return groupView(g), nil
}

var pageFields = []field{integer("PageNumber"), integer("PageSize")}

func (s *Service) listGroups(library string) func(context.Context, keys.Caller, []byte) (any, error) {
	return func(ctx context.Context, c keys.Caller, raw []byte) (any, error) {
		b, aerr := decode(raw, pageFields, nil)
		if aerr != nil {
			return nil, aerr
		}
		number, size, aerr := b.paging()
		if aerr != nil {
			return nil, aerr
		}
		groups, total, err := s.cfg.Store.AssetGroups(ctx, store.AssetGroupQuery{TenantID: c.Tenant.ID, Library: library,
			Offset: (number - 1) * size, Limit: size})
		if err != nil {
			return nil, err
		}
		out := contract.AssetGroupList{Items: make([]contract.AssetGroup, 0, len(groups)), PageNumber: number, PageSize: size, TotalCount: total}
		for _, g := range groups {
			out.Items = append(out.Items, groupView(g))
		}
		return out, nil
	}
}

func (s *Service) getGroup(library string) func(context.Context, keys.Caller, []byte) (any, error) {
	return func(ctx context.Context, c keys.Caller, raw []byte) (any, error) {
		id, aerr := decodeID(raw)
		if aerr != nil {
			return nil, aerr
		}
		g, err := s.group(ctx, c, library, id, "Id")
		if err != nil {
			return nil, err
		}
		return groupView(g), nil
	}
}

// decodeID reads the body {Id} of get and delete.
func decodeID(raw []byte) (string, *apierr.Error) {
	b, aerr := decode(raw, []field{reqStr("Id")}, nil)
	if aerr != nil {
		return "", aerr
	}
	return b.id("Id")
}

func readOnly() *apierr.Error {
	return &apierr.Error{Kind: apierr.KindPermission, Code: CodeGroupReadOnly, Param: "Id",
		Message: "This asset group was granted by the operator and cannot be changed or deleted with this key. Contact the operator."}
}

func operatorGroup(g store.AssetGroup) bool {
	return g.Origin == store.GroupOriginCatalog || g.Origin == store.GroupOriginOperator
}

func (s *Service) updateGroup(library string) func(context.Context, keys.Caller, []byte) (any, error) {
	return func(ctx context.Context, c keys.Caller, raw []byte) (any, error) {
		b, aerr := decode(raw, []field{reqStr("Id"), str("Name"), str("Description")}, nil)
		if aerr != nil {
			return nil, aerr
		}
		id, aerr := b.id("Id")
		if aerr != nil {
			return nil, aerr
		}
		name, hasName, aerr := b.text("Name", MaxNameChars, true, false)
		if aerr != nil {
			return nil, aerr
		}
		desc, hasDesc, aerr := b.text("Description", MaxDescriptionChars, false, true)
		if aerr != nil {
			return nil, aerr
		}
		if !hasName && !hasDesc {
			return nil, invalid("", "Send Name, Description or both with the new values.")
		}
		if !idgen.Plausible(id) {
			return nil, notFoundGroup("Id")
		}
		var out store.AssetGroup
		err := s.cfg.Store.Transact(ctx, func(tx store.Tx) error {
			g, err := tx.AssetGroupForUpdate(ctx, id)
			if errors.Is(err, store.ErrNotFound) || (err == nil && (g.TenantID != c.Tenant.ID || g.Library != library)) {
				return notFoundGroup("Id")
			}
			if err != nil {
				return err
			}
			if operatorGroup(g) {
				return readOnly()
			}
			if hasName {
				g.Name = name
			}
			if hasDesc {
				g.Description = desc
			}
			g.UpdatedAt = s.now()
			out = g
			return tx.UpdateAssetGroup(ctx, g)
		})
		if err != nil {
			return nil, err
		}
		return groupView(out), nil
	}
}

func (s *Service) deleteGroup(library string) func(context.Context, keys.Caller, []byte) (any, error) {
	return func(ctx context.Context, c keys.Caller, raw []byte) (any, error) {
		id, aerr := decodeID(raw)
		if aerr != nil {
			return nil, aerr
		}
		if !idgen.Plausible(id) {
			return nil, notFoundGroup("Id")
		}
		err := s.cfg.Store.Transact(ctx, func(tx store.Tx) error {
			g, err := tx.AssetGroupForUpdate(ctx, id)
			if errors.Is(err, store.ErrNotFound) || (err == nil && (g.TenantID != c.Tenant.ID || g.Library != library)) {
				return notFoundGroup("Id")
			}
			if err != nil {
				return err
			}
			if operatorGroup(g) {
				return readOnly()
			}
			err = tx.DeleteAssetGroup(ctx, id)
			if errors.Is(err, store.ErrConflict) {
				return &apierr.Error{Kind: apierr.KindInvalid, Code: CodeGroupNotEmpty, Param: "Id",
					Message: "The asset group still holds assets; delete them first (assets/list with this GroupId shows them)."}
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		return contract.AssetDeleted{ID: id, Deleted: true}, nil
	}
}

// ---------------------------------------------------------------------------------------------
// Assets
// ---------------------------------------------------------------------------------------------

// asset reads an asset of the caller in the library; anything else, an id that cannot be one
// of ours included (see group), is not found.
func (s *Service) asset(ctx context.Context, c keys.Caller, library, id string) (store.Asset, error) {
	if !idgen.Plausible(id) {
		return store.Asset{}, notFoundAsset()
	}
	a, err := s.cfg.Store.Asset(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (a.TenantID != c.Tenant.ID || a.Library != library)) {
		return store.Asset{}, notFoundAsset()
	}
	return a, err
}

var assetTypes = []string{TypeImage, TypeVideo, TypeAudio}

func (s *Service) createAsset(library string) func(context.Context, keys.Caller, []byte) (any, error) {
	return func(ctx context.Context, c keys.Caller, raw []byte) (any, error) {
		b, aerr := decode(raw, []field{reqStr("GroupId"), reqStr("URL"), reqStr("AssetType"), str("Name")}, nil)
		if aerr != nil {
			return nil, aerr
		}
		groupID, aerr := b.id("GroupId")
		if aerr != nil {
			return nil, aerr
		}
		src := b.strs["URL"]
		if aerr := s.checkSourceURL(src); aerr != nil {
			return nil, aerr
		}
		typ, aerr := b.enum("AssetType", assetTypes...)
		if aerr != nil {
			return nil, aerr
		}
		name, hasName, aerr := b.text("Name", MaxNameChars, true, false)
		if aerr != nil {
			return nil, aerr
		}
		if !hasName {
			name = nameFromURL(src)
		}
		g, err := s.group(ctx, c, library, groupID, "GroupId")
		if err != nil {
			return nil, err
		}
		if g.Status != store.GroupActive {
			return nil, notAuthorized()
		}
		// A tenant bound to an upstream library (catalog asset_library) registers its virtual
		// assets there too, and its real-human assets in a group the vendor's verification
		// made; an image the library cannot take is refused now, with nothing written.
		var upstream string
		if lib := c.Tenant.AssetLibrary; lib != "" && (library == store.LibraryVirtual || (g.Upstream == lib && g.UpstreamID != "")) {
			upstream = lib
			if typ == TypeImage {
				if aerr := s.checkLibraryImage(ctx, src); aerr != nil {
					return nil, aerr
				}
			}
		}
		now := s.now()
		a := store.Asset{ID: idgen.New("asset"), TenantID: c.Tenant.ID, KeyID: c.Key.ID, GroupID: g.ID, Library: library,
			Name: name, Type: typ, SourceURL: src, Status: store.AssetProcessing, Upstream: upstream, CreatedAt: now, UpdatedAt: now}
		err = s.cfg.Store.Transact(ctx, func(tx store.Tx) error {
			if err := tx.CreateAsset(ctx, a); err != nil {
				return err
			}
			job := IngestJob(a)
			job.RequestID = logctx.RequestID(ctx) // the ingest's runs log with the request's id
			if err := tx.EnqueueJob(ctx, job); err != nil {
				return err
			}
			// Checked last, on the count that includes this asset: a refusal rolls back the
			// asset and its job together, so a refused create leaves nothing behind.
			return limits.Admit(ctx, tx, c.Tenant.Limits(), store.InFlightAssets, c.Key.ID, c.Tenant.ID)
		})
		if err != nil {
			return nil, err
		}
		s.notify(IngestKind)
		return contract.AssetCreated{ID: a.ID, Status: a.Status}, nil
	}
}

func notAuthorized() *apierr.Error {
	return &apierr.Error{Kind: apierr.KindPermission, Code: CodeGroupNotAuthorized, Param: "GroupId",
		Message: "This asset group is not authorized for this account (the operator revoked it); assets cannot be added to it. Contact the operator."}
}

// checkSourceURL applies the rules that need no I/O: an absolute https URL under the fetch
// policy's static checks; never data:, Base64, asset://, file:// or a link to the service's
// own files (see selfFileLink; refused in both libraries).
func (s *Service) checkSourceURL(src string) *apierr.Error {
	bad := func(msg string) *apierr.Error {
		return &apierr.Error{Kind: apierr.KindInvalid, Code: CodeInvalidSourceURL, Param: "URL", Message: msg}
	}
	lower := strings.ToLower(src)
	switch {
	case src == "":
		return bad("URL must not be empty.")
	case len(src) > MaxURLBytes:
		return bad("URL is longer than 4096 bytes.")
	case strings.HasPrefix(lower, "data:"):
		return bad("URL must not be a data: URL; inline data and Base64 are not supported. Register the media by its https URL.")
	case strings.HasPrefix(lower, "asset://"):
		return bad("URL must be the https URL of the media; an asset is not created from another asset.")
	case !strings.Contains(src, "://"):
		return bad("URL must be an absolute https URL; inline data and Base64 are not supported.")
	case strings.HasPrefix(lower, "file:"):
		return bad("URL must be a public https URL; file:// URLs are not accepted.")
	case !strings.HasPrefix(lower, "https://"):
		return bad("URL must use https.")
	}
	for i := 0; i < len(src); i++ {
		if c := src[i]; c <= ' ' || c == 0x7f {
			return bad("URL must not contain spaces or control characters.")
		}
	}
	if selfFileLink(s.cfg.PublicURL, src) {
		return bad("URL must not be a link to this service's own files (" + blob.FilesPath + "…, such as the URL of an asset or a task result): " +
			"an asset is copied from media you host, never from another asset, so a real-human asset cannot be copied into the virtual library. " +
			"Reference a stored asset as asset://<Id> instead.")
	}
	if s.cfg.Fetch != nil {
		if _, err := s.cfg.Fetch.Check(src, false); err != nil {
			return bad("URL cannot be fetched: " + publicFetchMessage(err))
		}
	}
	return nil
}

// selfFileLink reports whether src points at the service's own file route: its host is the
// host of publicURL (compared without case or a trailing dot, whatever the scheme and port,
// since a TLS proxy may serve the same files on another scheme or port than the configured
// one) and its path, decoded and cleaned, has a /v1/files/ segment (links are
// {PublicURL}/v1/files/…, and a PublicURL with a base path or a proxy may put a prefix before
// it). Such links carry copies of assets of either library and task results; copying one into
// an asset would let a real-human asset become a virtual one without verification, or fill a
// verified group with media of someone else. An unparsable URL is left to the fetch policy.
func selfFileLink(publicURL, src string) bool {
	pub, err := url.Parse(publicURL)
	if err != nil || pub.Hostname() == "" {
		return false
	}
	u, err := url.Parse(src)
	if err != nil || u.Hostname() == "" {
		return false
	}
	host := func(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }
	if host(u.Hostname()) != host(pub.Hostname()) {
		return false
	}
	p := strings.ToLower(path.Clean("/"+u.Path)) + "/"
	return strings.Contains(p, blob.FilesPath)
}

// defaultName stands in for a Name when the URL's path has no segment to take it from.
const defaultName = "asset"

// nameFromURL is the default Name: the last segment of the URL's path, percent-decoded, cut
// to MaxNameChars and held to the rules of a Name the client sends (checkText). Decoding can
// yield what those rules refuse — invalid UTF-8 (%ff), control characters (%00, %0A), only
// white space — and such a name would be stored as is: on SQLite every later read of the
// asset fails to encode as JSON, on PostgreSQL the insert fails. The segment as it is written
// in the URL is then used instead (always printable ASCII, since url.URL.EscapedPath escapes
// everything else); defaultName when neither gives a valid Name.
func nameFromURL(src string) string {
	u, err := url.Parse(src)
	if err != nil {
		return defaultName
	}
	for _, p := range []string{u.Path, u.EscapedPath()} {
		base := path.Base(p)
		if base == "/" || base == "." || base == "" {
			continue
		}
		if name, aerr := checkText("Name", cutRunes(base, MaxNameChars), MaxNameChars, true, false); aerr == nil {
			return name
		}
	}
	return defaultName
}

// cutRunes returns the first n characters of s without touching its bytes: an invalid byte
// stays invalid (and is refused by checkText) rather than turning into U+FFFD.
func cutRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

func (s *Service) listAssets(library string) func(context.Context, keys.Caller, []byte) (any, error) {
	return func(ctx context.Context, c keys.Caller, raw []byte) (any, error) {
		b, aerr := decode(raw, append([]field{str("GroupId"), str("AssetType"), str("Status")}, pageFields...), nil)
		if aerr != nil {
			return nil, aerr
		}
		groupID, aerr := b.id("GroupId")
		if aerr != nil {
			return nil, aerr
		}
		typ, aerr := b.enum("AssetType", assetTypes...)
		if aerr != nil {
			return nil, aerr
		}
		status, aerr := b.enum("Status", store.AssetProcessing, store.AssetActive, store.AssetFailed)
		if aerr != nil {
			return nil, aerr
		}
		number, size, aerr := b.paging()
		if aerr != nil {
			return nil, aerr
		}
		if groupID != "" {
			if _, err := s.group(ctx, c, library, groupID, "GroupId"); err != nil {
				return nil, err
			}
		}
		assets, total, err := s.cfg.Store.Assets(ctx, store.AssetQuery{TenantID: c.Tenant.ID, Library: library,
			GroupID: groupID, Type: typ, Status: status, Offset: (number - 1) * size, Limit: size})
		if err != nil {
			return nil, err
		}
		out := contract.AssetList{Items: make([]contract.Asset, 0, len(assets)), PageNumber: number, PageSize: size, TotalCount: total}
		for _, a := range assets {
			out.Items = append(out.Items, s.assetView(ctx, a))
		}
		return out, nil
	}
}

func (s *Service) getAsset(library string) func(context.Context, keys.Caller, []byte) (any, error) {
	return func(ctx context.Context, c keys.Caller, raw []byte) (any, error) {
		id, aerr := decodeID(raw)
		if aerr != nil {
			return nil, aerr
		}
		a, err := s.asset(ctx, c, library, id)
		if err != nil {
			return nil, err
		}
		return s.assetView(ctx, a), nil
	}
}

// immutable refuses the fields an update cannot change, with what to do instead.
func immutable(name string) *apierr.Error {
	switch name {
	case "GroupId":
		return &apierr.Error{Kind: apierr.KindInvalid, Code: CodeMoveNotSupported, Param: name,
			Message: "GroupId cannot be changed: assets are never moved between groups or libraries (a real-human asset cannot become a virtual one). Create the asset again in the other group."}
	case "URL", "AssetType", "Status":
		return invalid(name, "%s cannot be changed; only Name can be updated. Create a new asset for other media.", name)
	}
	return nil
}

func (s *Service) updateAsset(library string) func(context.Context, keys.Caller, []byte) (any, error) {
	return func(ctx context.Context, c keys.Caller, raw []byte) (any, error) {
		b, aerr := decode(raw, []field{reqStr("Id"), reqStr("Name")}, immutable)
		if aerr != nil {
			return nil, aerr
		}
		id, aerr := b.id("Id")
		if aerr != nil {
			return nil, aerr
		}
		name, _, aerr := b.text("Name", MaxNameChars, true, false)
		if aerr != nil {
			return nil, aerr
		}
		a, err := s.asset(ctx, c, library, id)
		if err != nil {
			return nil, err
		}
		now := s.now()
		err = s.cfg.Store.Transact(ctx, func(tx store.Tx) error { return tx.RenameAsset(ctx, id, name, now) })
		if errors.Is(err, store.ErrNotFound) {
			return nil, notFoundAsset()
		}
		if err != nil {
			return nil, err
		}
		// Read back: processing may have finished in between.
		if fresh, err := s.asset(ctx, c, library, id); err == nil {
			a = fresh
		} else {
			a.Name, a.UpdatedAt = name, now
		}
		return s.assetView(ctx, a), nil
	}
}

func (s *Service) deleteAsset(library string) func(context.Context, keys.Caller, []byte) (any, error) {
	return func(ctx context.Context, c keys.Caller, raw []byte) (any, error) {
		id, aerr := decodeID(raw)
		if aerr != nil {
			return nil, aerr
		}
		if _, err := s.asset(ctx, c, library, id); err != nil {
			return nil, err
		}
		var key string
		err := s.cfg.Store.Transact(ctx, func(tx store.Tx) (err error) {
			key, err = tx.DeleteAsset(ctx, id)
			return err
		})
		if errors.Is(err, store.ErrNotFound) {
			return nil, notFoundAsset()
		}
		if err != nil {
			return nil, err
		}
		if key != "" {
			if err := s.cfg.Blobs.Delete(ctx, key); err != nil {
				s.log.WarnContext(ctx, "asset copy not deleted", "asset", id, "err", err)
			}
		}
		return contract.AssetDeleted{ID: id, Deleted: true}, nil
	}
}
