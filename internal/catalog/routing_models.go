package catalog

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// RouteEntry is one entry of upstreams (or enhance_upstreams): an account, and the model
// that account runs the alias as. Accounts of different kinds name the same video by
// different models (kling-v2-1 on Kling, wan2.5-t2v-preview on DashScope), so each entry may
// carry its own; an entry without one runs the alias's model (enhance_model for
// enhance_upstreams). Written either as the account's name or as {name: …, model: …}.
type RouteEntry struct {
	Name  Upstream
	Model string
	line  int // where the entry is written, for the catalog check's messages
}

// UnmarshalYAML reads a plain name or a {name, model} mapping. yaml.v3 forgets KnownFields
// inside a custom decoder, so the mapping's keys are checked here: a misspelt key would
// otherwise send the alias's model to an account that needs its own.
func (e *RouteEntry) UnmarshalYAML(n *yaml.Node) error {
	e.line = n.Line
	if n.Kind == yaml.ScalarNode {
		return e.Name.UnmarshalYAML(n)
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: an upstreams entry is an account name or {name: ACCOUNT, model: MODEL}", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "name":
			if err := e.Name.UnmarshalYAML(v); err != nil {
				return err
			}
		case "model":
			if err := strictString(v, "model"); err != nil {
				return err
			}
			e.Model = v.Value
		default:
			return fmt.Errorf("line %d: field %s not found in an upstreams entry (it takes name and model)", k.Line, k.Value)
		}
	}
	if e.Name == "" {
		return fmt.Errorf("line %d: an upstreams entry needs name (the account)", n.Line)
	}
	return nil
}

// ModelOf is the model the alias's generation half (or the whole alias for the other
// products) runs as on account: its entry's model in upstreams, else the alias's model.
func (a *Alias) ModelOf(account Upstream) string {
	return entryModel(a.Upstreams, account, a.Model)
}

// EnhanceModelOf is the model a production alias's enhancement half runs as on account.
func (a *Alias) EnhanceModelOf(account Upstream) string {
	return entryModel(a.EnhanceUpstreams, account, a.EnhanceModel)
}

func entryModel(list []RouteEntry, account Upstream, def string) string {
	for _, e := range list {
		if e.Name == account && e.Model != "" {
			return e.Model
		}
	}
	return def
}

// checkEntryModels: an entry without its own model runs the alias's model, so a list whose
// alias sets none needs one on every entry; it then takes the first entry's model as the
// alias's Model, the model every single-account reader and message shows.
func checkEntryModels(field, modelField string, list []RouteEntry, model *string) []string {
	if len(list) == 0 || *model != "" {
		return nil
	}
	var msgs []string
	for _, e := range list {
		if e.Model == "" {
			msgs = append(msgs, fmt.Sprintf("line %d: %s entry %q has no model and the alias sets no %s", e.line, field, e.Name, modelField))
		}
	}
	if len(msgs) == 0 {
		*model = list[0].Model
	}
	return msgs
}

// names are the entries' accounts.
func names(list []RouteEntry) []Upstream {
	out := make([]Upstream, len(list))
	for i, e := range list {
		out[i] = e.Name
	}
	return out
}
