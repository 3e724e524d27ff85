package contract

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"mediagen/internal/apierr"
)

// Speech limits. MaxSpeechChars and the reference counts are the contract's; the rest of the
// body is bounded by the shared parse limits (MaxBodyBytes, MaxDepth, …) and MaxURLBytes.
const (
	// MaxSpeechChars bounds SpeechRequest.Text, counted in Unicode code points (see
	// DecodeSpeech).
	MaxSpeechChars = 3000
	// MaxSpeechAudioReferences is the most audio_url references of one request.
	MaxSpeechAudioReferences = 3
	// MaxSpeechImageReferences is the number of image_url references image mode takes.
	MaxSpeechImageReferences = 1
)

// Speech modes, derived from metadata.references.
const (
	SpeechModeText  = "text"  // no references (or an empty array)
	SpeechModeAudio = "audio" // 1 to 3 audio_url references
	SpeechModeImage = "image" // exactly 1 image_url reference
)

// Types of a speech reference (metadata.references[i].type).
const (
	SpeechRefAudio = "audio_url"
	SpeechRefImage = "image_url"
)

// SpeechRequest is a decoded and validated POST /v1/audio/speech body.
type SpeechRequest struct {
	Model        string // the tenant alias, as sent; the catalog decides whether it is a speech alias
	Input        string // trimmed; "" when omitted or blank
	Instructions string // trimmed; "" when omitted or blank
	// Text is what is counted against MaxSpeechChars and handed to the engine: Input and
	// Instructions joined by one "\n", or just the non-empty one of them. Never empty.
	Text            string
	ClientRequestID string // trimmed; "" when omitted
	// References in request order; nil in text mode (also when an empty array was sent).
	References []SpeechReference
	Mode       string // SpeechModeText, SpeechModeAudio or SpeechModeImage
}

// SpeechReference is one item of metadata.references.
type SpeechReference struct {
	Type string // SpeechRefAudio or SpeechRefImage
	URL  string // as sent; an absolute https URL that passed the static checks of DecodeSpeech
}

var (
	speechTopFields  = []string{"model", "input", "instructions", "metadata"}
	speechMetaFields = []string{"client_request_id", "references"}
	speechRefFields  = []string{"type", "url"}
)

// DecodeSpeech decodes and validates a POST /v1/audio/speech body. It is pure (no I/O): the
// service still checks that the alias is a speech alias of the tenant, and fetches each
// reference URL through safefetch to confirm that it is reachable, public and of a supported
// media type. Every rejection is KindInvalid (400 invalid_request_error) with Param set to the
// offending field's path, and the first problem found is returned, in this order: JSON syntax
// and limits, unknown top-level fields, model, input and instructions (types, characters,
// presence, length), unknown metadata fields, metadata.client_request_id, then
// metadata.references item by item (fields, type, url, then the mode rules).
//
// Text: input and instructions are trimmed of leading and trailing Unicode white space
// (strings.TrimSpace). At least one of them must then be non-empty (else Param "input"). The
// combined text is input + "\n" + instructions, the newline only when both are non-empty, and
// may hold at most MaxSpeechChars characters, where a character is one Unicode code point: not
// a byte, not a UTF-16 unit and not a user-perceived character (grapheme cluster). So "é" sent
// precomposed (U+00E9) counts 1, "e" + U+0301 counts 2, "漢" counts 1, "😀" counts 1 and a
// ZWJ family emoji counts one per code point it is made of. The separating newline counts 1.
// An over-long text is reported on Param "input" even when instructions hold most of it.
// Control characters other than tab, line feed and carriage return are rejected inside the
// text; invalid UTF-8 and lone surrogate escapes are rejected by the parser.
//
// References: each item is exactly { "type": "audio_url" | "image_url", "url": string }. The
// url must be an absolute https URL of at most MaxURLBytes with a host and no user info, white
// space, control characters or backslashes; http, file://, asset://, data:, other schemes and
// bare Base64 are rejected, and so are localhost and other local names (*.localhost, *.local,
// *.internal, *.home.arpa), single-label names, numeric host spellings (2130706433,
// 0x7f000001, 0177.0.0.1, 127.1) and IP literals in any non-public range (loopback, private,
// link-local, unique-local, CGNAT, unspecified, multicast, documentation…, IPv4-mapped IPv6
// judged by its IPv4). Any port 1–65535 passes here; the fetch policy (safefetch) decides
// ports. The full rule list is on checkSpeechURL. Modes are text (no references or an empty
// array), audio (1 to 3 audio_url) or image (exactly 1 image_url); mixing the two types, a
// fourth audio_url or a second image_url is rejected on Param "metadata.references".
//
// Idempotency: compare CanonicalForIdempotency of the decoded request, not Canonical(body).
func DecodeSpeech(body []byte) (*SpeechRequest, *apierr.Error) {
	root, err := parseObject(body)
	if err != nil {
		return nil, err
	}
	if err := root.checkFields(speechTopFields, "speech requests", func(n string) string {
		return speechHint(speechLevelTop, n, root.param(n))
	}); err != nil {
		return nil, err
	}
	req := &SpeechRequest{Mode: SpeechModeText}
	if req.Model, err = readModel(root); err != nil {
		return nil, err
	}
	if err := readSpeechText(root, req); err != nil {
		return nil, err
	}
	meta, ok, err := readMetadata(root)
	if err != nil {
		return nil, err
	}
	if !ok {
		return req, nil
	}
	if err := meta.checkFields(speechMetaFields, "speech metadata", func(n string) string {
		return speechHint(speechLevelMeta, n, meta.param(n))
	}); err != nil {
		return nil, err
	}
	if req.ClientRequestID, err = readClientRequestID(meta); err != nil {
		return nil, err
	}
	if req.References, req.Mode, err = decodeSpeechReferences(meta); err != nil {
		return nil, err
	}
	return req, nil
}

// readSpeechText reads input and instructions and builds Text.
func readSpeechText(root object, req *SpeechRequest) *apierr.Error {
	input, hasInput, err := root.str("input")
	if err != nil {
		return err
	}
	instructions, _, err := root.str("instructions")
	if err != nil {
		return err
	}
	req.Input = strings.TrimSpace(input)
	req.Instructions = strings.TrimSpace(instructions)
	if err := checkSpeechChars(root.param("input"), req.Input); err != nil {
		return err
	}
	if err := checkSpeechChars(root.param("instructions"), req.Instructions); err != nil {
		return err
	}
	switch {
	case req.Input == "" && req.Instructions == "" && hasInput:
		return invalidf("input", "input is empty or only white space; send the text to speak in input (or the full text in instructions).")
	case req.Input == "" && req.Instructions == "":
		return invalidf("input", "input is required: send the text to speak in input, or the full text in instructions.")
	case req.Input == "":
		req.Text = req.Instructions
	case req.Instructions == "":
		req.Text = req.Input
	default:
		req.Text = req.Input + "\n" + req.Instructions
	}
	if n := utf8.RuneCountInString(req.Text); n > MaxSpeechChars {
		return invalidf("input", "The text to speak has %d characters (input and instructions combined after trimming, including the newline between them); at most %d are allowed. Characters are counted as Unicode code points.", n, MaxSpeechChars)
	}
	return nil
}

// checkSpeechChars rejects text that no speech engine should receive and that some stores
// cannot hold (NUL): invalid UTF-8 (unreachable after parse, kept for direct callers) and
// control characters other than tab, line feed and carriage return.
func checkSpeechChars(param, s string) *apierr.Error {
	if !utf8.ValidString(s) {
		return invalidf(param, "%s must be valid UTF-8 text.", param)
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' {
			return invalidf(param, "%s must not contain control characters other than tab, line feed and carriage return.", param)
		}
	}
	return nil
}

// decodeSpeechReferences reads metadata.references and derives the mode.
func decodeSpeechReferences(meta object) ([]SpeechReference, string, *apierr.Error) {
	v, err := meta.expect("references", '[', "an array")
	if v == nil || err != nil {
		return nil, SpeechModeText, err
	}
	param := meta.param("references")
	var refs []SpeechReference
	audio, image := 0, 0
	for i, e := range v.elems {
		ip := joinIndex(param, i)
		if e.kind != '{' {
			return nil, "", invalidf(ip, "%s must be an object { \"type\": \"audio_url\" or \"image_url\", \"url\": \"https://…\" }, not %s.", ip, KindName(byte(e.kind)))
		}
		ref, err := decodeSpeechReference(object{path: ip, n: e})
		if err != nil {
			return nil, "", err
		}
		if ref.Type == SpeechRefAudio {
			audio++
		} else {
			image++
		}
		switch {
		case audio > 0 && image > 0:
			return nil, "", invalidf(param, "%s mixes audio_url and image_url references; send up to %d audio_url references or exactly %d image_url reference, never both.", param, MaxSpeechAudioReferences, MaxSpeechImageReferences)
		case audio > MaxSpeechAudioReferences:
			return nil, "", invalidf(param, "%s has more than %d audio_url references; at most %d are allowed.", param, MaxSpeechAudioReferences, MaxSpeechAudioReferences)
		case image > MaxSpeechImageReferences:
			return nil, "", invalidf(param, "%s has more than %d image_url reference; image mode takes exactly %d.", param, MaxSpeechImageReferences, MaxSpeechImageReferences)
		}
		refs = append(refs, ref)
	}
	switch {
	case audio > 0:
		return refs, SpeechModeAudio, nil
	case image > 0:
		return refs, SpeechModeImage, nil
	}
	return nil, SpeechModeText, nil
}

func decodeSpeechReference(o object) (SpeechReference, *apierr.Error) {
	var ref SpeechReference
	if err := o.checkFields(speechRefFields, "a speech reference", func(n string) string {
		return speechHint(speechLevelRef, n, o.param(n))
	}); err != nil {
		return ref, err
	}
	typ, ok, err := o.str("type")
	if err != nil {
		return ref, err
	}
	tp := o.param("type")
	if !ok {
		return ref, invalidf(tp, "%s is required: audio_url or image_url.", tp)
	}
	if typ != SpeechRefAudio && typ != SpeechRefImage {
		return ref, invalidf(tp, "%s must be audio_url or image_url.", tp)
	}
	u, ok, err := o.str("url")
	if err != nil {
		return ref, err
	}
	up := o.param("url")
	if !ok {
		return ref, invalidf(up, "%s is required: a public https URL of the reference media.", up)
	}
	if err := checkSpeechURL(up, u); err != nil {
		return ref, err
	}
	return SpeechReference{Type: typ, URL: u}, nil
}

// speechFingerprint is the payload CanonicalForIdempotency serializes. Its field order is
// fixed; "v" versions the format so that a future change cannot silently compare equal to
// stored fingerprints.
type speechFingerprint struct {
	V            int                    `json:"v"`
	Model        string                 `json:"model"`
	Input        string                 `json:"input"`
	Instructions string                 `json:"instructions"`
	References   []speechFingerprintRef `json:"references"`
}

type speechFingerprintRef struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// CanonicalForIdempotency returns the bytes the speech service compares (or hashes) to decide
// whether a retry with the same client_request_id is the same request. Use it rather than
// Canonical(body) for speech: it compares what is generated and charged, so bodies that differ
// only in member order, white space, string escapes, leading/trailing white space of input or
// instructions, an omitted versus empty instructions, an omitted versus empty
// metadata/references, compare equal. It covers the model alias, the trimmed input and
// instructions (kept apart, so moving text from input to instructions is a different request)
// and the references in order. client_request_id itself is left out: it is the lookup key.
// The result is a compact JSON object with a version member; it is stable across releases
// unless the version changes.
func (r *SpeechRequest) CanonicalForIdempotency() []byte {
	fp := speechFingerprint{V: 1, Model: r.Model, Input: r.Input, Instructions: r.Instructions,
		References: make([]speechFingerprintRef, 0, len(r.References))}
	for _, ref := range r.References {
		fp.References = append(fp.References, speechFingerprintRef(ref))
	}
	// A decoded request holds valid UTF-8 only; AllowInvalidUTF8 keeps a hand-built request
	// from making Marshal fail (invalid bytes become U+FFFD). Nothing else can fail here.
	b, err := json.Marshal(fp, jsontext.AllowInvalidUTF8(true))
	if err != nil {
		panic("contract: speech fingerprint: " + err.Error())
	}
	return b
}
