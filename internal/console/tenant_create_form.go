package console

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"mediagen/internal/catalog"
	"mediagen/internal/contract"
)

// The create forms' fields, the contract body they build, and the choices they offer: only
// the tenant's aliases, and the resolutions its aliases render and its packages allow, as the
// contract package lists them (contract/options.go).

const (
	routeNative      = "native"
	routeEnhancement = "enhancement"
	routeProduction  = "production"
	routeSpeech      = "speech"
)

var routeLabels = []struct{ route, label string }{
	{routeNative, "Native video"},
	{routeEnhancement, "Enhancement"},
	{routeProduction, "Production"},
	{routeSpeech, "Speech"},
}

// createFormFields are the fields each route's form posts besides csrf, route and quoted.
var createFormFields = map[string][]string{
	routeNative:      {"model", "prompt", "duration", "resolution", "ratio", "generate_audio", "image_url", "image_role", "client_request_id"},
	routeProduction:  {"model", "prompt", "duration", "resolution", "ratio", "generate_audio", "image_url", "image_role", "fps", "return_last_frame", "client_request_id"},
	routeEnhancement: {"model", "video_url", "duration", "tool_version", "resolution", "fps", "client_request_id"},
	routeSpeech:      {"model", "input", "instructions", "client_request_id"},
}

// resolutionOrder orders the union of several aliases' resolutions.
var resolutionOrder = []string{"480p", "720p", "1080p", "2k", "4k", "8k"}

type createTab struct {
	Route, Label string
	Current      bool
}

// aliasChoice is one alias of the form's route and what it allows.
type aliasChoice struct{ Name, Hint string }

// createOptions are what one route's form offers the tenant.
type createOptions struct {
	Route       string
	Tabs        []createTab
	Aliases     []aliasChoice
	Resolutions []string
	Ratios      []string
	ImageRoles  []string
	// ToolVersions: an enhancement alias of the Standard route (Standard and Professional).
	ToolVersions bool
	// LastFrame: the production package includes the last frame.
	LastFrame bool
}

// Native, Enhancement, Production and Speech tell the template which form it draws.
func (o createOptions) Native() bool      { return o.Route == routeNative }
func (o createOptions) Enhancement() bool { return o.Route == routeEnhancement }
func (o createOptions) Production() bool  { return o.Route == routeProduction }
func (o createOptions) Speech() bool      { return o.Route == routeSpeech }

// Generation: native and production share their generation fields.
func (o createOptions) Generation() bool { return o.Native() || o.Production() }

// createOptions builds the form of route for the session's tenant; an unknown route or one the
// tenant lacks is its first route ("" when it has none).
func (t *Tenant) createOptions(s *Session, route string) createOptions {
	tenant := s.Caller.Tenant
	pk := tenant.Packages
	by := map[string][]*catalog.Alias{}
	for _, a := range tenant.Aliases {
		switch {
		case a.Product == catalog.ProductProduction && !pk.Production.Enabled:
		case a.Product == catalog.ProductSpeech && t.cfg.Speech == nil:
		default:
			by[string(a.Product)] = append(by[string(a.Product)], a)
		}
	}
	var o createOptions
	for _, rl := range routeLabels {
		if len(by[rl.route]) == 0 {
			continue
		}
		o.Tabs = append(o.Tabs, createTab{Route: rl.route, Label: rl.label})
		if o.Route == "" || rl.route == route {
			o.Route = rl.route
		}
	}
	for i := range o.Tabs {
		o.Tabs[i].Current = o.Tabs[i].Route == o.Route
	}
	res := map[string]bool{}
	for _, a := range by[o.Route] {
		c := aliasChoice{Name: a.Name}
		switch o.Route {
		case routeNative:
			f := contract.Family(a.Family)
			var rs []string
			for _, r := range contract.NativeResolutions(f) {
				if r != "4k" || pk.Native4K {
					rs = append(rs, r)
					res[r] = true
				}
			}
			c.Hint = fmt.Sprintf("%s (%s family): %s; %s", a.Name, f, strings.Join(rs, ", "), durationHint(contract.NativeDurations(f)))
		case routeProduction:
			c.Hint = fmt.Sprintf("%s (%s tier): %s", a.Name, a.Tier, durationHint(contract.ProductionDurations()))
		case routeEnhancement:
			r := contract.EnhRoute(a.Route)
			var rs []string
			for _, v := range contract.EnhancementResolutions(r) {
				if v != "8k" || pk.Enhance8K {
					rs = append(rs, v)
					res[v] = true
				}
			}
			if r == contract.EnhStandard {
				o.ToolVersions = true
				c.Hint = fmt.Sprintf("%s (Standard and Professional): %s", a.Name, strings.Join(rs, ", "))
			} else {
				c.Hint = fmt.Sprintf("%s (Lite, no tool version): %s", a.Name, strings.Join(rs, ", "))
			}
		case routeSpeech:
			c.Hint = a.Name + ": text up to 3000 characters, input and instructions together"
		}
		o.Aliases = append(o.Aliases, c)
	}
	if o.Route == routeProduction {
		for _, r := range contract.ProductionResolutions {
			if slices.Contains(pk.Production.Resolutions, catalog.Resolution(r)) {
				res[r] = true
			}
		}
		o.LastFrame = pk.Production.LastFrame
	}
	for _, r := range resolutionOrder {
		if res[r] {
			o.Resolutions = append(o.Resolutions, r)
		}
	}
	if o.Generation() {
		o.Ratios = contract.Ratios()
		o.ImageRoles = []string{string(contract.RoleReferenceImage), string(contract.RoleFirstFrame)}
	}
	return o
}

func durationHint(d contract.DurationRange) string {
	if d.ModelDefault {
		return fmt.Sprintf("%d to %d seconds, or -1 for the model's choice", d.Min, d.Max)
	}
	return fmt.Sprintf("%d to %d seconds", d.Min, d.Max)
}

// defaults are a new form's values: the first alias, the default resolution and ratio, a
// five-second video (valid on every family), and a fresh client_request_id.
func (o createOptions) defaults() url.Values {
	v := url.Values{}
	if len(o.Aliases) > 0 {
		v.Set("model", o.Aliases[0].Name)
	}
	switch o.Route {
	case routeNative, routeProduction:
		v.Set("duration", "5")
		v.Set("ratio", "adaptive")
		v.Set("image_role", string(contract.RoleReferenceImage))
		if slices.Contains(o.Resolutions, "720p") && o.Route == routeNative {
			v.Set("resolution", "720p")
		}
	case routeEnhancement:
		if slices.Contains(o.Resolutions, "1080p") {
			v.Set("resolution", "1080p")
		}
	}
	if v.Get("resolution") == "" && len(o.Resolutions) > 0 && o.Route != routeSpeech {
		v.Set("resolution", o.Resolutions[0])
	}
	v.Set("client_request_id", newRequestID())
	return v
}

// keep copies the route's fields from a posted form, trimmed.
func (o createOptions) keep(form url.Values) url.Values {
	v := url.Values{}
	for _, f := range createFormFields[o.Route] {
		if x := strings.TrimSpace(form.Get(f)); x != "" {
			v.Set(f, x)
		}
	}
	return v
}

// newRequestID is a form's client_request_id: random, within the contract's 1 to 64 printable
// ASCII bytes.
func newRequestID() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return "console-" + base64.RawURLEncoding.EncodeToString(b)
}

// body is the contract request the form's values make. Numbers are sent as typed when they
// are JSON numbers and as strings otherwise, so the contract's own message names the field.
func (p createPage) body() []byte {
	v := p.Values
	meta := map[string]any{}
	top := map[string]any{"model": v.Get("model")}
	str := func(m map[string]any, key, field string) {
		if x := v.Get(field); x != "" {
			m[key] = x
		}
	}
	num := func(key string) {
		x := v.Get(key)
		if x == "" {
			return
		}
		if _, err := strconv.ParseFloat(x, 64); err == nil && json.Valid([]byte(x)) {
			meta[key] = json.RawMessage(x)
		} else {
			meta[key] = x
		}
	}
	switch p.Route {
	case routeNative, routeProduction:
		str(top, "prompt", "prompt")
		num("duration")
		str(meta, "resolution", "resolution")
		str(meta, "ratio", "ratio")
		switch v.Get("generate_audio") {
		case "true":
			meta["generate_audio"] = true
		case "false":
			meta["generate_audio"] = false
		}
		if u := v.Get("image_url"); u != "" {
			role := v.Get("image_role")
			if role == "" {
				role = string(contract.RoleReferenceImage)
			}
			meta["content"] = []any{map[string]any{"type": "image_url", "role": role, "image_url": map[string]string{"url": u}}}
		}
		if p.Route == routeProduction {
			num("fps")
			if v.Get("return_last_frame") != "" {
				meta["return_last_frame"] = true
			}
		}
	case routeEnhancement:
		str(meta, "video_url", "video_url")
		num("duration")
		str(meta, "tool_version", "tool_version")
		str(meta, "resolution", "resolution")
		num("fps")
	case routeSpeech:
		str(top, "input", "input")
		str(top, "instructions", "instructions")
	}
	str(meta, "client_request_id", "client_request_id")
	if len(meta) > 0 {
		top["metadata"] = meta
	}
	b, err := json.Marshal(top)
	if err != nil {
		// Strings, booleans, valid JSON numbers and maps of them always encode.
		panic(fmt.Sprintf("console: create body: %v", err))
	}
	return b
}

// fieldOf names the form field a refusal's param is shown on ("" for the top of the form).
func (o createOptions) fieldOf(param string) string {
	p := strings.TrimPrefix(param, "metadata.")
	switch {
	case p == "" || p == "metadata" || p == "client_request_id":
		return ""
	case strings.HasPrefix(p, "content"):
		p = "image_url"
	case p == "resolution_limit":
		p = "resolution"
	case p == "text":
		p = "input"
	}
	if slices.Contains(createFormFields[o.Route], p) {
		return p
	}
	return ""
}

// fieldView is one field for the template: its name (also its id, after "f-"), value and
// message.
type fieldView struct {
	Name, Value, Error string
}

// F is field name of the form.
func (p createPage) F(name string) fieldView {
	return fieldView{Name: name, Value: p.Val(name), Error: p.Err(name)}
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// seconds shows a length in microseconds as seconds.
func seconds(micros int64) string {
	return strconv.FormatFloat(float64(micros)/1e6, 'f', -1, 64) + " s"
}
