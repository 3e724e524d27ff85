package video

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"mediagen/internal/apierr"
	"mediagen/internal/catalog"
	"mediagen/internal/contract"
	"mediagen/internal/keys"
	"mediagen/internal/store"
)

// OpenAIRequest is a create in OpenAI's request shape (POST /v1/videos as OpenAI's SDKs send
// it): the fields as sent, strings all, before any mapping.
type OpenAIRequest struct {
	Model, Prompt, Seconds, Size string
	// Present records which of the optional fields were sent at all.
	HasModel, HasPrompt, HasSeconds, HasSize bool
	// InputReferenceURL is input_reference's object form, {"image_url": "..."} in JSON or the
	// field input_reference[image_url] in multipart: the first frame by URL.
	InputReferenceURL    string
	HasInputReferenceURL bool
	// IdempotencyKey is the request's Idempotency-Key header (HasIdempotencyKey: it was
	// sent): it becomes the mapped request's metadata.client_request_id, under the contract's
	// rules for that field.
	IdempotencyKey    string
	HasIdempotencyKey bool
	// UploadSHA256 is the hex SHA-256 of the uploaded input_reference's bytes. The replay hash
	// covers it in place of the upload's stored name, so the same file replays and a different
	// file conflicts.
	UploadSHA256 string
}

// IdempotencyHeader is the request header that, on a create in OpenAI's shape, acts as the
// contract's metadata.client_request_id. A create in the contract's shape ignores it.
const IdempotencyHeader = "Idempotency-Key"

// openAISizes maps OpenAI's size onto the contract's resolution and ratio: exactly the
// sizes that contract.Dimensions gives for a named ratio (not adaptive) at a native
// resolution. Whether the alias offers that resolution is the contract's own rule.
var openAISizes = func() map[string][2]string {
	m := map[string][2]string{}
	for _, res := range []string{"480p", "720p", "1080p", "4k"} {
		for _, ratio := range []string{"16:9", "4:3", "1:1", "3:4", "9:16", "21:9"} {
			w, h := contract.Dimensions(res, ratio)
			m[fmt.Sprintf("%dx%d", w, h)] = [2]string{res, ratio}
		}
	}
	return m
}()

// OpenAISize returns the contract resolution and ratio of an OpenAI size, if it has one.
func OpenAISize(size string) (resolution, ratio string, ok bool) {
	v, ok := openAISizes[size]
	return v[0], v[1], ok
}

// IsOpenAIJSON reports whether a JSON body of POST /v1/videos is in OpenAI's request shape:
// a JSON object with seconds, size or input_reference at its top level and no metadata.
// Every other body (including one that is not a JSON object, or has duplicate names) is the
// contract's and is decided exactly as the contract says.
func IsOpenAIJSON(body []byte) bool {
	// Contract bodies almost never hold these names anywhere: they skip the second parse.
	if !bytes.Contains(body, []byte(`"seconds"`)) && !bytes.Contains(body, []byte(`"size"`)) && !bytes.Contains(body, []byte(`"input_reference"`)) {
		return false
	}
	var top map[string]jsontext.Value
	if err := json.Unmarshal(body, &top); err != nil {
		return false
	}
	if _, ok := top["metadata"]; ok {
		return false
	}
	for _, name := range []string{"seconds", "size", "input_reference"} {
		if _, ok := top[name]; ok {
			return true
		}
	}
	return false
}

// ParseOpenAIJSON reads a body IsOpenAIJSON accepted: model, prompt and size are strings,
// seconds a string of digits (as OpenAI's API has it) or an integer. input_reference is
// accepted only as a multipart file upload.
func ParseOpenAIJSON(body []byte) (OpenAIRequest, error) {
	var top map[string]jsontext.Value
	if err := json.Unmarshal(body, &top); err != nil {
		return OpenAIRequest{}, apierr.Invalid("", "The request body is not valid JSON.")
	}
	var o OpenAIRequest
	for name, raw := range top {
		var s string
		switch name {
		case "model", "prompt", "size", "seconds":
			if name == "seconds" && raw.Kind() == '0' {
				var n int64
				if err := json.Unmarshal(raw, &n); err != nil {
					return o, apierr.Invalid("seconds", "seconds must be a whole number of seconds, such as \"4\".")
				}
				s = strconv.FormatInt(n, 10)
			} else if err := json.Unmarshal(raw, &s); err != nil || raw.Kind() != '"' {
				return o, apierr.Invalid(name, name+" must be a string.")
			}
		case "input_reference":
			url, err := parseInputReference(raw)
			if err != nil {
				return o, err
			}
			o.InputReferenceURL, o.HasInputReferenceURL = url, true
			continue
		default:
			return o, apierr.Invalid(name, fmt.Sprintf("Unknown field %q. OpenAI's request shape takes model, prompt, seconds, size and input_reference.", name))
		}
		o.Set(name, s)
	}
	return o, nil
}

// ErrInputReferenceFileID refuses input_reference's file_id form: this service has no
// OpenAI Files API to look the id up in.
var ErrInputReferenceFileID = apierr.Invalid("input_reference",
	"input_reference.file_id is not supported here: this service has no Files API. Upload the image itself as the input_reference file (multipart/form-data), or give its URL as input_reference.image_url.")

// parseInputReference reads input_reference in JSON, which OpenAI's API takes as an object
// with image_url (a URL of the image) or file_id; only image_url is supported.
func parseInputReference(raw jsontext.Value) (string, error) {
	const shape = `input_reference in JSON must be an object {"image_url": "https://..."}; to send the image itself, upload it as a file in a multipart/form-data request.`
	if raw.Kind() != '{' {
		return "", apierr.Invalid("input_reference", shape)
	}
	var obj map[string]jsontext.Value
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", apierr.Invalid("input_reference", shape)
	}
	if _, ok := obj["file_id"]; ok {
		return "", ErrInputReferenceFileID
	}
	url := ""
	for name, v := range obj {
		if name != "image_url" {
			return "", apierr.Invalid("input_reference", fmt.Sprintf("Unknown field %q in input_reference. %s", name, shape))
		}
		if v.Kind() != '"' || json.Unmarshal(v, &url) != nil || strings.TrimSpace(url) == "" {
			return "", apierr.Invalid("input_reference", "input_reference.image_url must be a non-empty string: the URL of a PNG, JPEG or WebP image.")
		}
	}
	if url == "" {
		return "", apierr.Invalid("input_reference", shape)
	}
	return url, nil
}

// Set records one field of the request by its OpenAI name; it reports false for a name the
// shape does not have.
func (o *OpenAIRequest) Set(name, v string) bool {
	switch name {
	case "model":
		o.Model, o.HasModel = v, true
	case "prompt":
		o.Prompt, o.HasPrompt = v, true
	case "seconds":
		o.Seconds, o.HasSeconds = v, true
	case "size":
		o.Size, o.HasSize = v, true
	case "input_reference[image_url]":
		o.InputReferenceURL, o.HasInputReferenceURL = v, true
	default:
		return false
	}
	return true
}

// UploadID starts the id under which an uploaded input_reference stands in the request's
// content, as an asset:// reference only this create resolves.
const UploadID = "upload-"

// CreateOpenAI accepts a create in OpenAI's shape for a native alias: size becomes resolution
// and ratio, seconds duration, an uploaded input_reference (already stored and checked by the
// caller) the first frame. The contract's request built from them then goes through Create's
// own path: the same validation, pricing, reservation and idempotency. A refusal names the
// OpenAI field it comes from.
func (s *Service) CreateOpenAI(ctx context.Context, c keys.Caller, o OpenAIRequest, upload *Asset) (store.Task, bool, error) {
	if o.HasModel {
		if a, ok := c.Tenant.Alias(o.Model); ok && a.Product != catalog.ProductNative {
			return store.Task{}, false, apierr.Invalid("model",
				fmt.Sprintf("OpenAI's request shape is accepted for native video aliases only; %q is not one. Use the contract's request shape for it.", o.Model))
		}
	}
	meta := map[string]any{}
	if upload != nil && o.HasInputReferenceURL {
		return store.Task{}, false, apierr.Invalid("input_reference", "Send input_reference either as a file or as input_reference[image_url], not both.")
	}
	if o.HasSize {
		res, ratio, ok := OpenAISize(o.Size)
		if !ok {
			return store.Task{}, false, apierr.Invalid("size", fmt.Sprintf("Size %q has no native resolution and ratio; use one listed in docs/video.md, such as 1280x720 or 720x1280.", o.Size))
		}
		meta["resolution"] = res
		if upload == nil && !o.HasInputReferenceURL {
			// With a first frame the contract takes no ratio (the frame's shape decides), so
			// size then gives the resolution alone.
			meta["ratio"] = ratio
		}
	}
	if o.HasSeconds {
		n, err := strconv.Atoi(strings.TrimSpace(o.Seconds))
		if err != nil || n <= 0 || n > 1000 {
			return store.Task{}, false, apierr.Invalid("seconds", fmt.Sprintf("Seconds %q is not a whole number of seconds, such as \"4\".", o.Seconds))
		}
		meta["duration"] = n
	}
	if o.HasIdempotencyKey {
		meta["client_request_id"] = o.IdempotencyKey
	}
	body := map[string]any{"metadata": meta}
	if o.HasModel {
		body["model"] = o.Model
	}
	if o.HasPrompt {
		body["prompt"] = o.Prompt
	}
	firstFrame := func(url string) {
		meta["content"] = []any{map[string]any{"type": "image_url", "role": "first_frame",
			"image_url": map[string]any{"url": url}}}
	}
	if o.HasInputReferenceURL {
		// The contract's first frame by URL: the same checks as any image URL it is sent.
		firstFrame(o.InputReferenceURL)
	}
	var hashed []byte
	if upload != nil {
		// The replay hash sees the upload by its bytes' digest; the body the contract reads
		// refers to this request's stored copy.
		firstFrame("upload:sha256:" + o.UploadSHA256)
		var err error
		if hashed, err = json.Marshal(body, json.Deterministic(true)); err != nil {
			return store.Task{}, false, fmt.Errorf("encode mapped request: %w", err)
		}
		firstFrame("asset://" + upload.ID)
	}
	raw, err := json.Marshal(body, json.Deterministic(true))
	if err != nil {
		return store.Task{}, false, fmt.Errorf("encode mapped request: %w", err)
	}
	task, created, err := s.create(ctx, c, raw, upload, hashed)
	return task, created, openAIParam(err)
}

// openAIParam renames a refusal's param from the mapped contract field to the OpenAI field
// it came from, so that the client sees the name it sent.
func openAIParam(err error) error {
	var e *apierr.Error
	if !errors.As(err, &e) || e.Param == "" {
		return err
	}
	param := ""
	switch {
	case e.Param == "metadata.client_request_id":
		named := *e
		named.Param = IdempotencyHeader
		if e.Kind == apierr.KindIdempotency {
			named.Message = "This Idempotency-Key header was already used with a different request. Send the original request unchanged (the same fields and the same input_reference file) to retrieve its task, or use a new key for a new task."
		} else {
			named.Message = strings.Replace(e.Message, "metadata.client_request_id", "The Idempotency-Key header", 1)
		}
		return &named
	case e.Param == "metadata.resolution" || e.Param == "metadata.ratio":
		param = "size"
	case e.Param == "metadata.duration":
		param = "seconds"
	case strings.HasPrefix(e.Param, "metadata.content"):
		param = "input_reference"
	default:
		return err
	}
	named := *e
	named.Param = param
	named.Message = strings.NewReplacer("metadata.resolution", "size", "metadata.ratio", "size", "metadata.duration", "seconds",
		"metadata.content[0].image_url.url", "input_reference").Replace(e.Message)
	return &named
}
