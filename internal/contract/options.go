package contract

import "slices"

// The choices a form offers (the web console's create forms): the values the decoder accepts,
// read from the same tables it checks against, so a form never offers what a request refuses.

// DurationRange is what metadata.duration accepts: -1 (the model's choice) when ModelDefault,
// or a whole number of seconds from Min to Max.
type DurationRange struct {
	ModelDefault bool
	Min, Max     int
}

func (r durationRange) export() DurationRange {
	return DurationRange{ModelDefault: r.minusOne, Min: int(r.lo), Max: int(r.hi)}
}

// NativeDurations is the duration range of a native family.
func NativeDurations(f Family) DurationRange { return nativeDurations(f).export() }

// ProductionDurations is the duration range of the production route.
func ProductionDurations() DurationRange { return productionDurations.export() }

// NativeResolutions lists the resolutions a native family renders, lowest first; 4k on
// Standard 2.0 needs Entitlements.Native4K besides.
func NativeResolutions(f Family) []string { return slices.Clone(nativeResolutions(f)) }

// EnhancementResolutions lists the named resolutions of an enhancement alias route, lowest
// first; 8k needs Entitlements.Enhance8K besides.
func EnhancementResolutions(r EnhRoute) []string { return enhancementResolutions(r) }

// Ratios lists the ratios of text and reference modes, adaptive (the default) first; every
// other mode takes adaptive only.
func Ratios() []string { return slices.Clone(allRatios) }
