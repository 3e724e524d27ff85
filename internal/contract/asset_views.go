package contract

// The response bodies of the asset library and of real-human verification. Field names are
// PascalCase like the contract's; absent optional fields are omitted, never null. The asset
// service fills them from its records.

// AssetGroup is an asset group.
type AssetGroup struct {
	ID          string `json:"Id"`
	Name        string `json:"Name"`
	Description string `json:"Description,omitempty"`
	// Origin: Tenant (created with asset-groups/create), Operator (granted by the operator),
	// or Verification (made by a passed real-human verification).
	Origin string `json:"Origin"`
	// Status: Active (authorized: assets can be added and used) or Revoked (by the operator).
	Status     string `json:"Status"`
	AssetCount int    `json:"AssetCount"`
	CreatedAt  int64  `json:"CreatedAt"`
	UpdatedAt  int64  `json:"UpdatedAt"`
}

// Asset is an asset. URL is a fresh temporary link to the service's stored copy, present
// only while the asset is Active.
type Asset struct {
	ID            string  `json:"Id"`
	GroupID       string  `json:"GroupId"`
	AssetType     string  `json:"AssetType"`
	Name          string  `json:"Name"`
	Status        string  `json:"Status"`
	URL           string  `json:"URL,omitempty"`
	URLExpiresAt  int64   `json:"URLExpiresAt,omitzero"`
	Duration      float64 `json:"Duration,omitzero"`
	Width         int     `json:"Width,omitzero"`
	Height        int     `json:"Height,omitzero"`
	FailureCode   string  `json:"FailureCode,omitempty"`
	FailureReason string  `json:"FailureReason,omitempty"`
	CreatedAt     int64   `json:"CreatedAt"`
	UpdatedAt     int64   `json:"UpdatedAt"`
}

// AssetGroupList is a page of groups.
type AssetGroupList struct {
	Items      []AssetGroup `json:"Items"`
	PageNumber int          `json:"PageNumber"`
	PageSize   int          `json:"PageSize"`
	TotalCount int          `json:"TotalCount"`
}

// AssetList is a page of assets.
type AssetList struct {
	Items      []Asset `json:"Items"`
	PageNumber int     `json:"PageNumber"`
	PageSize   int     `json:"PageSize"`
	TotalCount int     `json:"TotalCount"`
}

// AssetCreated answers assets/create: the new asset's Id, Processing until the copy is made.
type AssetCreated struct {
	ID     string `json:"Id"`
	Status string `json:"Status"`
}

// AssetDeleted answers the delete operations.
type AssetDeleted struct {
	ID      string `json:"Id"`
	Deleted bool   `json:"Deleted"`
}

// VerifySession answers validate-session/create.
type VerifySession struct {
	H5Link      string `json:"H5Link"`
	VerifyToken string `json:"VerifyToken"`
	ExpiresAt   int64  `json:"ExpiresAt"`
}

// VerifyResult answers validate-result/get after a passed verification.
type VerifyResult struct {
	GroupID string `json:"GroupId"`
}

// VerifyCallback is the JSON body POSTed to a session's CallbackURL when the end user
// finishes: Result is Passed or Declined; GroupId is present on Passed; Timestamp is the Unix
// time in seconds the user finished.
type VerifyCallback struct {
	VerifyToken string `json:"VerifyToken"`
	Result      string `json:"Result"`
	GroupID     string `json:"GroupId,omitempty"`
	Timestamp   int64  `json:"Timestamp"`
}
