package asset

import "testing"

// FuzzDecode: any body gets a decoded value or a client error naming what is wrong, never a
// panic; a decoded body holds its required fields and only the fields asked for.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{`{}`, `{"Name":"a","Description":"d"}`, `{"Name":null}`, `{"PageNumber":1.5}`,
		`{"Name":"a"} {}`, `{"Name":"a","Name":"b"}`, `{"ApiKey":"x"}`, `[`, `{"PageSize":99999999999999999999}`} {
		f.Add([]byte(seed))
	}
	fields := []field{reqStr("Name"), str("Description"), integer("PageNumber"), integer("PageSize")}
	f.Fuzz(func(t *testing.T, raw []byte) {
		b, err := decode(raw, fields, nil)
		if err != nil {
			if err.Message == "" {
				t.Fatalf("error without a message for %q", raw)
			}
			return
		}
		if _, ok := b.strs["Name"]; !ok {
			t.Fatalf("decoded %q without its required Name", raw)
		}
		for name := range b.strs {
			if _, ok := lookup(fields, name); !ok {
				t.Fatalf("decoded an unknown field %s from %q", name, raw)
			}
		}
		for name := range b.ints {
			if _, ok := lookup(fields, name); !ok {
				t.Fatalf("decoded an unknown field %s from %q", name, raw)
			}
		}
	})
}
