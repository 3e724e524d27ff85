// Package contract owns the public wire (spec/contract.md): the request bodies of POST
// /v1/videos (native generation, standalone enhancement and production) and POST
// /v1/audio/speech with every validation rule the contract states for them; the response
// bodies of the video, speech and asset library routes (VideoTask, SpeechResponse, Asset, …),
// which the services fill from their records; the one strict JSON parser (ParseObject,
// ParseValue), which the asset library's flat request bodies are read from too; and the
// public enums. It is pure: no I/O, no clock, no database, no catalog import. The catalog
// imports this package for its enum types. What is wire but not here, and why, is in
// docs/architecture.md ("Imports").
//
// # API
//
//	ParseVideo(body) (*Video, *apierr.Error)      one strict parse of the whole body
//	Video.Model() (string, *apierr.Error)         the alias, read strictly, to find the Product
//	Video.Decode(Product, Entitlements)           the whole body, decoded and validated
//	    (*VideoRequest, *apierr.Error)
//	Canonical(body) ([]byte, error)               RFC 8785 form for idempotency comparison
//	Dimensions(resolution, ratio) (w, h int)      pixel size of an output (table on Dimensions)
//	Labels(items) []string                        @Image1/@Video1/@Audio1 names of content items
//	Product.Validate() error                      for the catalog, at load time
//
// Every rejection is an *apierr.Error, the service's one error vocabulary: apierr.KindInvalid
// (400 invalid_request_error) or apierr.KindPermission (403 permission_error), with the field's
// path in Param. The use cases return it as it is.
//
// Enums: Route, Family, Tier, EnhRoute, Mode, ContentType, ContentRole. Limits are exported
// constants (MaxBodyBytes, MaxDepth, MaxContentItems, …).
//
// The video service parses the body once (ParseVideo), reads the alias (Video.Model), maps it
// to a Product through the catalog, then decodes (Video.Decode). What remains for the
// service: resolving asset:// ids (existence, tenant, type, Active), fetching and probing
// https video inputs for production (and the 4–30 s length of an edit reference video, see
// EditReferenceMinSeconds), pricing, reservation and storage.
//
// # Strict decoding
//
// The body is read token by token with jsontext into an ordered tree, so every error names the
// exact field path in the error's Param (metadata.duration, metadata.content[2].role,
// metadata.content[0].image_url.url). Names are case-sensitive; duplicate names (also when
// spelled with escapes), trailing data, invalid UTF-8 and wrong JSON types are rejected. The
// body is bounded: MaxBodyBytes, MaxDepth nesting, MaxValues values, MaxNameBytes per name.
// Fields a route does not list are rejected with their path; fields clients commonly misplace
// or that the contract forbids (top-level mode, task_type anywhere, callbacks, routing and
// project fields, credentials, supplied input durations, inline/Base64 uploads, metadata fields
// at the top level, fields of another route) get a message saying what to do instead.
//
// Errors: Video.Decode returns the first problem found, checking in this order: JSON syntax and
// limits, unknown top-level fields, model, top-level values, unknown metadata fields, content,
// task type and mode, then each metadata value. All 400 problems come before any 403, so a
// permission error means the body is otherwise valid; the exception is a production alias
// without production access, refused (403, param "model") before the body is examined.
// Messages are English sentences without Go or decoder internals; 403 messages ask the client
// to confirm availability with the operator.
//
// # Decisions where the contract is silent
//
//   - null is never "absent": any field sent as null is rejected, required or optional, on
//     every route. The one exception is the top-level prompt of standalone enhancement, which
//     is accepted with any JSON value (string, empty, null, object…) and ignored; it is still
//     parsed, so the size, depth and duplicate-name rules apply to it.
//   - Integers (duration, seed, fps, bitrate, bit_depth, resolution_limit) must be written as
//     integer literals: 5.0 and 5e0 are rejected as decimals. Enhancement metadata.duration is
//     any JSON number > 0 and <= MaxEnhanceSourceSeconds (86400); the cap keeps the
//     reservation arithmetic bounded.
//   - Enum values are case-sensitive ("720P", "MP4", "Professional" are rejected).
//   - Native duration: 2.5 takes omitted, -1 or 4–30; Mini takes omitted or 4–15 (the contract
//     lists no -1 for Mini); Standard and Fast 2.0 take omitted, -1 or 4–15. Omitted decodes to
//     Duration -1 (model default) on every family and on production.
//   - Native resolution defaults to 720p on every family. 1080p/4k on Fast and Mini and 4k on
//     2.5 are 400 whatever the packages; 4k on Standard 2.0 is 403 without Native4K.
//   - watermark, generate_audio, output_format and return_last_frame are accepted on every
//     native family ("optional, 2.5 alias" documents watermark for 2.5 without the "only" the
//     contract uses for omni_reference_task_type). seed is accepted on Standard/Fast/Mini as any
//     64-bit integer and rejected on 2.5 and production. omni_reference_task_type is 2.5 only.
//   - Native return_last_frame needs no package; on production it needs Entitlements.LastFrame.
//   - Modes: no content (or an empty array) is text; a first_frame makes first_frame, with a
//     last_frame first_last_frame; reference items make reference; an explicit edit/extend
//     makes those modes and needs a reference_video; an explicit reference needs a reference
//     item. Frame items cannot be mixed with reference items. At most one first_frame and one
//     last_frame; a last_frame needs a first_frame; their order in the array is free.
//     Reference images, videos and audio (alone or mixed, including audio only) are accepted on
//     every native family.
//   - prompt is required (non-blank) only in text mode; with content it may be omitted or
//     empty. prompt is at most MaxPromptBytes (32 KiB), user at most MaxUserBytes (256; empty
//     accepted), model at most MaxModelBytes (128).
//   - Content URLs: absolute https with a host and without user info, no whitespace or control
//     characters, at most MaxURLBytes; or asset://<id> with an id of 1–128 of [A-Za-z0-9._-]
//     starting with a letter or digit. asset:// is syntactically accepted for every role; the
//     service checks the asset's type. Reachability and private-network checks are the
//     service's (safefetch).
//   - Enhancement video_url: absolute http or https with a host, no user info; asset:// and
//     data: rejected.
//   - Enhancement resolution names: 1080p, 2k, 4k (+8k on the Standard alias). resolution_limit
//     above 2160 is the 8k band and, like resolution 8k, needs Enhance8K (403).
//     Band: limit <=720 → 720p, <=1080 → 1080p, <=1440 → 2k, <=2160 → 4k, else 8k.
//   - Enhancement tier fields are checked before their values: scene on Lite or Professional,
//     enhance_style on Lite, bit_depth on Lite or Standard are 400 whatever their value.
//   - Enhancement rejects top-level user and seed (the contract lists only model, metadata and
//     the legacy prompt).
//   - Production with metadata omitted reports metadata.resolution as missing. output_format is
//     rejected on production even when "mp4", since it is outside the production contract.
//   - bitrate and bitrate_level may both be sent; both are kept and bitrate wins downstream.
//   - client_request_id: on every video route, ASCII whitespace trimmed, then 1–64 bytes of
//     printable ASCII (0x20–0x7E); the trimmed value is returned.
//   - Canonical keeps integer digits exactly (JCS would round integers beyond 2^53, making two
//     different seeds look identical); floats and strings are canonicalized per RFC 8785.
//   - Dimensions: short side from the resolution, long side from the ratio rounded to even;
//     adaptive is sized as 16:9.
package contract
