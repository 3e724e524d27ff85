package contract

import (
	"reflect"
	"testing"
)

// TestParsedVideoDecodesLikeTheBody: the service parses once and decodes the tree; decoding
// must give what DecodeVideo gives and leave the tree as it was, whatever the product.
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
		model, merr := v.Model()
		if want, werr := PeekModel([]byte(body)); model != want || !reflect.DeepEqual(merr, werr) {
			t.Errorf("Model = %q, %v; PeekModel = %q, %v", model, merr, want, werr)
		}
		for _, p := range []Product{p25, pPro, eStd} {
			first, ferr := v.Decode(p, entAll)
			again, aerr := v.Decode(p, entAll)
			want, werr := DecodeVideo([]byte(body), p, entAll)
			if !reflect.DeepEqual(first, want) || !reflect.DeepEqual(ferr, werr) {
				t.Errorf("%v: Decode = %+v, %v; DecodeVideo = %+v, %v", p, first, ferr, want, werr)
			}
			if !reflect.DeepEqual(first, again) || !reflect.DeepEqual(ferr, aerr) {
				t.Errorf("%v: a second Decode of the same tree differs: %+v, %v then %+v, %v", p, first, ferr, again, aerr)
			}
		}
	}
}
