package catalog

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"mediagen/internal/contract"
)

// Generation capabilities of kind kling (docs/upstreams.md#kling, from Kling's API
// reference): mode std makes 720p and pro 1080p; 5 or 10 seconds; 16:9, 9:16 or 1:1 for
// text (adaptive: 16:9, Kling's default); a first frame, a last frame or both (image2video,
// whose output takes the image's shape, so the contract's adaptive). No seed, no sound
// switch, no visible-watermark switch, mp4 only.
var (
	klingResolutions = []string{"720p", "1080p"}
	klingRatios      = []string{"adaptive", "16:9", "9:16", "1:1"}
	klingSeconds     = []int{5, 10}
)

// klingMaxPrompt is the longest prompt Kling takes, in characters (its reference: "cannot
// exceed 2500 characters"); the contract allows 32 KiB, and a longer prompt would only be
// refused by Kling after the task was accepted.
const klingMaxPrompt = 2500

// refuseKling names what of a request kind kling cannot do.
func refuseKling(req *contract.VideoRequest, g genParams) (string, string) {
	switch {
	case g.outputFormat == "mov":
		return "metadata.output_format", "metadata.output_format mov is not available for this model; use mp4 (the default)."
	case g.resolution != "" && !slices.Contains(klingResolutions, g.resolution):
		return "metadata.resolution", "metadata.resolution " + g.resolution + " is not available for this model; use 720p or 1080p."
	case !slices.Contains(klingRatios, g.ratio):
		return "metadata.ratio", "metadata.ratio " + g.ratio + " is not available for this model; use 16:9, 9:16 or 1:1."
	case g.duration != -1 && !slices.Contains(klingSeconds, g.duration):
		return "metadata.duration", fmt.Sprintf("metadata.duration %d is not available for this model; use 5 or 10 seconds.", g.duration)
	case g.audio != nil && *g.audio:
		return "metadata.generate_audio", "metadata.generate_audio true is not available for this model: its videos have no sound."
	case g.watermark != nil && *g.watermark:
		return "metadata.watermark", "metadata.watermark true is not available for this model."
	case req.Seed != nil:
		return "seed", "seed is not available for this model."
	case g.taskType != "" && g.taskType != "auto":
		return "metadata.omni_reference_task_type", "metadata.omni_reference_task_type " + g.taskType + " is not available for this model."
	case utf8.RuneCountInString(req.Prompt) > klingMaxPrompt:
		return "prompt", fmt.Sprintf("prompt is longer than this model takes: at most %d characters.", klingMaxPrompt)
	}
	seen := map[contract.ContentRole]bool{}
	for _, it := range req.Content {
		if it.Type != "image_url" || (it.Role != contract.RoleFirstFrame && it.Role != contract.RoleLastFrame) || seen[it.Role] {
			return "metadata.content", "This model takes at most a first frame and a last frame, as image_url items."
		}
		seen[it.Role] = true
	}
	return "", ""
}

func (u *UpstreamAccount) klingKeysSet() bool {
	return u.AccessKeyEnv != "" || u.AccessKeyFile != "" || u.SecretKeyEnv != "" || u.SecretKeyFile != ""
}

// checkKlingKeys: a kling account names exactly one place for each of its two keys and no
// API key; another kind names no kling key.
func (u *UpstreamAccount) checkKlingKeys() []error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("upstream %q: "+format, append([]any{u.Name}, args...)...))
	}
	if u.Kind != KindKling && u.Kind != KindArkAssets {
		add("access_key_env, access_key_file, secret_key_env and secret_key_file apply to kinds kling and ark_assets only")
		return errs
	}
	if u.APIKeyEnv != "" || u.APIKeyFile != "" {
		add("kind %s signs its requests from an access key and a secret key: give access_key_env or access_key_file and secret_key_env or secret_key_file, not api_key_env or api_key_file", u.Kind)
	}
	if (u.AccessKeyEnv == "") == (u.AccessKeyFile == "") {
		add("give exactly one of access_key_env and access_key_file for the access key; the key itself never goes in the catalog")
	}
	if (u.SecretKeyEnv == "") == (u.SecretKeyFile == "") {
		add("give exactly one of secret_key_env and secret_key_file for the secret key; the key itself never goes in the catalog")
	}
	return errs
}

// KlingKeys reads a kling account's access and secret keys from where the catalog says they
// are. The error names the account and the variable or file, never a key.
func (u UpstreamAccount) KlingKeys(getenv func(string) string, readFile func(string) ([]byte, error)) (access, secret string, err error) {
	read := func(what, env, file string) (string, error) {
		var key, from string
		switch {
		case env != "":
			key, from = getenv(env), "environment variable "+env
		case file != "":
			from = "file " + file
			b, err := readFile(file)
			if err != nil {
				var big string
				if errors.Is(err, ErrKeyFileTooLarge) {
					big = ": it is " + ErrKeyFileTooLarge.Error()
				}
				return "", fmt.Errorf("upstream %s: the %s %s cannot be read%s", u.Name, what, from, big)
			}
			key = string(b)
		default:
			return "", fmt.Errorf("upstream %s: no %s is configured", u.Name, what)
		}
		key = strings.TrimSpace(key)
		if key == "" {
			return "", fmt.Errorf("upstream %s: the %s %s is missing or empty", u.Name, what, from)
		}
		return key, nil
	}
	if access, err = read("access key", u.AccessKeyEnv, u.AccessKeyFile); err != nil {
		return "", "", err
	}
	if secret, err = read("secret key", u.SecretKeyEnv, u.SecretKeyFile); err != nil {
		return "", "", err
	}
	return access, secret, nil
}
