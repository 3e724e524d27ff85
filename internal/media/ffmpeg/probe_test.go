package ffmpeg

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

func TestParseProbe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		json string
		want Info
	}{
		{
			name: "mp4 with hevc 10-bit and aac",
			json: `{"format":{"format_name":"mov,mp4,m4a,3gp,3g2,mj2","duration":"5.005","bit_rate":"812000","tags":{"major_brand":"isom"}},
				"streams":[{"codec_type":"video","codec_name":"hevc","width":1920,"height":1080,"r_frame_rate":"30000/1001","avg_frame_rate":"30000/1001","pix_fmt":"yuv420p10le","bit_rate":"700000"},
				{"codec_type":"audio","codec_name":"aac","sample_rate":"48000","channels":2,"bit_rate":"128000"}]}`,
			want: Info{Duration: 5.005, FormatName: "mov,mp4,m4a,3gp,3g2,mj2", Container: "mp4", BitRate: 812000,
				HasVideo: true, VideoCodec: "hevc", Width: 1920, Height: 1080, FPS: 30000.0 / 1001, PixFmt: "yuv420p10le", BitDepth: 10, VideoBitRate: 700000,
				HasAudio: true, AudioCodec: "aac", AudioSampleRate: 48000, AudioChannels: 2, AudioBitRate: 128000},
		},
		{
			name: "quicktime brand is mov; unknown avg rate falls back to r_frame_rate",
			json: `{"format":{"format_name":"mov,mp4,m4a,3gp,3g2,mj2","duration":"2.000000","tags":{"major_brand":"qt  "}},
				"streams":[{"codec_type":"video","codec_name":"h264","width":320,"height":180,"r_frame_rate":"24/1","avg_frame_rate":"0/0","pix_fmt":"yuv420p","bits_per_raw_sample":"8"}]}`,
			want: Info{Duration: 2, FormatName: "mov,mp4,m4a,3gp,3g2,mj2", Container: "mov",
				HasVideo: true, VideoCodec: "h264", Width: 320, Height: 180, FPS: 24, PixFmt: "yuv420p", BitDepth: 8},
		},
		{
			name: "cover art is not video; N/A numbers are zero; duration from streams",
			json: `{"format":{"format_name":"mp3","duration":"N/A","bit_rate":"N/A"},
				"streams":[{"codec_type":"audio","codec_name":"mp3","sample_rate":"24000","channels":1,"duration":"3.5"},
				{"codec_type":"video","codec_name":"mjpeg","width":500,"height":500,"disposition":{"attached_pic":1}}]}`,
			want: Info{Duration: 3.5, Longest: 3.5, FormatName: "mp3", Container: "mp3",
				HasAudio: true, AudioCodec: "mp3", AudioSampleRate: 24000, AudioChannels: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProbe([]byte(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseProbeRejectsGarbage(t *testing.T) {
	t.Parallel()
	if _, err := parseProbe([]byte("not json")); err == nil {
		t.Error("parsed garbage without error")
	}
}

func TestPixFmtDepth(t *testing.T) {
	t.Parallel()
	tests := map[string]int{
		"": 0, "yuv420p": 8, "yuvj420p": 8, "nv12": 8, "yuv420p10le": 10, "yuv422p12be": 12,
		"p010le": 10, "gray16le": 16, "rgb48le": 16, "rgba64be": 16, "gbrp10le": 10, "rgb565le": 8,
	}
	for pf, want := range tests {
		if got := pixFmtDepth(pf); got != want {
			t.Errorf("pixFmtDepth(%q) = %d, want %d", pf, got, want)
		}
	}
}

func TestProbeMissingFileBlamesFFprobe(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	_, err := tools.Probe(context.Background(), filepath.Join(t.TempDir(), "missing.mp4"))
	var te *ToolError
	if !errors.As(err, &te) || te.Tool != "ffprobe" {
		t.Errorf("err = %v, want a ToolError from ffprobe", err)
	}
}
