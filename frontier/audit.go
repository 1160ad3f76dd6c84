package frontier

import (
	"math"

	"github.com/cespare/xxhash/v2"
	"github.com/trawlhq/trawl/internal/msg"
)

// auditSeed prefixes every key before the audit hash, so that the sample is
// independent of dedup.Hash (plain xxhash64 of the key) and therefore of
// the filter's bit positions.
const auditSeed = "trawl-audit/1\x00"

// auditHash is the hash that decides whether a key is in the audit sample.
func auditHash(key string) uint64 {
	d := xxhash.New()
	d.WriteString(auditSeed)
	d.WriteString(key)
	return d.Sum64()
}

// auditThreshold maps a fraction to the cut: a key is sampled when its
// audit hash is below cut, or always when all is true (fraction >= 1).
func auditThreshold(fraction float64) (cut uint64, all bool) {
	switch {
	case fraction >= 1:
		return 0, true
	case fraction <= 0 || math.IsNaN(fraction):
		return 0, false
	}
	return uint64(fraction * (1 << 64)), false
}

func (sc *scope) sampled(h uint64) bool { return sc.auditAll || h < sc.auditCut }

// auditStatus computes the audit's verdict from the counters.
func auditStatus(c *counters, fraction, impliedFP float64) msg.AuditStatus {
	a := msg.AuditStatus{
		Fraction:   fraction,
		SampledNew: c[cSampledNew],
		FPSkips:    c[cFPSkips],
		ImpliedFP:  impliedFP,
		Rescued:    c[cRescued],
	}
	a.Rate, a.Low, a.High = msg.Wilson(a.FPSkips, a.SampledNew+a.FPSkips)
	if fraction > 0 {
		// New keys offered so far: those the filter admitted, plus those
		// it wrongly skipped, estimated from the sample.
		newKeys := float64(c[cFilterNew]) + float64(a.FPSkips)/math.Min(fraction, 1)
		a.Projected = a.Rate * newKeys
	}
	return a
}
