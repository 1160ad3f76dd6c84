package frontier

import (
	"testing"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/internal/config"
)

// TestDefaultsAgree: every path that builds a filter without being told
// its kind builds the same one: trawl's configuration default
// (config.DefaultFilter), the frontier's plan of a filter whose mode and
// layout are empty, and dedup's own New and ChainConfig zero values.
// Before, an empty mode planned a fixed filter while the configuration's
// default was scalable, and dedup.New used Standard where the product
// used Paged.
func TestDefaultsAgree(t *testing.T) {
	def := config.DefaultFilter()
	cases := map[string]config.Filter{
		"config default": def,
		"empty mode and layout": {
			Capacity: def.Capacity, FP: def.FP, Initial: def.Initial, Growth: def.Growth, Tightening: def.Tightening,
		},
		"empty chain shape too": {Capacity: def.Capacity, FP: def.FP},
	}
	for name, f := range cases {
		mode, _, chain, err := planFilter(f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		plan, err := dedup.PlanChain(chain)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := plan.Config
		want := dedup.ChainConfig{
			Initial: dedup.DefaultInitial, FP: dedup.DefaultFP, Growth: dedup.DefaultGrowth, Tightening: dedup.DefaultTightening,
			Layout: dedup.DefaultLayout, ChunkBytes: dedup.DefaultChunkBytes, Capacity: dedup.DefaultCapacity,
			Fold: f.Fold, // a chain the frontier folds is sized for it
		}
		if mode != dedup.DefaultMode || got != want {
			t.Errorf("%s: %s %+v; want %s %+v", name, mode, got, dedup.DefaultMode, want)
		}
	}
	f, err := dedup.New(1000, dedup.DefaultFP)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if l := f.Sizing().Layout; l != dedup.DefaultLayout || def.Layout != l.String() || def.Mode != dedup.DefaultMode.String() {
		t.Errorf("dedup.New builds a %s filter; config's default is %s %s; want %s %s", l, def.Mode, def.Layout, dedup.DefaultMode, dedup.DefaultLayout)
	}
}
