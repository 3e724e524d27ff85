package admin

import (
	"context"
	"fmt"
	"strconv"

	"mediagen/internal/asset"
	"mediagen/internal/store"
)

// GroupInput is a grant of a virtual asset group.
type GroupInput struct {
	Tenant      string
	ID          string // an existing group of the tenant to authorize again, or the new group's id ("": generated)
	Name        string // required for a new group
	Description string
}

// GrantGroup authorizes a virtual asset group for a tenant (asset.GrantIn says how).
func (s *Service) GrantGroup(ctx context.Context, a Actor, in GroupInput) (GroupGranted, error) {
	if err := Need(a, RoleOperator); err != nil {
		return GroupGranted{}, err
	}
	if in.Tenant == "" {
		return GroupGranted{}, invalidf("tenant", "tenant is required.")
	}
	if _, ok := s.catalog().Tenant(in.Tenant); !ok {
		return GroupGranted{}, invalidf("tenant", "tenant %q is not in the catalog.", in.Tenant)
	}
	if err := checkText("name", in.Name, asset.MaxNameChars, false); err != nil {
		return GroupGranted{}, err
	}
	if err := checkText("description", in.Description, asset.MaxDescriptionChars, false); err != nil {
		return GroupGranted{}, err
	}
	now := s.Now()
	return Write(ctx, s, a, func(tx store.Tx) (GroupGranted, Change, error) {
		var before any
		if in.ID != "" {
			if old, err := tx.AssetGroupForUpdate(ctx, in.ID); err == nil {
				before = groupView(old)
			} else if !isNotFound(err) {
				return GroupGranted{}, Change{}, err
			}
		}
		g, created, err := asset.GrantIn(ctx, tx, in.Tenant, in.ID, in.Name, in.Description, now)
		if err != nil {
			return GroupGranted{}, Change{}, err
		}
		v := groupView(g)
		return GroupGranted{AssetGroup: v, Created: created},
			Change{Action: "asset_group.grant", TargetType: "asset_group", TargetID: g.ID, Before: before, After: v}, nil
	})
}

// RevokeGroup withdraws a group's authorization: no assets can be added to it and its assets
// cannot be used. A group the catalog grants is refused (remove it from the catalog).
func (s *Service) RevokeGroup(ctx context.Context, a Actor, id string) (AssetGroup, error) {
	if err := Need(a, RoleOperator); err != nil {
		return AssetGroup{}, err
	}
	if err := checkID("asset group", id); err != nil {
		return AssetGroup{}, err
	}
	now := s.Now()
	return Write(ctx, s, a, func(tx store.Tx) (AssetGroup, Change, error) {
		old, err := tx.AssetGroupForUpdate(ctx, id)
		if isNotFound(err) {
			return AssetGroup{}, Change{}, notFound("asset group", id)
		}
		if err != nil {
			return AssetGroup{}, Change{}, err
		}
		g, err := asset.RevokeIn(ctx, tx, id, now)
		if err != nil {
			return AssetGroup{}, Change{}, err
		}
		g.AssetCount = old.AssetCount
		v := groupView(g)
		return v, Change{Action: "asset_group.revoke", TargetType: "asset_group", TargetID: id, Before: groupView(old), After: v}, nil
	})
}

// GroupFilter selects asset groups for a listing.
type GroupFilter struct {
	Tenant string
	Cursor string // next_cursor of the previous page
	Limit  int
}

// Groups lists asset groups, newest first.
func (s *Service) Groups(ctx context.Context, a Actor, f GroupFilter) (List[AssetGroup], error) {
	if err := Need(a, RoleViewer); err != nil {
		return List[AssetGroup]{}, err
	}
	if err := checkText("tenant", f.Tenant, MaxNameChars, false); err != nil {
		return List[AssetGroup]{}, err
	}
	limit, err := pageSize("limit", f.Limit)
	if err != nil {
		return List[AssetGroup]{}, err
	}
	offset := 0
	if f.Cursor != "" {
		// The groups' store pages by offset; the cursor is that offset, opaque to clients.
		if offset, err = strconv.Atoi(f.Cursor); err != nil || offset < 0 || offset > 1_000_000 {
			return List[AssetGroup]{}, invalidf("cursor", "cursor is not one this service handed out.")
		}
	}
	groups, total, err := s.st.AssetGroups(ctx, store.AssetGroupQuery{TenantID: f.Tenant, Offset: offset, Limit: limit})
	if err != nil {
		return List[AssetGroup]{}, fmt.Errorf("list asset groups: %w", err)
	}
	out := make([]AssetGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, groupView(g))
	}
	next := offset + len(groups)
	return newList(out, next < total, strconv.Itoa(next)), nil
}
