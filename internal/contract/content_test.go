package contract

import (
	"slices"
	"strings"
	"testing"
)

func TestContentContract(t *testing.T) { runTable(t, contentCases()) }

func withContent(its ...M) string { return nat(M{"content": items(its...)}) }

func wantLabels(labels ...string) func(*testing.T, *VideoRequest) {
	return func(t *testing.T, r *VideoRequest) {
		t.Helper()
		var got []string
		for _, it := range r.Content {
			got = append(got, it.Label)
		}
		if !slices.Equal(got, labels) {
			t.Errorf("labels %v, want %v", got, labels)
		}
		if !slices.Equal(Labels(r.Content), labels) {
			t.Errorf("Labels() %v, want %v", Labels(r.Content), labels)
		}
	}
}

func contentCases() []tc {
	ri := img("reference_image", imgURL)
	c0 := "metadata.content[0]"
	item := func(m M) string { return withContent(m) }
	cases := []tc{
		{name: "content reference image accepted", p: p25, body: withContent(ri), check: func(t *testing.T, r *VideoRequest) {
			want := []ContentItem{{Type: TypeImage, Role: RoleReferenceImage, URL: imgURL, Label: "@Image1"}}
			if !slices.Equal(r.Content, want) {
				t.Errorf("got %+v", r.Content)
			}
		}},
		{name: "content asset image accepted", p: p25, body: withContent(img("reference_image", "asset://abc-123_x.1")), check: func(t *testing.T, r *VideoRequest) {
			if it := r.Content[0]; !it.IsAsset || it.AssetID != "abc-123_x.1" || it.URL != "asset://abc-123_x.1" {
				t.Errorf("got %+v", it)
			}
		}},
		{name: "content asset video accepted", p: p25, body: withContent(vid("asset://vid9")), check: func(t *testing.T, r *VideoRequest) {
			if it := r.Content[0]; !it.IsAsset || it.AssetID != "vid9" {
				t.Errorf("got %+v", it)
			}
		}},
		{name: "content order and per-type labels preserved", p: p25, body: withContent(ri, vid(vidURL), img("reference_image", "https://b.example/2.png"), aud(audURL), vid("asset://v2")),
			check: func(t *testing.T, r *VideoRequest) {
				wantLabels("@Image1", "@Video1", "@Image2", "@Audio1", "@Video2")(t, r)
				if r.Content[2].URL != "https://b.example/2.png" || r.Content[4].AssetID != "v2" {
					t.Errorf("order lost: %+v", r.Content)
				}
			}},
		{name: "content frames are numbered as images", p: p25, body: withContent(img("first_frame", imgURL), img("last_frame", imgURL)), check: wantLabels("@Image1", "@Image2")},
		{name: "content last frame before first frame accepted", p: p25, body: withContent(img("last_frame", imgURL), img("first_frame", imgURL)), check: wantMode(ModeFirstLastFrame)},
		{name: "content https with port query and fragment accepted", p: p25, body: withContent(img("reference_image", "https://cdn.example.com:8443/a.png?sig=1#x"))},
		{name: "content uppercase HTTPS scheme accepted", p: p25, body: withContent(img("reference_image", "HTTPS://cdn.example.com/a.png"))},

		{name: "content missing type rejected", p: p25, body: item(M{"role": "reference_image", "image_url": M{"url": imgURL}}), kind: bad, param: c0 + ".type"},
		{name: "content missing role rejected", p: p25, body: item(M{"type": "image_url", "image_url": M{"url": imgURL}}), kind: bad, param: c0 + ".role"},
		{name: "content unknown type rejected", p: p25, body: item(M{"type": "text", "role": "reference_image"}), kind: bad, param: c0 + ".type"},
		{name: "content unknown role rejected", p: p25, body: item(M{"type": "image_url", "role": "style", "image_url": M{"url": imgURL}}), kind: bad, param: c0 + ".role"},
		{name: "content null type rejected", p: p25, body: item(M{"type": nil, "role": "reference_image", "image_url": M{"url": imgURL}}), kind: bad, param: c0 + ".type"},
		{name: "content role reference_video with type image_url rejected", p: p25, body: item(M{"type": "image_url", "role": "reference_video", "image_url": M{"url": imgURL}}), kind: bad, param: c0 + ".role"},
		{name: "content role first_frame with type video_url rejected", p: p25, body: item(M{"type": "video_url", "role": "first_frame", "video_url": M{"url": vidURL}}), kind: bad, param: c0 + ".role"},
		{name: "content role reference_audio with type image_url rejected", p: p25, body: item(M{"type": "image_url", "role": "reference_audio", "image_url": M{"url": imgURL}}), kind: bad, param: c0 + ".role"},
		{name: "content missing media object rejected", p: p25, body: item(M{"type": "image_url", "role": "reference_image"}), kind: bad, param: c0 + ".image_url"},
		{name: "content media object of another type rejected", p: p25, body: item(M{"type": "image_url", "role": "reference_image", "image_url": M{"url": imgURL}, "video_url": M{"url": vidURL}}), kind: bad, param: c0 + ".video_url"},
		{name: "content only the wrong media object rejected", p: p25, body: item(M{"type": "audio_url", "role": "reference_audio", "image_url": M{"url": imgURL}}), kind: bad, param: c0 + ".image_url"},
		{name: "content media object as string rejected", p: p25, body: item(M{"type": "image_url", "role": "reference_image", "image_url": imgURL}), kind: bad, param: c0 + ".image_url"},
		{name: "content media object null rejected", p: p25, body: item(M{"type": "image_url", "role": "reference_image", "image_url": nil}), kind: bad, param: c0 + ".image_url"},
		{name: "content missing url rejected", p: p25, body: item(M{"type": "image_url", "role": "reference_image", "image_url": M{}}), kind: bad, param: c0 + ".image_url.url"},
		{name: "content url number rejected", p: p25, body: item(M{"type": "video_url", "role": "reference_video", "video_url": M{"url": 5}}), kind: bad, param: c0 + ".video_url.url"},
		{name: "content url empty rejected", p: p25, body: withContent(img("reference_image", "")), kind: bad, param: c0 + ".image_url.url"},
		{name: "content url http rejected", p: p25, body: withContent(img("reference_image", "http://cdn.example.com/a.png")), kind: bad, param: c0 + ".image_url.url"},
		{name: "content url data rejected", p: p25, body: withContent(img("reference_image", "data:image/png;base64,iVBORw0KGgo=")), kind: bad, param: c0 + ".image_url.url"},
		{name: "content url bare base64 rejected", p: p25, body: withContent(img("reference_image", "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")), kind: bad, param: c0 + ".image_url.url"},
		{name: "content url file scheme rejected", p: p25, body: withContent(img("reference_image", "file:///etc/passwd")), kind: bad, param: c0 + ".image_url.url"},
		{name: "content url ftp rejected", p: p25, body: withContent(vid("ftp://cdn.example.com/a.mp4")), kind: bad, param: c0 + ".video_url.url"},
		{name: "content url without host rejected", p: p25, body: withContent(img("reference_image", "https:///a.png")), kind: bad, param: c0 + ".image_url.url"},
		{name: "content url opaque rejected", p: p25, body: withContent(img("reference_image", "https:cdn.example.com/a.png")), kind: bad, param: c0 + ".image_url.url"},
		{name: "content url with credentials rejected", p: p25, body: withContent(img("reference_image", "https://u:p@cdn.example.com/a.png")), kind: bad, param: c0 + ".image_url.url"},
		{name: "content url with space rejected", p: p25, body: withContent(img("reference_image", "https://cdn.example.com/a b.png")), kind: bad, param: c0 + ".image_url.url"},
		{name: "content relative url rejected", p: p25, body: withContent(img("reference_image", "/a.png")), kind: bad, param: c0 + ".image_url.url"},
		{name: "content url over 4096 bytes rejected", p: p25, body: withContent(img("reference_image", "https://cdn.example.com/"+strings.Repeat("a", MaxURLBytes))), kind: bad, param: c0 + ".image_url.url"},
		{name: "content asset without id rejected", p: p25, body: withContent(img("reference_image", "asset://")), kind: bad, param: c0 + ".image_url.url"},
		{name: "content asset id with slash rejected", p: p25, body: withContent(vid("asset://a/b")), kind: bad, param: c0 + ".video_url.url"},
		{name: "content asset id dot-dot rejected", p: p25, body: withContent(vid("asset://..")), kind: bad, param: c0 + ".video_url.url"},
		{name: "content item unknown field rejected", p: p25, body: item(merge(ri, M{"detail": "high"})), kind: bad, param: c0 + ".detail"},
		{name: "content item duration rejected", p: p25, body: item(merge(vid(vidURL), M{"duration": 5})), kind: bad, param: c0 + ".duration"},
		{name: "content item base64 field rejected", p: p25, body: item(merge(ri, M{"base64": "iVBO"})), kind: bad, param: c0 + ".base64"},
		{name: "content item inline data field rejected", p: p25, body: item(M{"type": "image_url", "role": "reference_image", "image_data": "iVBO"}), kind: bad, param: c0 + ".image_data"},
		{name: "content media object extra field rejected", p: p25, body: item(M{"type": "image_url", "role": "reference_image", "image_url": M{"url": imgURL, "detail": "high"}}), kind: bad, param: c0 + ".image_url.detail"},
		{name: "content media object duration rejected", p: p25, body: item(M{"type": "video_url", "role": "reference_video", "video_url": M{"url": vidURL, "duration": 4.2}}), kind: bad, param: c0 + ".video_url.duration"},
		{name: "content not an array rejected", p: p25, body: nat(M{"content": ri}), kind: bad, param: "metadata.content"},
		{name: "content null rejected", p: p25, body: nat(M{"content": nil}), kind: bad, param: "metadata.content"},
		{name: "content item not an object rejected", p: p25, body: nat(M{"content": []any{imgURL}}), kind: bad, param: c0},
		{name: "content second item error names its index", p: p25, body: withContent(ri, M{"type": "video_url", "role": "reference_video"}), kind: bad, param: "metadata.content[1].video_url"},

		{name: "content two first frames rejected", p: p25, body: withContent(img("first_frame", imgURL), img("first_frame", imgURL)), kind: bad, param: "metadata.content[1].role"},
		{name: "content two last frames rejected", p: p25, body: withContent(img("first_frame", imgURL), img("last_frame", imgURL), img("last_frame", imgURL)), kind: bad, param: "metadata.content[2].role"},
		{name: "content last frame without first frame rejected", p: p25, body: withContent(img("last_frame", imgURL)), kind: bad, param: "metadata.content[0].role"},
		{name: "content frame then reference rejected", p: p25, body: withContent(img("first_frame", imgURL), ri), kind: bad, param: "metadata.content[1].role"},
		{name: "content reference then frame rejected", p: p25, body: withContent(vid(vidURL), aud(audURL), img("last_frame", imgURL)), kind: bad, param: "metadata.content[2].role"},

		{name: "content 30 reference images accepted", p: p25, body: withContent(repeat(ri, 30)...)},
		{name: "content 31 reference images rejected", p: p25, body: withContent(repeat(ri, 31)...), kind: bad, param: "metadata.content[30]"},
		{name: "content 10 reference videos accepted", p: p25, body: withContent(repeat(vid(vidURL), 10)...)},
		{name: "content 11 reference videos rejected", p: p25, body: withContent(repeat(vid(vidURL), 11)...), kind: bad, param: "metadata.content[10]"},
		{name: "content 10 reference audios accepted", p: p25, body: withContent(repeat(aud(audURL), 10)...)},
		{name: "content 11 reference audios rejected", p: p25, body: withContent(repeat(aud(audURL), 11)...), kind: bad, param: "metadata.content[10]"},
		{name: "content 50 items accepted", p: p25, body: withContent(slices.Concat(repeat(ri, 30), repeat(vid(vidURL), 10), repeat(aud(audURL), 10))...),
			check: func(t *testing.T, r *VideoRequest) {
				if len(r.Content) != 50 || r.Content[49].Label != "@Audio10" {
					t.Errorf("got %d items, last %+v", len(r.Content), r.Content[len(r.Content)-1])
				}
			}},
		{name: "content 51 items rejected", p: p25, body: withContent(slices.Concat(repeat(ri, 30), repeat(vid(vidURL), 10), repeat(aud(audURL), 11))...), kind: bad, param: "metadata.content"},
	}
	return cases
}
