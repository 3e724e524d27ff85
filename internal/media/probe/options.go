package probe

import "time"

// Options bound a probe. The zero value uses the defaults below.
type Options struct {
	// MaxDuration rejects longer media (ErrBadDuration). Default 6 h.
	MaxDuration time.Duration
	// MaxFileSize rejects larger files before reading them (ErrTooLarge).
	// Default 16 GiB.
	MaxFileSize int64
	// FullReadMax is how much of a file is read when the server ignores
	// Range and sends the whole file. Default 8 MiB.
	FullReadMax int64
	// MaxBoxes bounds the top-level boxes walked (fragmented files have two
	// per fragment). Default 100 000.
	MaxBoxes int
	// AllowHTTP and NoRedirects are passed to safefetch for ProbeURL.
	AllowHTTP   bool
	NoRedirects bool
}

const (
	defaultMaxDuration = 6 * time.Hour
	defaultMaxFileSize = 16 << 30
	defaultFullReadMax = 8 << 20
	defaultMaxBoxes    = 100_000
	// A moov up to this size is fetched in one request and parsed in
	// memory; a larger one is parsed in place, skipping its sample tables.
	inlineBoxMax = 1 << 20
)

func (o Options) withDefaults() Options {
	if o.MaxDuration <= 0 {
		o.MaxDuration = defaultMaxDuration
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = defaultMaxFileSize
	}
	if o.FullReadMax <= 0 {
		o.FullReadMax = defaultFullReadMax
	}
	if o.MaxBoxes <= 0 {
		o.MaxBoxes = defaultMaxBoxes
	}
	return o
}

// Result is what a probe measured and what it cost.
type Result struct {
	Duration   float64 // seconds, exact from the timescale
	Width      int     // coded size of the first video track; 0 without video
	Height     int
	FPS        float64 // nominal: the timescale over the most common frame duration
	HasVideo   bool
	HasAudio   bool
	Brand      string // ftyp major brand, e.g. "isom", "qt"
	Fragmented bool
	// DurationSource says where Duration came from: "mvhd", "mehd",
	// "tracks" (the samples of an unfragmented file, longer than its mvhd
	// says) or "fragments" (the sum of every fragment's runs).
	DurationSource string

	Requests  int   // range requests (ProbeURL) or reads (ProbeReaderAt)
	BytesRead int64 // bytes received / read
}
