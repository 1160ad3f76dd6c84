package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/internal/cli"
)

func init() {
	cmds.Register(cli.Command{Name: "plan", Summary: "size a Bloom filter: bits, bytes, k, expected false-positive rate", Run: runPlan})
}

// filterFlags are the sizing flags plan and fpcheck share.
type filterFlags struct {
	capacity uint64
	fp       float64
	layout   string
	json     bool
}

func (ff *filterFlags) register(fs *flag.FlagSet) {
	fs.Uint64Var(&ff.capacity, "capacity", 1_000_000_000, "items the filter must hold")
	fs.Float64Var(&ff.fp, "fp", 0.01, "target false-positive rate at capacity, in (0, 1)")
	fs.StringVar(&ff.layout, "layout", "standard", "bit layout: standard or blocked (one cache line per key)")
	fs.BoolVar(&ff.json, "json", false, "print JSON")
}

// parse parses args into fs and returns the layout; it reports errors on
// stderr and returns ok=false with the exit code (cli.Parse's, or
// cli.ExitUsage).
func (ff *filterFlags) parse(fs *flag.FlagSet, args []string) (l dedup.Layout, code int, ok bool) {
	if code, ok := cli.Parse(fs, args); !ok {
		return 0, code, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return 0, cli.ExitUsage, false
	}
	l, err := dedup.ParseLayout(ff.layout)
	if err != nil {
		fmt.Fprintf(fs.Output(), "%s: %v\n", fs.Name(), err)
		return 0, cli.ExitUsage, false
	}
	return l, cli.ExitOK, true
}

func runPlan(args []string) int {
	fs := flag.NewFlagSet("frontier plan", flag.ContinueOnError)
	var ff filterFlags
	ff.register(fs)
	l, code, ok := ff.parse(fs, args)
	if !ok {
		return code
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

func printPlan(w io.Writer, s dedup.Sizing, asJSON bool) error {
	if asJSON {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(planJSON{s.Capacity, s.FP, s.Layout.String(), s.Bits, s.Bytes, s.K, s.BitsPerItem, s.ExpectedFP, s.ExpectedFPAt2x})
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
