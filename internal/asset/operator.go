package asset

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/catalog"
	"mediagen/internal/idgen"
	"mediagen/internal/store"
)

// Operator-granted virtual groups. A virtual group is authorized for its tenant when its
// Status is Active: groups the tenant creates are authorized at creation; the operator grants
// groups with the catalog (virtual_groups, applied at every start of serve) or with
// `mediagen admin asset-group grant`, and revokes any group with `mediagen admin asset-group
// revoke`. Assets cannot be added to a revoked group and its assets cannot be used in video
// requests; a grant authorizes it again.

// ReGroupID is the form of operator-chosen group ids (catalog and admin --id). Every id it
// accepts is idgen.Plausible, which the API's lookups rely on.
var ReGroupID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// GrantIn authorizes a virtual group of tenantID for the operator, inside the caller's
// transaction (the operator plane's, which records the audit entry with it). With an empty id
// a new group is made; an existing group of the tenant is authorized again (and renamed when
// name is given); an id of another tenant or of a real-human group is refused. It reports
// whether the group was created. Its refusals are *apierr.Error naming the field at fault.
func GrantIn(ctx context.Context, tx store.Tx, tenantID, id, name, description string, now time.Time) (store.AssetGroup, bool, error) {
	if id == "" {
		id = idgen.New("grp")
	} else if !ReGroupID.MatchString(id) {
		return store.AssetGroup{}, false, apierr.Invalid("id", fmt.Sprintf("group id %q must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit", id))
	}
	name = strings.TrimSpace(name)
	g, err := tx.AssetGroupForUpdate(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if name == "" {
			return store.AssetGroup{}, false, apierr.Invalid("name", "a new group needs a name")
		}
		out := store.AssetGroup{ID: id, TenantID: tenantID, Library: store.LibraryVirtual, Name: name,
			Description: description, Origin: store.GroupOriginOperator, Status: store.GroupActive, CreatedAt: now, UpdatedAt: now}
		return out, true, tx.CreateAssetGroup(ctx, out)
	case err != nil:
		return store.AssetGroup{}, false, err
	case g.TenantID != tenantID:
		return store.AssetGroup{}, false, apierr.Invalid("id", fmt.Sprintf("group %s belongs to another tenant", id))
	case g.Library != store.LibraryVirtual:
		return store.AssetGroup{}, false, apierr.Invalid("id", fmt.Sprintf("group %s is a real-human group, not a virtual one", id))
	}
	g.Status, g.UpdatedAt = store.GroupActive, now
	if name != "" {
		g.Name = name
	}
	if description != "" {
		g.Description = description
	}
	return g, false, tx.UpdateAssetGroup(ctx, g)
}

// Revoke withdraws the authorization of a group granted by the operator (or made by the
// tenant). A group granted by the catalog is refused: the catalog would grant it again at the
// next start; remove it from the catalog instead.
func Revoke(ctx context.Context, st Store, id string, now time.Time) (store.AssetGroup, error) {
	var out store.AssetGroup
	err := st.Transact(ctx, func(tx store.Tx) error {
		var err error
		out, err = RevokeIn(ctx, tx, id, now)
		return err
	})
	return out, err
}

// RevokeIn is Revoke inside the caller's transaction; an unknown group is store.ErrNotFound.
func RevokeIn(ctx context.Context, tx store.Tx, id string, now time.Time) (store.AssetGroup, error) {
	g, err := tx.AssetGroupForUpdate(ctx, id)
	if err != nil {
		return store.AssetGroup{}, err
	}
	if g.Origin == store.GroupOriginCatalog {
		return store.AssetGroup{}, apierr.Invalid("id", fmt.Sprintf("group %s is granted by the catalog: remove it from virtual_groups of tenant %s and restart serve", id, g.TenantID))
	}
	g.Status, g.UpdatedAt = store.GroupRevoked, now
	return g, tx.UpdateAssetGroup(ctx, g)
}

// SyncCatalog applies the catalog's virtual_groups: each listed group exists for its tenant,
// is authorized and carries the catalog's name and description; groups granted by the catalog
// earlier but no longer listed are revoked. It is idempotent, so every replica may run it at
// start.
func SyncCatalog(ctx context.Context, st Store, cat *catalog.Catalog, now time.Time) (granted, revoked int, err error) {
	listed := map[string]bool{}
	for _, t := range cat.Tenants {
		for _, vg := range t.VirtualGroups {
			listed[vg.ID] = true
			var g store.AssetGroup
			apply := func(tx store.Tx) error {
				cur, err := tx.AssetGroupForUpdate(ctx, vg.ID)
				if errors.Is(err, store.ErrNotFound) {
					g = store.AssetGroup{ID: vg.ID, TenantID: t.ID, Library: store.LibraryVirtual, Name: vg.Name,
						Description: vg.Description, Origin: store.GroupOriginCatalog, Status: store.GroupActive, CreatedAt: now, UpdatedAt: now}
					granted++
					return tx.CreateAssetGroup(ctx, g)
				}
				if err != nil {
					return err
				}
				if cur.TenantID != t.ID || cur.Library != store.LibraryVirtual || cur.Origin != store.GroupOriginCatalog {
					return fmt.Errorf("catalog virtual group %q of tenant %q: the id is already used by another group", vg.ID, t.ID)
				}
				if cur.Status == store.GroupActive && cur.Name == vg.Name && cur.Description == vg.Description {
					return nil
				}
				if cur.Status != store.GroupActive {
					granted++
				}
				cur.Status, cur.Name, cur.Description, cur.UpdatedAt = store.GroupActive, vg.Name, vg.Description, now
				return tx.UpdateAssetGroup(ctx, cur)
			}
			err := st.Transact(ctx, apply)
			if errors.Is(err, store.ErrConflict) {
				// Another replica created it at the same moment: apply again over its row.
				granted--
				err = st.Transact(ctx, apply)
			}
			if err != nil {
				return granted, revoked, err
			}
		}
	}
	old, _, err := st.AssetGroups(ctx, store.AssetGroupQuery{Origin: store.GroupOriginCatalog})
	if err != nil {
		return granted, revoked, err
	}
	for _, g := range old {
		if listed[g.ID] || g.Status == store.GroupRevoked {
			continue
		}
		g.Status, g.UpdatedAt = store.GroupRevoked, now
		err := st.Transact(ctx, func(tx store.Tx) error { return tx.UpdateAssetGroup(ctx, g) })
		if err != nil {
			return granted, revoked, err
		}
		revoked++
	}
	return granted, revoked, nil
}
