package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/internal/cli"
)

func init() {
	cmds.Register(cli.Command{Name: "plan", Summary: "size a Bloom filter, fixed or scalable: bits, bytes, k, expected false-positive rate", Run: runPlan})
}

// filterFlags are the sizing flags plan and fpcheck share.
type filterFlags struct {
	capacity   uint64
	fp         float64
	layout     string
	mode       string
	initial    uint64
	growth     float64
	tightening float64
	json       bool
}

func (ff *filterFlags) register(fs *flag.FlagSet) {
	fs.Uint64Var(&ff.capacity, "capacity", dedup.DefaultCapacity, "items the filter must hold (scalable: the count the chain is planned to)")
	fs.Float64Var(&ff.fp, "fp", dedup.DefaultFP, "target false-positive rate at capacity, in (0, 1)")
	fs.StringVar(&ff.layout, "layout", dedup.DefaultLayout.String(), "bit layout: paged (k bits in one 4 KiB page), standard (anywhere) or blocked (one cache line, more bits)")
	// The one default these commands do not take from dedup: they size
	// one filter unless asked for the chain (the crawl's default mode).
	fs.StringVar(&ff.mode, "mode", dedup.ModeFixed.String(), "fixed (one filter sized for capacity) or scalable (a chain of sub-filters that grows from --initial)")
	fs.Uint64Var(&ff.initial, "initial", dedup.DefaultInitial, "scalable: keys the first sub-filter holds")
	fs.Float64Var(&ff.growth, "growth", dedup.DefaultGrowth, "scalable: each sub-filter holds this many times the keys of the one before")
	fs.Float64Var(&ff.tightening, "tightening", dedup.DefaultTightening, "scalable: each sub-filter's rate is this times the one before's")
	fs.BoolVar(&ff.json, "json", false, "print JSON")
}

// chain is the scalable filter the flags describe.
func (ff *filterFlags) chain(l dedup.Layout) dedup.ChainConfig {
	return dedup.ChainConfig{Initial: ff.initial, Capacity: ff.capacity, FP: ff.fp, Growth: ff.growth, Tightening: ff.tightening, Layout: l}
}

// parse parses args into fs and returns the layout; it reports errors on
// stderr and returns ok=false with the exit code (cli.Parse's, or
// cli.ExitUsage).
func (ff *filterFlags) parse(fs *flag.FlagSet, args []string) (l dedup.Layout, mode dedup.Mode, code int, ok bool) {
	if code, ok := cli.Parse(fs, args); !ok {
		return 0, 0, code, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return 0, 0, cli.ExitUsage, false
	}
	l, err := dedup.ParseLayout(ff.layout)
	if err == nil {
		mode, err = dedup.ParseMode(ff.mode)
	}
	if err != nil {
		fmt.Fprintf(fs.Output(), "%s: %v\n", fs.Name(), err)
		return 0, 0, cli.ExitUsage, false
	}
	return l, mode, cli.ExitOK, true
}

func runPlan(args []string) int {
	fs := flag.NewFlagSet("frontier plan", flag.ContinueOnError)
	var ff filterFlags
	ff.register(fs)
	l, mode, code, ok := ff.parse(fs, args)
	if !ok {
		return code
	}
	if mode == dedup.ModeScalable {
		p, err := dedup.PlanChain(ff.chain(l))
		if err != nil {
			fmt.Fprintf(os.Stderr, "frontier plan: %v\n", err)
			return cli.ExitUsage
		}
		if err := printChainPlan(os.Stdout, p, ff.json); err != nil {
			fmt.Fprintf(os.Stderr, "frontier plan: %v\n", err)
			return cli.ExitFailure
		}
		return cli.ExitOK
	}
	s, err := dedup.PlanLayout(ff.capacity, ff.fp, l)
	if err != nil {
		fmt.Fprintf(os.Stderr, "frontier plan: %v\n", err)
		return cli.ExitUsage
	}
	if err := printPlan(os.Stdout, s, ff.json); err != nil {
		fmt.Fprintf(os.Stderr, "frontier plan: %v\n", err)
		return cli.ExitFailure
	}
	return cli.ExitOK
}

// planJSON is the JSON form of a plan.
type planJSON struct {
	Capacity       uint64  `json:"capacity"`
	TargetFP       float64 `json:"target_fp"`
	Layout         string  `json:"layout"`
	Bits           uint64  `json:"bits"`
	Bytes          uint64  `json:"bytes"`
	K              int     `json:"k"`
	BitsPerItem    float64 `json:"bits_per_item"`
	ExpectedFP     float64 `json:"expected_fp"`
	ExpectedFPAt2x float64 `json:"expected_fp_at_2x"`
}

func newPlanJSON(s dedup.Sizing) planJSON {
	return planJSON{s.Capacity, s.FP, s.Layout.String(), s.Bits, s.Bytes, s.K, s.BitsPerItem, s.ExpectedFP, s.ExpectedFPAt2x}
}

func printPlan(w io.Writer, s dedup.Sizing, asJSON bool) error {
	if asJSON {
		return printJSON(w, newPlanJSON(s))
	}
	_, err := fmt.Fprintf(w, `capacity           %d items at target rate %g (%s layout)
bits               %d
bytes              %d (%.2f GiB)
k                  %d
bits per item      %.3f
expected fp        %.6f at capacity
expected fp at 2x  %.6f at %d items
`, s.Capacity, s.FP, s.Layout, s.Bits, s.Bytes, float64(s.Bytes)/(1<<30), s.K, s.BitsPerItem, s.ExpectedFP, s.ExpectedFPAt2x, 2*s.Capacity)
	return err
}
