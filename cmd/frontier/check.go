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
	cmds.Register(cli.Command{Name: "check", Summary: "check a shard's state file (bbolt consistency and the checks Open runs)", Run: runCheck})
}

func runCheck(args []string) int { return checkCmd(args, os.Stdout, os.Stderr) }

// checkCmd is `frontier check --data-file F`: it reads F without writing
// to it and prints what offline.Check found. Exit codes: 0 the file
// passed every check, 1 it is corrupt or inconsistent, 2 bad flags.
func checkCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("frontier check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration file (its scope and politeness keys; the file's schema names the shard and filter)")
	fs.String("data-file", "", "the shard's bbolt state file to check (sets frontier.data_file)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: frontier check --data-file F [--json]")
		fmt.Fprintln(stderr, "Checks a state file without writing to it. Exit 0: ok; 1: corrupt or inconsistent.")
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	cfg, err := cli.LoadConfig(fs, *cfgPath, map[string]string{"data-file": "frontier.data_file"})
	if err == nil && cfg.Frontier.DataFile == "" {
		err = fmt.Errorf("frontier check: --data-file is required")
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return cli.ExitUsage
	}
	rep, err := offline.Check(cfg.Frontier.DataFile, cfg)
	if *asJSON {
		out := struct {
			*offline.CheckReport
			Error string `json:",omitempty"`
		}{CheckReport: rep}
		if err != nil {
			out.Error = err.Error()
		}
		_ = printJSON(stdout, out)
	} else {
		printCheck(stdout, rep, err)
	}
	if err != nil || !rep.OK() {
		return cli.ExitFailure
	}
	return cli.ExitOK
}

func printCheck(w io.Writer, r *offline.CheckReport, err error) {
	fmt.Fprintf(w, "file       %s\n", r.Path)
	if r.File.PageSize > 0 {
		fmt.Fprintf(w, "bbolt      %d bytes, %d pages of %d bytes in use, %d reachable, txid %d\n",
			r.File.Size, r.File.Pages, r.File.PageSize, r.File.Reached, r.File.TxID)
		if r.File.Freelist {
			fmt.Fprintf(w, "freelist   %d free pages, written when the file was last closed\n", r.File.Free)
		} else {
			fmt.Fprintln(w, "freelist   none: not closed since its last write (a stop by kill -9 or a crash); the next Open rebuilds it in memory")
		}
	}
	if err != nil && !errors.Is(err, frontier.ErrCorrupt) {
		fmt.Fprintf(w, "result     ERROR: %v\n", err)
		return
	}
	if err != nil {
		fmt.Fprintf(w, "result     CORRUPT: %v\n", err)
		fmt.Fprintln(w, "           nothing was changed; restore the file from a backup, or start the shard over")
		return
	}
	fmt.Fprintf(w, "schema     shard %d of %d, filter %s capacity %d fp %g, audit fraction %g, crawl %s\n",
		r.Shard, r.Shards, r.Layout, r.Capacity, r.FP, r.Audit, r.CrawlID)
	var admitted uint64
	if s := r.Status; s != nil {
		admitted = s.Admitted
		fmt.Fprintf(w, "contents   %d admitted: %d queued, %d leased, %d done; %d hosts\n", s.Admitted, s.Queued, s.Leased, s.Done, s.Hosts)
	}
	printBuckets(w, r.Buckets, admitted)
	if r.OK() {
		fmt.Fprintln(w, "result     ok: bbolt consistency check and frontier Verify passed; Open accepts the file")
		return
	}
	fmt.Fprintf(w, "result     INCONSISTENT: %d problems (Open refuses such a file; nothing was changed)\n", len(r.Problems))
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  - %s\n", p)
	}
	if r.Truncated {
		fmt.Fprintln(w, "  - (more not shown)")
	}
}

// printBuckets prints what each bucket takes in the file, and per
// admitted URL when there are any (docs/architecture.md says what each
// should cost).
func printBuckets(w io.Writer, us []offline.BucketUsage, admitted uint64) {
	if len(us) == 0 {
		return
	}
	fmt.Fprintf(w, "buckets    %-12s %12s %12s %12s %12s\n", "name", "keys", "alloc MiB", "in use MiB", "B/admitted")
	for _, u := range us {
		per := "-"
		if admitted > 0 {
			per = fmt.Sprintf("%.1f", float64(u.Alloc)/float64(admitted))
		}
		fmt.Fprintf(w, "           %-12s %12d %12.1f %12.1f %12s\n", u.Name, u.Keys, float64(u.Alloc)/(1<<20), float64(u.InUse)/(1<<20), per)
	}
}
