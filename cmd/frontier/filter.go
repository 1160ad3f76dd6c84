package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/frontier/offline"
	"github.com/trawlhq/trawl/internal/cli"
)

func init() {
	cmds.Register(cli.Command{Name: "filter", Summary: "filter rebuild: replace a stopped shard's filter with one right-sized fixed filter built from the keys it holds", Run: runFilter})
}

func runFilter(args []string) int { return filterCmd(args, os.Stdout, os.Stderr) }

// filterCmd is `frontier filter rebuild --capacity N [--fp P] --data-file F
// [--json]`. Exit codes: 0 rebuilt, 1 refused or failed (the old filter is
// intact), 2 bad flags.
func filterCmd(args []string, stdout, stderr io.Writer) int {
	usage := "usage: frontier filter rebuild --capacity N [--fp P] --data-file F [--json]"
	if len(args) == 0 || args[0] != "rebuild" {
		fmt.Fprintln(stderr, usage)
		return cli.ExitUsage
	}
	fs := flag.NewFlagSet("frontier filter rebuild", flag.ContinueOnError)
	fs.SetOutput(stderr)
	capacity := fs.Uint64("capacity", 0, "keys the new fixed filter is sized for (at least the keys the shard holds; leave room for the crawl to come)")
	fp := fs.Float64("fp", 0.01, "the new filter's false-positive rate at capacity")
	path := fs.String("data-file", "", "the stopped shard's bbolt state file")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fmt.Fprintln(stderr, "Offline, on a stopped shard: builds one fixed filter from the URLs the shard holds (queued, leased, done, audit sample),\nchecks every one tests seen, and swaps it in atomically. Keys that were only ever skipped are not restored.")
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args[1:]); !ok {
		return code
	}
	if *path == "" || *capacity == 0 {
		fmt.Fprintln(stderr, "frontier filter rebuild: --data-file and --capacity are required")
		return cli.ExitUsage
	}
	rep, err := offline.RebuildFilter(*path, *capacity, *fp, nil)
	if err != nil {
		fmt.Fprintf(stderr, "frontier filter rebuild: %v\n", err)
		if errors.Is(err, frontier.ErrInUse) {
			fmt.Fprintln(stderr, "the old filter is unchanged")
		}
		return cli.ExitFailure
	}
	if *asJSON {
		_ = printJSON(stdout, rep)
		return cli.ExitOK
	}
	fmt.Fprintf(stdout, "rebuilt %s in %s\nbefore  %s filter, %d items, %d bytes\nheld    %d keys (queued, leased, done, audit sample), %d distinct\nafter   fixed filter for %d keys at fp %g: %d bytes, k=%d; every held key tests seen\n",
		rep.Path, rep.Duration, rep.Before, rep.OldItems, rep.OldBytes, rep.Keys, rep.Items,
		rep.Sizing.Capacity, rep.Sizing.FP, rep.Sizing.Bits/8, rep.Sizing.K)
	fmt.Fprintf(stdout, "run the shard with frontier.filter.capacity %d and fp %g (mode fixed), or keep mode scalable: an existing file keeps its filter\n", rep.Sizing.Capacity, rep.Sizing.FP)
	return cli.ExitOK
}
