// Package arkassets is the client of ModelArk's asset library (kind ark_assets): the virtual
// (AIGC) asset groups and assets Seedance 2.0 takes as asset://<Id>, and the real-person visual
// validation (an H5 link the person opens, a token that yields the person's group).
//
// The wire format is ModelArk's OpenAPI (Volcengine / BytePlus "open" API), not the Bearer-key
// content-generation API of kind ark:
//
//   - every call is POST {base}/?Action=<Action>&Version=2024-01-01 with a JSON body, service
//     "ark", signed with the account's access key and secret key (HMAC-SHA256 signature V4,
//     the official volcengine-go-sdk signer, volcengine/base);
//   - every answer is {"ResponseMetadata":{"RequestId","Action","Version","Service","Region",
//     "Error":{"Code","Message"}},"Result":{…}}.
//
// Actions and fields, from the vendor's published references (docs/upstreams.md, "ModelArk
// asset library", cites each page):
//
//   - CreateAssetGroup {Name, Description, GroupType:"AIGC"} → Result.Id
//   - ListAssetGroups {Filter:{Name, GroupType}, PageNumber, PageSize} → Result.Items[].Id, Name
//   - CreateAsset {GroupId, URL, AssetType, Name} → Result.Id (URL-based: the vendor fetches it)
//   - ListAssets {Filter:{GroupIds, Name}, PageNumber, PageSize} → Result.Items[]
//   - GetAsset {Id} → Result {Id, Name, URL, AssetType, GroupId, Status: Processing|Active|Failed}
//   - CreateVisualValidateSession {CallbackURL} → Result {BytedToken, H5Link, CallbackURL}
//   - GetVisualValidateResult {BytedToken} → Result {GroupId} (Error ValidatePending while the
//     person has not finished)
package arkassets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	volc "github.com/volcengine/volcengine-go-sdk/volcengine/base"

	"mediagen/internal/provider"
	"mediagen/internal/provider/rest"
)

// Version is the OpenAPI version of the asset-library actions.
const Version = "2024-01-01"

// Service is the signing scope's service name of ModelArk's OpenAPI.
const Service = "ark"

// Vendor asset statuses.
const (
	StatusProcessing = "Processing"
	StatusActive     = "Active"
	StatusFailed     = "Failed"
)

// ErrPending is GetVisualValidateResult's answer while the person has not finished the check.
var ErrPending = errors.New("ark_assets: visual validation not finished")

// Config configures a Client.
type Config struct {
	BaseURL   string // e.g. https://open.volcengineapi.com or https://open.byteplusapi.com
	Region    string // cn-beijing (Volcengine), ap-southeast-1 (BytePlus)
	AccessKey string
	SecretKey string
	// ProjectName, when set, is sent with every call (the vendor's default project otherwise).
	ProjectName string
	// HTTP is the client for API calls (default: 30 s timeout). Its transport must not retry.
	HTTP              *http.Client
	RequestsPerSecond float64
}

// Client calls one ModelArk account's asset library.
type Client struct {
	api     *rest.Client
	project string
}

// New returns a client of the account.
func New(cfg Config) (*Client, error) {
	if cfg.AccessKey == "" || cfg.SecretKey == "" {
		return nil, errors.New("ark_assets: an access key and a secret key are required")
	}
	if cfg.Region == "" {
		return nil, errors.New("ark_assets: a region is required")
	}
	cred := volc.Credentials{AccessKeyID: cfg.AccessKey, SecretAccessKey: cfg.SecretKey, Service: Service, Region: cfg.Region}
	api, err := rest.New(rest.Config{Name: "ark_assets", BaseURL: cfg.BaseURL, HTTP: cfg.HTTP, RequestsPerSecond: cfg.RequestsPerSecond,
		Sign: func(req *http.Request) error {
			// Sign4 signs every header already set and the body's hash; the secret key never
			// leaves this process.
			volc.Sign4(req, cred)
			return nil
		}})
	if err != nil {
		return nil, err
	}
	return &Client{api: api, project: cfg.ProjectName}, nil
}

// envelope is every answer of the OpenAPI.
type envelope struct {
	ResponseMetadata struct {
		RequestID string `json:"RequestId"`
		Action    string `json:"Action"`
		Error     *struct {
			Code    string `json:"Code"`
			Message string `json:"Message"`
		} `json:"Error,omitempty"`
	} `json:"ResponseMetadata"`
	Result json.RawMessage `json:"Result"`
}

// call makes one action and decodes its Result into out. Errors keep the vendor's code for
// the logs (never for a client): 401/403 a refused account, 429 and 5xx transient, 4xx with
// an error code a refusal of this request (provider.ErrPermanent), an answer that is not the
// envelope transient.
func (c *Client) call(ctx context.Context, action string, in map[string]any, out any) error {
	if c.project != "" {
		in["ProjectName"] = c.project
	}
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("ark_assets %s: %w", action, err)
	}
	q := url.Values{"Action": {action}, "Version": {Version}}
	var env envelope
	err = c.api.JSON(ctx, rest.Request{Method: http.MethodPost, Path: "/?" + q.Encode(), Body: bytes.NewReader(b),
		ContentType: "application/json"}, &env)
	if err != nil {
		return rest.Classify(err, func(se *rest.StatusError) error {
			var e envelope
			_ = json.Unmarshal(se.Body, &e)
			code := "unknown"
			if e.ResponseMetadata.Error != nil {
				code = e.ResponseMetadata.Error.Code
			}
			if code == "ValidatePending" {
				return fmt.Errorf("%w: %w", se, ErrPending)
			}
			return &provider.Error{Kind: provider.ErrPermanent, Code: code, Message: "the asset library refused the request"}
		})
	}
	if e := env.ResponseMetadata.Error; e != nil {
		// An error in a 200 answer: the OpenAPI gateway answers some refusals this way.
		if e.Code == "ValidatePending" {
			return fmt.Errorf("ark_assets %s: %w", action, ErrPending)
		}
		return &provider.Error{Kind: provider.ErrPermanent, Code: e.Code, Message: "the asset library refused the request"}
	}
	if len(env.Result) == 0 || string(env.Result) == "null" {
		return fmt.Errorf("ark_assets %s: answer without a Result: %w", action, provider.ErrTransient)
	}
	if err := json.Unmarshal(env.Result, out); err != nil {
		return fmt.Errorf("ark_assets %s: malformed Result: %w", action, provider.ErrTransient)
	}
	return nil
}

// CreateAssetGroup makes a virtual (AIGC) group and returns its id.
func (c *Client) CreateAssetGroup(ctx context.Context, name, description string) (string, error) {
	in := map[string]any{"Name": name, "GroupType": "AIGC"}
	if description != "" {
		in["Description"] = description
	}
	var out struct {
		ID string `json:"Id"`
	}
	if err := c.call(ctx, "CreateAssetGroup", in, &out); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", fmt.Errorf("ark_assets CreateAssetGroup: no Id: %w", provider.ErrTransient)
	}
	return out.ID, nil
}

// FindAssetGroup looks a group up by its name, which this service makes unique (our group
// id): how a create whose answer was lost is found rather than made again.
func (c *Client) FindAssetGroup(ctx context.Context, name string) (string, bool, error) {
	var out struct {
		Items []struct {
			ID   string `json:"Id"`
			Name string `json:"Name"`
		} `json:"Items"`
	}
	in := map[string]any{"Filter": map[string]any{"Name": name, "GroupType": "AIGC"}, "PageNumber": 1, "PageSize": 10}
	if err := c.call(ctx, "ListAssetGroups", in, &out); err != nil {
		return "", false, err
	}
	for _, it := range out.Items {
		if it.Name == name && it.ID != "" {
			return it.ID, true, nil
		}
	}
	return "", false, nil
}

// Asset is a vendor asset as GetAsset shows it.
type Asset struct {
	ID        string `json:"Id"`
	Name      string `json:"Name"`
	GroupID   string `json:"GroupId"`
	AssetType string `json:"AssetType"`
	Status    string `json:"Status"`
}

// CreateAsset registers the media at src (a link the vendor fetches) in the group.
func (c *Client) CreateAsset(ctx context.Context, groupID, src, assetType, name string) (string, error) {
	var out struct {
		ID string `json:"Id"`
	}
	in := map[string]any{"GroupId": groupID, "URL": src, "AssetType": assetType, "Name": name}
	if err := c.call(ctx, "CreateAsset", in, &out); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", fmt.Errorf("ark_assets CreateAsset: no Id: %w", provider.ErrTransient)
	}
	return out.ID, nil
}

// FindAsset looks an asset of the group up by its name (our asset id).
func (c *Client) FindAsset(ctx context.Context, groupID, name string) (Asset, bool, error) {
	var out struct {
		Items []Asset `json:"Items"`
	}
	in := map[string]any{"Filter": map[string]any{"GroupIds": []string{groupID}, "Name": name}, "PageNumber": 1, "PageSize": 10}
	if err := c.call(ctx, "ListAssets", in, &out); err != nil {
		return Asset{}, false, err
	}
	for _, it := range out.Items {
		if it.Name == name && it.ID != "" {
			return it, true, nil
		}
	}
	return Asset{}, false, nil
}

// GetAsset reads an asset's status.
func (c *Client) GetAsset(ctx context.Context, id string) (Asset, error) {
	var out Asset
	if err := c.call(ctx, "GetAsset", map[string]any{"Id": id}, &out); err != nil {
		return Asset{}, err
	}
	switch out.Status {
	case StatusProcessing, StatusActive, StatusFailed:
	default:
		return Asset{}, fmt.Errorf("ark_assets GetAsset: unknown status %q: %w", out.Status, provider.ErrTransient)
	}
	return out, nil
}

// Session is a started visual validation.
type Session struct {
	Token  string `json:"BytedToken"`
	H5Link string `json:"H5Link"`
}

// CreateVisualValidateSession starts a real-person validation; the vendor calls (or the H5
// page redirects to) callbackURL when the person is done.
func (c *Client) CreateVisualValidateSession(ctx context.Context, callbackURL string) (Session, error) {
	in := map[string]any{}
	if callbackURL != "" {
		in["CallbackURL"] = callbackURL
	}
	var out Session
	if err := c.call(ctx, "CreateVisualValidateSession", in, &out); err != nil {
		return Session{}, err
	}
	if out.Token == "" || !strings.HasPrefix(out.H5Link, "https://") {
		return Session{}, fmt.Errorf("ark_assets CreateVisualValidateSession: no token or H5 link: %w", provider.ErrTransient)
	}
	return out, nil
}

// GetVisualValidateResult returns the group of a passed validation; ErrPending while the
// person has not finished; a provider.ErrPermanent error when it failed or expired.
func (c *Client) GetVisualValidateResult(ctx context.Context, token string) (string, error) {
	var out struct {
		GroupID string `json:"GroupId"`
	}
	if err := c.call(ctx, "GetVisualValidateResult", map[string]any{"BytedToken": token}, &out); err != nil {
		return "", err
	}
	if out.GroupID == "" {
		return "", fmt.Errorf("ark_assets GetVisualValidateResult: %w", ErrPending)
	}
	return out.GroupID, nil
}

// Check makes the cheapest signed call (one group listed): a refused key or signature is
// provider.ErrAccount.
func (c *Client) Check(ctx context.Context) error {
	var out struct {
		Items []json.RawMessage `json:"Items"`
	}
	return c.call(ctx, "ListAssetGroups", map[string]any{"PageNumber": 1, "PageSize": 1}, &out)
}
