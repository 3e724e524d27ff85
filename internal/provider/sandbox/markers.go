package sandbox

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// markers are the integrator controls found in a prompt, a speech text or an enhancement
// source URL. The zero value means "behave normally".
type markers struct {
	Fail      bool          `json:"fail,omitempty"`
	FailCode  string        `json:"fail_code,omitempty"` // "" means the route's default code
	Expire    bool          `json:"expire,omitempty"`
	Slow      time.Duration `json:"slow,omitempty"`
	Transient int           `json:"transient,omitempty"`
	// Enhance holds the markers of a production prompt's [sandbox:enhance=…] for the
	// enhancement half (fail, fail:CODE, expire, slow:10s, transient:2, comma-separated).
	Enhance string `json:"enhance,omitempty"`
}

// textMarker finds [sandbox:…] in prompts and speech texts.
var textMarker = regexp.MustCompile(`\[sandbox:([^\]]*)\]`)

// failCode is what [sandbox:fail=CODE] accepts: codes like InvalidParameter.TaskTypeMismatch.
var failCode = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.\-]{0,63}$`)

// parseTextMarkers returns the markers in s and s with them removed (and the whitespace
// they leave tidied). A malformed or unknown marker is an error: a typo should not
// silently render a normal video.
func parseTextMarkers(s string) (markers, string, error) {
	var m markers
	var errs []string
	for _, sub := range textMarker.FindAllStringSubmatch(s, -1) {
		name, value, hasValue := strings.Cut(strings.TrimSpace(sub[1]), "=")
		if err := m.apply(strings.TrimSpace(name), strings.TrimSpace(value), hasValue); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", sub[0], err))
		}
	}
	if len(errs) > 0 {
		return markers{}, "", fmt.Errorf("invalid sandbox marker %s", strings.Join(errs, "; "))
	}
	return m, stripMarkers(s), nil
}

// stripMarkers removes every [sandbox:…] and collapses the blanks left around it,
// keeping line breaks.
func stripMarkers(s string) string {
	s = textMarker.ReplaceAllString(s, " ")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// SandboxParam is the query parameter of an enhancement source URL that carries markers.
const SandboxParam = "sandbox"

// parseURLMarkers reads ?sandbox=… from an enhancement source URL: fail, fail:CODE,
// expire, slow:10s, transient:2; several values are given as repeated parameters or
// separated by commas. It also returns the URL without the parameter, which is what
// the sandbox fetches.
func parseURLMarkers(raw string) (markers, string, error) {
	var m markers
	if raw == "" {
		return m, raw, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery == "" {
		// A malformed URL fails later, when it is fetched, like any other bad source.
		return m, raw, nil
	}
	var keep, errs []string
	for _, part := range strings.Split(u.RawQuery, "&") {
		k, v, _ := strings.Cut(part, "=")
		if key, err := url.QueryUnescape(k); err != nil || key != SandboxParam {
			keep = append(keep, part)
			continue
		}
		v, err := url.QueryUnescape(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%q: bad escaping", part))
			continue
		}
		if err := m.applyList(v); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return markers{}, "", fmt.Errorf("invalid ?%s= value %s", SandboxParam, strings.Join(errs, "; "))
	}
	u.RawQuery = strings.Join(keep, "&")
	u.ForceQuery = false
	return m, u.String(), nil
}

func (m *markers) apply(name, value string, hasValue bool) error {
	switch name {
	case "fail":
		if hasValue {
			if !failCode.MatchString(value) {
				return fmt.Errorf("code %q must be 1-64 letters, digits, '.', '_' or '-' starting with a letter", value)
			}
			m.FailCode = value
		}
		m.Fail = true
	case "expire":
		if hasValue {
			return fmt.Errorf("expire takes no value")
		}
		m.Expire = true
	case "slow":
		d, err := time.ParseDuration(value)
		if err != nil || d < 0 || d > MaxSlow {
			return fmt.Errorf("slow needs a duration such as 10s, at most %v", MaxSlow)
		}
		m.Slow = max(m.Slow, d)
	case "transient":
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 || n > MaxTransient {
			return fmt.Errorf("transient needs a count 0..%d", MaxTransient)
		}
		m.Transient = max(m.Transient, n)
	case "enhance":
		var half markers
		if err := half.applyList(value); err != nil {
			return err
		}
		m.Enhance = value
	default:
		return fmt.Errorf("unknown marker %q (known: fail, fail=CODE, expire, slow=DURATION, transient=N, enhance=…)", name)
	}
	return nil
}

// outcome is the terminal state a marker forces: a failure wins over expiry.
func (m markers) outcome(defaultCode, taskType string) *outcome {
	switch {
	case m.Fail:
		code := m.FailCode
		if code == "" {
			code = defaultCode
		}
		return &outcome{Status: "failed", Code: code, Message: failMessage(code, taskType)}
	case m.Expire:
		return &outcome{Status: "expired", Code: CodeExpired, Message: "The task expired before it could be completed."}
	}
	return nil
}

// failMessage is the sanitized message for a marker failure.
func failMessage(code, taskType string) string {
	switch code {
	case CodeTaskTypeMismatch:
		if taskType == "" {
			taskType = "auto"
		}
		return fmt.Sprintf("The task type does not match the specified value: the prompt and inputs are not consistent with omni_reference_task_type %q.", taskType)
	case CodeGenerationFailed:
		return "Video generation failed."
	case CodeSpeechFailed:
		return "Speech generation failed."
	}
	return "The task failed (" + code + ")."
}

// applyList applies URL-style items: "fail", "fail:CODE", "slow:10s", comma-separated.
func (m *markers) applyList(v string) error {
	var errs []string
	for _, item := range strings.Split(v, ",") {
		name, value, hasValue := strings.Cut(strings.TrimSpace(item), ":")
		if name == "enhance" {
			errs = append(errs, fmt.Sprintf("%q: enhance markers go in a production prompt", item))
			continue
		}
		if err := m.apply(strings.TrimSpace(name), strings.TrimSpace(value), hasValue); err != nil {
			errs = append(errs, fmt.Sprintf("%q: %v", item, err))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}
