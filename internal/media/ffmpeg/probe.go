package ffmpeg

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Info is what Probe learned about a media file. Video fields describe the
// first real video stream (cover art is not one) and audio fields the first
// audio stream; they are zero when the stream is absent.
type Info struct {
	Duration float64 // seconds, from the container (longest stream if it has none)
	// Longest is the longest stream's own duration: a container's header can be rewritten
	// to say less than its streams hold, and what is decoded is the streams.
	Longest float64

	FormatName string // ffprobe's demuxer names, e.g. "mov,mp4,m4a,3gp,3g2,mj2"
	// Container tells MP4 from MOV, which share one demuxer: "mp4", "mov",
	// or the first FormatName entry for anything else ("mp3", "wav" …).
	Container string
	BitRate   int64 // whole file, bit/s; 0 when unknown

	HasVideo     bool
	VideoCodec   string // e.g. "h264", "hevc"
	Width        int
	Height       int
	FPS          float64 // avg_frame_rate, or r_frame_rate when that is unknown
	PixFmt       string  // e.g. "yuv420p", "yuv420p10le"
	BitDepth     int     // bits per sample of the video, e.g. 8, 10, 12
	VideoBitRate int64   // bit/s; 0 when unknown

	HasAudio        bool
	AudioCodec      string // e.g. "aac", "mp3"
	AudioSampleRate int
	AudioChannels   int
	AudioBitRate    int64 // bit/s; 0 when unknown
}

// probeOutputMax bounds what we read from ffprobe; a normal answer is a few
// kilobytes, so more means a hostile file with thousands of streams.
const probeOutputMax = 1 << 20

// Probe describes the media file at path using ffprobe.
func (t Tools) Probe(ctx context.Context, path string) (Info, error) {
	ctx, cancel := t.bound(ctx)
	defer cancel()
	return t.probe(ctx, path)
}

func (t Tools) probe(ctx context.Context, path string) (Info, error) {
	out := &cappedBuffer{max: probeOutputMax}
	err := run(ctx, proc{
		mem:  t.decodeMemory(),
		tool: "ffprobe",
		bin:  t.ffprobeBin(),
		// ffprobe decodes a frame or more of each stream to learn its format (a whole
		// image, for an image): the decoder's pixel bound applies here too.
		args: append(append([]string{"-hide_banner", "-loglevel", "error"}, videoInput()...),
			"-print_format", "json", "-show_format", "-show_streams", fileURL(path)),
		stdout: out,
	})
	if err != nil {
		return Info{}, fmt.Errorf("probe: %w", err)
	}
	data, err := out.Bytes("ffprobe")
	if err != nil {
		return Info{}, fmt.Errorf("probe: %w", err)
	}
	info, err := parseProbe(data)
	if err != nil {
		return Info{}, fmt.Errorf("probe: ffprobe: %w", err)
	}
	return info, nil
}

// ffprobe prints most numbers as JSON strings, and "N/A" when unknown.
type probeJSON struct {
	Format struct {
		FormatName string            `json:"format_name"`
		Duration   string            `json:"duration"`
		BitRate    string            `json:"bit_rate"`
		Tags       map[string]string `json:"tags"`
	} `json:"format"`
	Streams []struct {
		CodecType        string         `json:"codec_type"`
		CodecName        string         `json:"codec_name"`
		Width            int            `json:"width"`
		Height           int            `json:"height"`
		RFrameRate       string         `json:"r_frame_rate"`
		AvgFrameRate     string         `json:"avg_frame_rate"`
		PixFmt           string         `json:"pix_fmt"`
		BitsPerRawSample string         `json:"bits_per_raw_sample"`
		BitRate          string         `json:"bit_rate"`
		SampleRate       string         `json:"sample_rate"`
		Channels         int            `json:"channels"`
		Duration         string         `json:"duration"`
		Disposition      map[string]int `json:"disposition"`
	} `json:"streams"`
}

func parseProbe(data []byte) (Info, error) {
	var p probeJSON
	if err := json.Unmarshal(data, &p); err != nil {
		return Info{}, fmt.Errorf("decode json: %w", err)
	}
	info := Info{
		FormatName: p.Format.FormatName,
		Duration:   parseFloat(p.Format.Duration),
		BitRate:    parseInt(p.Format.BitRate),
	}
	info.Container = containerName(p.Format.FormatName, p.Format.Tags["major_brand"])

	var longest float64
	for _, s := range p.Streams {
		longest = max(longest, parseFloat(s.Duration))
		switch {
		case s.CodecType == "video" && s.Disposition["attached_pic"] == 0 && !info.HasVideo:
			info.HasVideo = true
			info.VideoCodec = s.CodecName
			info.Width, info.Height = s.Width, s.Height
			info.FPS = parseRate(s.AvgFrameRate)
			if info.FPS == 0 {
				info.FPS = parseRate(s.RFrameRate)
			}
			info.PixFmt = s.PixFmt
			info.BitDepth = int(parseInt(s.BitsPerRawSample))
			if info.BitDepth == 0 {
				info.BitDepth = pixFmtDepth(s.PixFmt)
			}
			info.VideoBitRate = parseInt(s.BitRate)
		case s.CodecType == "audio" && !info.HasAudio:
			info.HasAudio = true
			info.AudioCodec = s.CodecName
			info.AudioSampleRate = int(parseInt(s.SampleRate))
			info.AudioChannels = s.Channels
			info.AudioBitRate = parseInt(s.BitRate)
		}
	}
	if info.Duration == 0 {
		info.Duration = longest
	}
	info.Longest = longest
	return info, nil
}

// containerName separates MP4 from QuickTime by the "ftyp" major brand,
// which is "qt  " only for MOV.
func containerName(formatName, majorBrand string) string {
	first, _, _ := strings.Cut(formatName, ",")
	if strings.HasPrefix(formatName, "mov,mp4") {
		if strings.TrimSpace(majorBrand) == "qt" {
			return "mov"
		}
		return "mp4"
	}
	return first
}

var depthSuffix = regexp.MustCompile(`(\d+)(le|be)$`)

// pixFmtDepth derives bits per component from a pixel format name, for
// codecs (HEVC among them) whose streams do not report bits_per_raw_sample:
// "yuv420p10le" is 10, "yuv420p" and "nv12" are 8. Packed RGB names carry
// the total instead ("rgb48le"), so those divide by the component count, and
// the bit-field layouts ("rgb565le") count as 8.
func pixFmtDepth(pixFmt string) int {
	if pixFmt == "" {
		return 0
	}
	m := depthSuffix.FindStringSubmatch(pixFmt)
	if m == nil {
		return 8
	}
	n, _ := strconv.Atoi(m[1])
	switch {
	case strings.HasPrefix(pixFmt, "rgba"), strings.HasPrefix(pixFmt, "bgra"):
		n /= 4
	case strings.HasPrefix(pixFmt, "rgb"), strings.HasPrefix(pixFmt, "bgr"):
		n /= 3
	}
	if n > 16 {
		return 8
	}
	return n
}

func parseFloat(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return f
}

func parseInt(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// parseRate reads ffprobe's "num/den" rates; "0/0" (unknown) gives 0.
func parseRate(s string) float64 {
	num, den, ok := strings.Cut(s, "/")
	if !ok {
		return parseFloat(s)
	}
	n, d := parseFloat(num), parseFloat(den)
	if d == 0 {
		return 0
	}
	return n / d
}
