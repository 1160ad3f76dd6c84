package main

import (
	"fmt"
	"io"

	"github.com/trawlhq/trawl/dedup"
)

// chainPlanJSON is the JSON form of a scalable plan.
type chainPlanJSON struct {
	Mode        string     `json:"mode"`
	Capacity    uint64     `json:"capacity"`
	TargetFP    float64    `json:"target_fp"`
	Initial     uint64     `json:"initial"`
	Growth      float64    `json:"growth"`
	Tightening  float64    `json:"tightening"`
	Layout      string     `json:"layout"`
	Subfilters  []planJSON `json:"subfilters"`
	Bytes       uint64     `json:"bytes"`
	CompoundFP  float64    `json:"compound_fp"`
	LinesPerKey float64    `json:"lines_per_key"`
	MemoryRatio float64    `json:"memory_ratio"`
	Fixed       planJSON   `json:"fixed"`
	FixedLines  float64    `json:"fixed_lines_per_key"`
	Folded      foldedJSON `json:"folded"`
}

// foldedJSON is the chain kept folded (frontier.filter.fold), sized by
// budget: dedup.ChainPlan.Folded.
type foldedJSON struct {
	Bytes       uint64  `json:"bytes"`
	CompoundFP  float64 `json:"compound_fp"`
	LinesPerKey float64 `json:"lines_per_key"`
	MemoryRatio float64 `json:"memory_ratio"`
	PeakBytes   uint64  `json:"peak_bytes"`
}

// printChainPlan prints the chain a scalable filter grows to by its
// capacity unfolded and kept folded, next to the fixed filter for the same
// capacity.
func printChainPlan(w io.Writer, p dedup.ChainPlan, asJSON bool) error {
	c := p.Config
	if asJSON {
		j := chainPlanJSON{
			Mode: "scalable", Capacity: c.Capacity, TargetFP: c.FP, Initial: c.Initial, Growth: c.Growth,
			Tightening: c.Tightening, Layout: c.Layout.String(), Bytes: p.Bytes, CompoundFP: p.CompoundFP,
			LinesPerKey: p.LinesPerKey, MemoryRatio: p.MemoryRatio, Fixed: newPlanJSON(p.Fixed), FixedLines: p.FixedLines,
			Folded: foldedJSON{p.Folded.Bytes, p.Folded.CompoundFP, p.Folded.LinesPerKey, p.Folded.MemoryRatio, p.Folded.PeakBytes},
		}
		for _, s := range p.Subfilters {
			j.Subfilters = append(j.Subfilters, newPlanJSON(s))
		}
		return printJSON(w, j)
	}
	if _, err := fmt.Fprintf(w, "scalable filter    %d items at target rate %g (%s layout), from %d, growth %g, tightening %g\n",
		c.Capacity, c.FP, c.Layout, c.Initial, c.Growth, c.Tightening); err != nil {
		return err
	}
	fmt.Fprintf(w, "%-4s %14s %12s %14s %4s\n", "sub", "capacity", "fp", "bytes", "k")
	for i, s := range p.Subfilters {
		fmt.Fprintf(w, "%-4d %14d %12.4g %14d %4d\n", i, s.Capacity, s.FP, s.Bytes, s.K)
	}
	_, err := fmt.Fprintf(w, `subfilters         %d
bytes              %d (%.2f GiB), %.3fx the fixed filter
compound fp        %.6f at %d items
lines per key      %.2f (a new key's cache lines)
fixed filter       %d bytes (%.2f GiB), k=%d, %.0f lines per key, %.6f at capacity
kept folded        %d bytes (%.2f GiB), %.3fx the fixed filter, %.2f lines per key, compound fp %.6f; %.3fx during a fold (frontier.filter.fold)
`, len(p.Subfilters), p.Bytes, float64(p.Bytes)/(1<<30), p.MemoryRatio, p.CompoundFP, c.Capacity, p.LinesPerKey,
		p.Fixed.Bytes, float64(p.Fixed.Bytes)/(1<<30), p.Fixed.K, p.FixedLines, p.Fixed.ExpectedFP,
		p.Folded.Bytes, float64(p.Folded.Bytes)/(1<<30), p.Folded.MemoryRatio, p.Folded.LinesPerKey, p.Folded.CompoundFP,
		float64(p.Folded.PeakBytes)/float64(p.Fixed.Bytes))
	return err
}
