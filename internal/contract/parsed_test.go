package contract

import (
	"reflect"
	"testing"
)

// TestParsedVideoDecodesLikeTheBody: the service parses once, reads the model and decodes the
// tree; decoding must give what a fresh parse gives and leave the tree as it was, whatever the
// product.
func TestParsedVideoDecodesLikeTheBody(t *testing.T) {
	t.Parallel()
	bodies := []string{
		withContent(img("reference_image", imgURL), vid(vidURL), img("reference_image", "asset://a1")),
		nat(M{"duration": 99}), // invalid: the error must be the same too
	}
	for _, body := range bodies {
		v, err := ParseVideo([]byte(body))
		if err != nil {
			t.Fatalf("parse %s: %v", body, err)
		}
		if _, merr := v.Model(); merr != nil {
			t.Fatalf("model of %s: %v", body, merr)
		}
		for _, p := range []Product{p25, pPro, eStd} {
			first, ferr := v.Decode(p, entAll)
			again, aerr := v.Decode(p, entAll)
			want, werr := decodeVideo([]byte(body), p, entAll)
			if !reflect.DeepEqual(first, want) || !reflect.DeepEqual(ferr, werr) {
				t.Errorf("%v: Decode of the read tree = %+v, %v; of a fresh parse = %+v, %v", p, first, ferr, want, werr)
			}
			if !reflect.DeepEqual(first, again) || !reflect.DeepEqual(ferr, aerr) {
				t.Errorf("%v: a second Decode of the same tree differs: %+v, %v then %+v, %v", p, first, ferr, again, aerr)
			}
		}
	}
}
