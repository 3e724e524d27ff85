package contract

import (
	"strings"

	"mediagen/internal/apierr"
)

// Size limits on free-text fields. The contract states none; these keep stored rows and
// upstream requests bounded.
const (
	MaxModelBytes           = 128
	MaxPromptBytes          = 32 << 10
	MaxUserBytes            = 256
	MaxClientRequestIDBytes = 64 // from the contract
)

// Video is a POST /v1/videos body parsed once, with every rule of the contract: Model and
// Decode read the same tree, so the service's two steps (find the alias, then decode for its
// product) cost one parse. Decoding never modifies the tree.
type Video struct{ root object }

// ParseVideo parses body strictly: one JSON object under the parser's limits, or the error
// the client is answered with.
func ParseVideo(body []byte) (*Video, *apierr.Error) {
	root, err := parseObject(body)
	if err != nil {
		return nil, err
	}
	return &Video{root: root}, nil
}

// Model is the body's model alias, read strictly (a non-empty string), so that the caller can
// look up the product before decoding the rest.
func (v *Video) Model() (string, *apierr.Error) { return readModel(v.root) }

// Decode decodes and validates the body for the product of its alias under the tenant's
// entitlements. It returns the first problem found, so Param points at one field. All 400
// problems of a body are found before any 403, so a permission error means the body is
// otherwise valid; the one exception is a production alias without production access, which
// is refused before the body is examined.
func (v *Video) Decode(p Product, e Entitlements) (*VideoRequest, *apierr.Error) {
	if p.Validate() != nil || p.Route == RouteSpeech {
		return nil, invalidf("model", "This model alias cannot be used to create video tasks.")
	}
	switch p.Route {
	case RouteNative:
		return decodeNative(v.root, p.Family, e)
	case RouteProduction:
		return decodeProduction(v.root, p.Tier, e)
	default:
		return decodeEnhancement(v.root, p.Enh, e)
	}
}

func parseObject(body []byte) (object, *apierr.Error) {
	n, err := parse(body)
	if err != nil {
		return object{}, err
	}
	if n.kind != '{' {
		return object{}, invalidf("", "The request body must be a JSON object, not %s.", KindName(byte(n.kind)))
	}
	return object{n: n}, nil
}

func readModel(root object) (string, *apierr.Error) {
	s, ok, err := root.str("model")
	if err != nil {
		return "", err
	}
	if !ok {
		return "", invalidf("model", "model is required: use the model alias supplied by your operator.")
	}
	if strings.TrimSpace(s) == "" {
		return "", invalidf("model", "model must not be empty.")
	}
	if len(s) > MaxModelBytes {
		return "", invalidf("model", "model is longer than %d bytes.", MaxModelBytes)
	}
	return s, nil
}

// readPromptUser reads the optional top-level prompt and user of native and production.
func readPromptUser(root object, req *VideoRequest) *apierr.Error {
	prompt, ok, err := root.str("prompt")
	if err != nil {
		return err
	}
	if len(prompt) > MaxPromptBytes {
		return invalidf("prompt", "prompt is longer than %d bytes.", MaxPromptBytes)
	}
	req.Prompt, req.HasPrompt = prompt, ok
	user, _, err := root.str("user")
	if err != nil {
		return err
	}
	if len(user) > MaxUserBytes {
		return invalidf("user", "user is longer than %d bytes.", MaxUserBytes)
	}
	req.User = user
	return nil
}

// readMetadata returns the metadata object; ok is false when it is omitted.
func readMetadata(root object) (object, bool, *apierr.Error) {
	return root.obj("metadata")
}

// readClientRequestID applies the enhancement rule on every route: 1 to 64 printable ASCII
// bytes after trimming; the trimmed value is the key.
func readClientRequestID(meta object) (string, *apierr.Error) {
	s, ok, err := meta.str("client_request_id")
	if !ok {
		return "", err
	}
	param := meta.param("client_request_id")
	t := strings.Trim(s, " \t\r\n\v\f")
	if t == "" {
		return "", invalidf(param, "%s must not be empty or only whitespace.", param)
	}
	if len(t) > MaxClientRequestIDBytes {
		return "", invalidf(param, "%s must be at most %d bytes after trimming.", param, MaxClientRequestIDBytes)
	}
	for i := 0; i < len(t); i++ {
		if t[i] < 0x20 || t[i] > 0x7e {
			return "", invalidf(param, "%s must contain only printable ASCII characters.", param)
		}
	}
	return t, nil
}

// emptyMeta stands in for an omitted metadata object so that readers need no nil checks.
func emptyMeta() object { return object{path: "metadata", n: &node{kind: '{'}} }
