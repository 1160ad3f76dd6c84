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
	cmds.Register(cli.Command{Name: "fpcheck", Summary: "measure a Bloom filter's false-positive rate against theory", Run: runFPCheck})
}

func runFPCheck(args []string) int {
	fs := flag.NewFlagSet("frontier fpcheck", flag.ContinueOnError)
	var ff filterFlags
	ff.register(fs)
	fs.Lookup("capacity").DefValue = "1000000"
	ff.capacity = 1_000_000
	probes := fs.Uint64("probes", 1_000_000, "never-inserted keys to probe")
	folded := fs.Bool("folded", false, "scalable: keep the chain folded as the frontier does (frontier.filter.fold): fold whenever it advises, feeding every key inserted so far")
	l, mode, code, ok := ff.parse(fs, args)
	if !ok {
		return code
	}
	if *folded && mode != dedup.ModeScalable {
		fmt.Fprintln(os.Stderr, "frontier fpcheck: --folded needs --mode scalable")
		return cli.ExitUsage
	}
	var r dedup.FPCheckResult
	var err error
	switch {
	case *folded:
		r, err = dedup.FPCheckChainFolded(ff.chain(l), *probes)
	case mode == dedup.ModeScalable:
		r, err = dedup.FPCheckChain(ff.chain(l), *probes)
	default:
		r, err = dedup.FPCheck(ff.capacity, ff.fp, *probes, l)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "frontier fpcheck: %v\n", err)
		return cli.ExitUsage
	}
	if err := printFPCheck(os.Stdout, r, ff.json); err != nil {
		fmt.Fprintf(os.Stderr, "frontier fpcheck: %v\n", err)
		return cli.ExitFailure
	}
	if r.FalseNegatives > 0 {
		fmt.Fprintf(os.Stderr, "frontier fpcheck: %d false negatives: the filter is broken\n", r.FalseNegatives)
		return cli.ExitFailure
	}
	return cli.ExitOK
}

func printFPCheck(w io.Writer, r dedup.FPCheckResult, asJSON bool) error {
	if asJSON {
		return printJSON(w, r)
	}
	s := r.Sizing
	var err error
	if r.Chain != nil {
		c := r.Chain.Config
		_, err = fmt.Fprintf(w, "filter             scalable, %s, %d sub-filters from %d (growth %g, tightening %g), %d bytes (%.2f MiB)\n",
			c.Layout, r.Subfilters, c.Initial, c.Growth, c.Tightening, r.Bytes, float64(r.Bytes)/(1<<20))
		if err == nil && r.Folds > 0 {
			_, err = fmt.Fprintf(w, "folds              %d (the chain kept folded)\n", r.Folds)
		}
	} else {
		_, err = fmt.Fprintf(w, "filter             %s, %d bits (%.2f MiB), k=%d, %.3f bits per item\n", s.Layout, s.Bits, float64(s.Bytes)/(1<<20), s.K, s.BitsPerItem)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, `inserted           %d keys user:0 .. user:%d
false negatives    %d
probes             %d keys ghost:0 .. ghost:%d
false positives    %d
measured fp        %.6f (95%% interval %.6f .. %.6f)
expected fp        %.6f (theory at capacity)
`, r.Inserted, int64(r.Inserted)-1, r.FalseNegatives, r.Probes, int64(r.Probes)-1,
		r.FalsePositives, r.FPRate, r.FPRateLow, r.FPRateHigh, r.ExpectedFP)
	return err
}
