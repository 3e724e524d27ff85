package contract

import (
	"strings"
	"testing"
)

// ParseValue is the strict parser with the caller's bounds: any kind of value at the top, the
// same rejections as a request body, and bounds that are the caller's, not the contract's.
func TestParseValueKeepsStrictnessWithinTheCallersLimits(t *testing.T) {
	small := Limits{Bytes: 64, Depth: 2, Values: 4, NameBytes: 3}
	cases := []struct {
		name, body string
		lim        Limits
		param, msg string // msg "" means accepted
	}{
		{"top-level array accepted", `[1,"a"]`, small, "", ""},
		{"deep body accepted within large limits", strings.Repeat("[", 40) + strings.Repeat("]", 40), Limits{Bytes: 1 << 10, Depth: 64, Values: 100, NameBytes: 8}, "", ""},
		{"depth over the caller's bound", `[[[1]]]`, small, "[0][0]", "more than 2 levels"},
		{"values over the caller's bound", `[1,2,3,4]`, small, "[3]", "more than 4 JSON values"},
		{"name over the caller's bound", `{"abcd":1}`, small, "", "longer than 3 bytes"},
		{"bytes over the caller's bound", `"` + strings.Repeat("a", 70) + `"`, small, "", "larger than 64 bytes"},
		{"duplicate name named by path", `{"a":{"b":1,"b":2}}`, small, "a.b", "appears more than once"},
		{"trailing data", `1 2`, small, "", "data after"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseValue([]byte(c.body), c.lim)
			if c.msg == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if err == nil || err.Param != c.param || !strings.Contains(err.Message, c.msg) {
				t.Fatalf("got %+v, want param %q and %q", err, c.param, c.msg)
			}
		})
	}
}

func TestParseValueExposesMembersAndElementsInOrder(t *testing.T) {
	v, err := ParseValue([]byte(`{"b":[true,null,1.50],"a":"x\u0041"}`), requestLimits)
	if err != nil {
		t.Fatal(err)
	}
	ms := v.Members()
	if len(ms) != 2 || ms[0].Name != "b" || ms[1].Name != "a" || ms[1].Value.Text() != "xA" {
		t.Fatalf("members %+v", ms)
	}
	es := ms[0].Value.Elems()
	if len(es) != 3 || es[0].Kind() != 't' || es[1].Kind() != 'n' || es[2].Text() != "1.50" {
		t.Fatalf("elements %+v", es)
	}
}
