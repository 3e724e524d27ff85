package catalog

import (
	"mediagen/internal/contract"
	"mediagen/internal/money"
)

// Enhancement billing bands. "720p" is the up-to-720p band: a billing label only, never a
// request value.
const (
	Band720p  = "720p"
	Band1080p = "1080p"
	Band2K    = "2k"
	Band4K    = "4k"
	Band8K    = "8k"
)

// Bands lists the billing bands of an enhancement tier ("lite", "standard", "professional").
func Bands(tier string, with8K bool) []string {
	b := []string{Band720p, Band1080p, Band2K, Band4K}
	if tier != "lite" && with8K {
		b = append(b, Band8K)
	}
	return b
}

func (p ProductionRates) tier(t Tier) *ProductionTierRates {
	switch t {
	case Tier(contract.TierLite):
		return p.Lite
	case Tier(contract.TierStandard):
		return p.Standard
	case Tier(contract.TierPro):
		return p.Pro
	}
	return nil
}

func (t *ProductionTierRates) resolution(r Resolution) *InputModeRates {
	switch r {
	case Res1080p:
		return t.R1080p
	case Res2K:
		return t.R2K
	case Res4K:
		return t.R4K
	}
	return nil
}

// NativeRate is the price per million completion tokens of a native alias.
func (r Rates) NativeRate(alias string) (money.Micros, bool) {
	v, ok := r.Native[alias]
	return v.Micros(), ok
}

// ProductionRate is the price per chargeable second for a tier and final resolution; the
// video-input rate applies when any input video is present.
func (r Rates) ProductionRate(t Tier, res Resolution, videoInput bool) (money.Micros, bool) {
	tr := r.Production.tier(t)
	if tr == nil {
		return 0, false
	}
	m := tr.resolution(res)
	if m == nil {
		return 0, false
	}
	p := m.NoVideoInput
	if videoInput {
		p = m.VideoInput
	}
	if p == nil {
		return 0, false
	}
	return p.Micros(), true
}

// EnhancementRate is the price per chargeable second of an enhancement tier ("lite",
// "standard", "professional") and band.
func (r Rates) EnhancementRate(tier, band string) (money.Micros, bool) {
	var p *Rate
	switch tier {
	case "lite":
		b := r.Enhancement.Lite
		if b == nil {
			return 0, false
		}
		switch band {
		case Band720p:
			p = b.UpTo720p
		case Band1080p:
			p = b.R1080p
		case Band2K:
			p = b.R2K
		case Band4K:
			p = b.R4K
		}
	case "standard", "professional":
		b := r.Enhancement.Standard
		if tier == "professional" {
			b = r.Enhancement.Professional
		}
		if b == nil {
			return 0, false
		}
		switch band {
		case Band720p:
			p = b.UpTo720p
		case Band1080p:
			p = b.R1080p
		case Band2K:
			p = b.R2K
		case Band4K:
			p = b.R4K
		case Band8K:
			p = b.R8K
		}
	}
	if p == nil {
		return 0, false
	}
	return p.Micros(), true
}

// SpeechRate is the price per second of generated audio.
func (r Rates) SpeechRate() (money.Micros, bool) {
	if r.Speech == nil {
		return 0, false
	}
	return r.Speech.Micros(), true
}
